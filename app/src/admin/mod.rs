//! The admin console's server functions, all under `/api/admin/`.
//!
//! Every function here (but `my_tenants`, which lists the caller's own)
//! takes the tenant it acts on and starts by checking the caller is its
//! admin (`support::admin_of_tenant`, `admin_share` or `admin_code`, over
//! `service::session::admin_of`): learners and admins of other tenants get
//! 403 before anything is read or written. The integration test
//! `authorisation::every_admin_server_function_refuses_outsiders` enumerates
//! the registered `/api/admin/` endpoints, so a new function cannot be
//! added without being covered.
//!
//! One module per console page (`pages/console/`), each with the view
//! structs its functions return:
//!
//! | module | server functions |
//! | --- | --- |
//! | [`dashboard`] | the tenant list, a tenant's overview and dashboard |
//! | [`learners`] | a share's learners and one learner's records |
//! | [`share`] | create a share, its editor and settings, its resources |
//! | [`issued`] | issue a batch, its progress, the codes shown once |
//! | [`codes`] | the code table; revoke, replace, unbind; revoke a batch's unused codes |
//! | [`audit`] | the audit log |
//! | [`tokens`] | API tokens |
//! | [`webhooks`] | webhook endpoints and deliveries |
//!
//! `support` (ssr only) holds the checks they start with and the shared
//! formatting.

pub mod audit;
pub mod codes;
pub mod dashboard;
pub mod issued;
pub mod learners;
pub mod share;
#[cfg(feature = "ssr")]
mod support;
pub mod tokens;
pub mod webhooks;
