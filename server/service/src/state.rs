//! The handles every use case needs, built once at startup by the server
//! and shared (cheaply cloned) by both adapters: nothing lives in global
//! statics, so tests can run many servers in one process.

use std::{sync::Arc, time::Duration};

use engine::{
    accounts::links::LinkKey,
    codes::Keyring,
    coordination::Redis,
    db::PgPool,
    settlement::Settler,
    storage::Storage,
    throttle::{FixedWindow, Limit},
};

#[derive(Clone, Debug)]
pub struct Services {
    /// The primary: everything that writes or decides.
    pub pool: PgPool,
    /// Stale-tolerant reads (`engine::read_models`): on a standby when
    /// `database.read_from_standby` is set, else the primary.
    pub reads: engine::db::Reads,
    pub redis: Redis,
    pub throttle: FixedWindow,
    pub auth: AuthPolicy,
    pub keyring: Arc<Keyring>,
    /// Derives the single-use links mails carry (`engine::accounts::links`).
    pub links: Arc<LinkKey>,
    pub settler: Settler,
    /// Live grants this instance checked lately (`crate::content`).
    pub grants: crate::content::GrantCache,
    /// Shares looked up by link name lately (`crate::recent_shares`).
    pub recent_shares: crate::recent_shares::RecentShares,
    pub storage: Storage,
    /// Largest accepted upload, in bytes.
    pub max_upload_bytes: u64,
    /// A tenant's storage quota in bytes, unless its row sets its own.
    pub tenant_quota_bytes: i64,
    /// Where learners reach this server (`https://courses.example.com`):
    /// the base of links printed on code cards.
    pub public_origin: Arc<str>,
}

/// Sign-in and code-entry policy, from the server's configuration.
#[derive(Clone, Debug)]
pub struct AuthPolicy {
    pub sign_in_per_email: Limit,
    pub sign_in_per_ip: Limit,
    pub register_per_ip: Limit,
    /// A session ends this long after sign-in, however active.
    pub absolute_session: Duration,
    /// How many trusted proxies append to `X-Forwarded-For` (0: ignore it);
    /// see [`crate::session::forwarded_client`].
    pub trusted_proxy_hops: u8,
    /// Code entry attempts per account, per client IP and per share.
    pub code_per_account: Limit,
    pub code_per_ip: Limit,
    pub code_per_share: Limit,
    /// "Forgot password" per address.
    pub reset_per_email: Limit,
    /// Registrations of one address (each mails it).
    pub register_per_email: Limit,
    /// Forms that send mail or use a mailed link, per client IP.
    pub mail_per_ip: Limit,
    /// Mail an account asks for (verification again, change of address,
    /// invitations) and tenant signups, per account.
    pub mail_per_account: Limit,
    /// Calls of `/api/v1` per API token.
    pub api_token: Limit,
    /// Requests of resource bytes per account.
    pub content_per_account: Limit,
    /// Imports of codes per tenant ([`crate::console::import_codes`]).
    pub imports_per_tenant: Limit,
    /// Reads of a logo from the database per client IP
    /// ([`crate::branding::logo`]).
    pub logo_per_ip: Limit,
    /// Whether a verified account may create a tenant from the web
    /// (`tenants.self_signup`).
    pub tenant_self_signup: bool,
    /// How many times one code may move to another account
    /// (`tenants.transfers_per_code`; 0: no transfers).
    pub transfers_per_code: u16,
}
