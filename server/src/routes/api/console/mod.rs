//! Admin endpoints. Each resolves the tenant that owns its target first and
//! authorises against it (`admin_of`), so a path naming another tenant's
//! share or code is refused before anything is read or written.
//!
//! This module holds what they share: the [`Caller`] (session or API
//! token) and its `admin_of`/`refuse`, `member_of_share`, `parse_id`. The
//! handlers live by concern: `shares` (list, create, read, set status),
//! `resources` (list, upload, rename and move, remove; [`upload`] is also
//! the console's form upload), `batches` (list, read, the one-time codes
//! CSV, revoke unused), `codes` (issue, list, read, find by full code,
//! revoke, unbind, replace, expiry dates), `imports` (codes another system
//! sold, and an import's report), `leaks` (revoke and replace a
//! leaked code), `orders` (a shop's order turned into codes once, and read back), `refunds` (an order refunded by its share's policy, and that policy), `mailings` (a mailable batch's codes mailed to a list, and its recipients), `transfers` (learners' transfer requests: list, approve, refuse), `access` (extend learners' access periods), `branding` (what learners see of the tenant: name, accent, support address, logo), `activity` (learners and access records, as
//! pages and CSV, the audit log), `integrations` (API tokens, webhooks) and
//! `shops` (the shops whose webhooks place and refund orders, their
//! products and deliveries).

pub(super) mod access;
pub(super) mod activity;
pub(super) mod batches;
pub(super) mod branding;
pub(super) mod codes;
pub(super) mod imports;
pub(super) mod integrations;
pub(super) mod leaks;
pub(super) mod mailings;
pub(super) mod orders;
pub(super) mod refunds;
pub(super) mod resources;
pub(super) mod shares;
pub(super) mod shops;
pub(super) mod transfers;

// The handlers the router (`routes/api/mod.rs`) names, re-exported so
// `console::create_share` etc. read short. The OpenAPI document
// (`routes/api/schema/`) names them by their own module, where utoipa's
// generated `__path_*` items live.
pub use codes::{issue_codes, list_codes, revoke_code, unbind_code};
pub use resources::upload_resource;
pub use shares::{create_share, set_status};

// What every handler here starts with: who calls, and their check.
use crate::caller::{Caller, member_of_code, member_of_share, member_of_tenant, parse_id};
