//! The console's server functions (the creator's side), all under
//! `/api/admin/`; their pages are `pages/console/`.
//!
//! Every function here (but `my_tenants`, which lists the caller's own)
//! takes the tenant it acts on and starts by checking the caller is a
//! member whose role allows the one `Permission` the function needs
//! (`support::member_of_tenant`, `member_share` or `member_code`, over
//! `service::session::member_of`; the roles' table is `model::Role::allows`):
//! learners, members of other tenants and members whose role falls short
//! get 403 before anything is read or written. The integration tests in
//! `authorisation` enumerate the registered `/api/admin/` endpoints and
//! call each as every role, so a new function cannot be added without
//! being covered.
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
//! | [`mailings`] | a mailable batch's codes sent by mail: check and send a list, its recipients, resend, revoke and resend |
//! | [`sales`] | a share's refund policy and its orders, their codes and refunds |
//! | [`codes`] | the code table; revoke, replace, unbind; revoke a batch's unused codes |
//! | [`audit`] | the audit log |
//! | [`tokens`] | API tokens |
//! | [`webhooks`] | webhook endpoints and deliveries |
//! | [`shops`] | connected shops: webhook address, products, latest deliveries and what came of each |
//! | [`team`] | the team: members, roles, invitations, leaving; the tenant's settings |
//! | [`transfers`] | learners' transfer requests: list, approve, refuse |
//!
//! `support` (ssr only) holds the checks they start with and the shared
//! formatting.

pub mod audit;
pub mod codes;
pub mod dashboard;
pub mod imports;
pub mod issued;
pub mod learners;
pub mod mailings;
pub mod sales;
pub mod share;
pub mod shops;
#[cfg(feature = "ssr")]
mod support;
pub mod team;
pub mod tokens;
pub mod transfers;
pub mod webhooks;
