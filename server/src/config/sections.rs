//! The per-section settings: one type per TOML table (`[server]`,
//! `[database]`, `[redis]`, …, and the enums their keys take), with the
//! built-in defaults, which are fit for local development.
//!
//! Why a file of its own: these are the shape of the configuration file
//! and of the `APP_…` variables, read by every module that is handed one
//! section (`telemetry` its [`LogSettings`], `relay` its
//! [`WebhookSettings`]); what is checked and derived lives elsewhere. The
//! `[secrets]` table is in [`super::secrets`], beside its production
//! refusals.

use secrecy::SecretString;
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// `GET /metrics` answers only `Authorization: Bearer <token>`; without
    /// a token configured it is not served at all (404).
    pub token: Option<SecretString>,
}

// The tables of the two relays are their own types (`crate::relay`,
// `crate::mail`), so that neither depends on the configuration.
pub use crate::{mail::MailSettings, relay::WebhookSettings};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TenantSettings {
    /// A verified account may create a tenant from the web and becomes its
    /// owner. Off: tenants come from `server admin create-tenant`.
    pub self_signup: bool,
    /// How many times one code may move to another account by an approved
    /// transfer request (`engine::transfers`); 0 turns requests off.
    pub transfers_per_code: u16,
}

impl Default for TenantSettings {
    fn default() -> Self {
        Self {
            self_signup: false,
            transfers_per_code: engine::transfers::DEFAULT_PER_CODE_LIMIT,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Development,
    Production,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    pub environment: Environment,
    pub host: String,
    pub port: u16,
    /// Where cargo-leptos wrote the site (wasm, js, css, assets).
    pub site_root: String,
    /// The file naming the site's hashed bundle (`hash.txt`, written by
    /// cargo-leptos beside the binary it built). Unset: `hash.txt` beside
    /// the running binary, when there is one.
    pub asset_hashes: Option<String>,
    /// How long in-flight requests may take to finish after SIGTERM/SIGINT.
    pub shutdown_grace_secs: u64,
    /// A request still unanswered after this long is answered 503
    /// (uploads excepted; see `deadline.rs`).
    pub request_timeout_secs: u64,
    /// After SIGTERM/SIGINT, how long the server still accepts requests
    /// while `/readyz` answers 503 `draining`, so that a load balancer
    /// takes it out of rotation before the listener closes. Unset: 5 in
    /// production, 0 in development.
    pub drain_secs: Option<u64>,
    /// The address people use; its origin is accepted for state-changing
    /// requests, and `https` makes session cookies `Secure`.
    pub public_url: String,
    /// Other names the server answers for (`host` or `host:port`), besides
    /// `public_url`'s and its loopback names on its port: a request naming
    /// any other `Host` is refused (DNS rebinding; `middleware::hosts`).
    pub allowed_hosts: Vec<String>,
    /// How many reverse proxies in front of the server append the address
    /// they saw to `X-Forwarded-For`. The client IP (for throttling) is the
    /// Nth address from the right across every `X-Forwarded-For` line, in
    /// order: the ones further left are whatever the client claimed. 0
    /// ignores the header (the TCP peer is the client).
    pub trusted_proxy_hops: u8,
    /// The old spelling, still read: `true` is `trusted_proxy_hops = 1`.
    /// Refused together with `trusted_proxy_hops`.
    pub trust_forwarded_for: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSettings {
    /// A session unused this long ends.
    pub idle_timeout_mins: u64,
    /// A session ends this long after sign-in, however active.
    pub absolute_timeout_hours: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThrottleSettings {
    /// Sign-in attempts per email per window.
    pub sign_in_per_email: u32,
    /// Sign-in attempts per client IP per window.
    pub sign_in_per_ip: u32,
    /// Registrations per client IP per window.
    pub register_per_ip: u32,
    /// Registrations of one email address per window (each mails it).
    pub register_per_email: u32,
    /// Code entry attempts per account per window.
    pub code_per_account: u32,
    /// Code entry attempts per client IP per window.
    pub code_per_ip: u32,
    /// Wrong codes per share per window (all learners together) before the
    /// operator hears of it (`admitone_signals_total`): a signal, never a
    /// refusal (a course-wide refusal would let strangers lock a course).
    pub code_per_share: u32,
    /// "Forgot password" requests per email address per window.
    pub reset_per_email: u32,
    /// Requests of forms that send mail or use a mailed link
    /// (registration and its link, forgot password, reset, verification,
    /// change of address, invitations) per client IP per window.
    pub mail_per_ip: u32,
    /// Mail one account asks for (verification again, change of address,
    /// invitations) and tenant signups, per account per window.
    pub mail_per_account: u32,
    pub window_secs: u64,
    /// Calls of `/api/v1` per API token per minute (its own window).
    pub api_token_per_minute: u32,
    /// Requests of resource bytes per account per minute (its own window):
    /// a video player makes a few a second while seeking; a scraper more.
    pub content_per_account_per_minute: u32,
    /// Imports of codes per tenant per hour (its own window): an import
    /// says which of its codes exist anywhere on the platform, so this
    /// bounds how fast an admin could probe for other tenants' codes.
    pub imports_per_tenant_per_hour: u32,
    /// Reads of tenants' logos per client IP per minute (its own window).
    /// A browser keeps a logo for good and revalidates it without the
    /// database, so only a client fetching logos over and over meets it.
    pub logo_per_ip_per_minute: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SettlementSettings {
    /// Bound on one settlement transaction.
    pub transaction_timeout_ms: u64,
    /// Redis reservation TTL; must be below the transaction timeout.
    pub reservation_ttl_ms: u64,
    /// How long one counted access lasts (Range requests and reloads of the
    /// resource within it are not counted again).
    pub grant_ttl_secs: u64,
    /// How long an instance may serve bytes on a grant it checked without
    /// checking again: the bound on how fast a revoke, an unbind, a pause
    /// or "sign out everywhere" stops a player that is already streaming
    /// (0: check on every request).
    pub grant_recheck_secs: u64,
    /// How often `serve` checks every invariant (0: never; `server
    /// reconcile` runs it by hand).
    pub reconcile_interval_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    Local,
    S3,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// `local` (a directory every instance shares) or `s3`.
    pub backend: StorageBackend,
    /// Directory of uploaded resources (`local`).
    pub root: String,
    pub max_upload_bytes: u64,
    /// Bytes of live resources one tenant may store, unless its row says
    /// otherwise (`tenants.storage_quota_bytes`).
    pub tenant_quota_bytes: u64,
    /// S3-compatible bucket settings (`s3`).
    pub s3_bucket: String,
    /// Custom endpoint (MinIO, Ceph, R2, …); empty for AWS.
    pub s3_endpoint: String,
    pub s3_region: String,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: Option<SecretString>,
    /// Allow a plain-http endpoint (local MinIO).
    pub s3_allow_http: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    pub url: SecretString,
    pub max_connections: u32,
    pub acquire_timeout_ms: u64,
    pub statement_timeout_ms: u64,
    pub lock_timeout_ms: u64,
    pub idle_in_transaction_timeout_ms: u64,
    /// The other nodes of a highly available PostgreSQL, `host:port`
    /// comma-separated (same user, password and database as `url`): the
    /// pool then follows the primary. Empty: one PostgreSQL.
    pub failover_hosts: String,
    /// How often the pool asks its node whether it is still the primary.
    pub primary_probe_interval_ms: u64,
    /// With `failover_hosts`: run stale-tolerant reads (dashboard, audit
    /// log, learner and record lists, CSV exports) on a standby
    /// (`engine::db::reads`).
    pub read_from_standby: bool,
    /// How long such a read waits for the standby to replay the primary's
    /// WAL before running on the primary instead.
    pub standby_wait_ms: u64,
    /// Connections of the standby's pool, per instance.
    pub standby_max_connections: u32,
}

/// What settlement does when Redis cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedisFailurePolicy {
    /// Refuse first accesses with 503 and a retry hint.
    FailClosed,
    /// Settle straight in PostgreSQL (still correct, less shielded).
    DbOnly,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSettings {
    /// One URL, or several comma-separated cluster seed nodes.
    pub url: SecretString,
    pub cluster: bool,
    pub key_prefix: String,
    pub response_timeout_ms: u64,
    pub failure_policy: RedisFailurePolicy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    /// A `tracing_subscriber::EnvFilter` directive; `RUST_LOG` overrides it.
    pub filter: String,
    /// Where to export traces over OTLP/HTTP (`http://collector:4318`);
    /// empty: no export. Needs a build with the `otlp` feature.
    pub otlp_endpoint: String,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            environment: Environment::Development,
            host: "127.0.0.1".into(),
            port: 3000,
            site_root: "target/site".into(),
            asset_hashes: None,
            shutdown_grace_secs: 20,
            request_timeout_secs: 60,
            drain_secs: None,
            public_url: "http://127.0.0.1:3000".into(),
            allowed_hosts: Vec::new(),
            trusted_proxy_hops: 0,
            trust_forwarded_for: None,
        }
    }
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: SecretString::from("postgres://postgres@127.0.0.1:5432/admitone"),
            max_connections: 20,
            acquire_timeout_ms: 3_000,
            statement_timeout_ms: 5_000,
            lock_timeout_ms: 2_000,
            idle_in_transaction_timeout_ms: 10_000,
            failover_hosts: String::new(),
            primary_probe_interval_ms: 500,
            read_from_standby: false,
            standby_wait_ms: 250,
            standby_max_connections: 5,
        }
    }
}

impl Default for RedisSettings {
    fn default() -> Self {
        Self {
            url: SecretString::from("redis://127.0.0.1:6379"),
            cluster: false,
            key_prefix: "admitone".into(),
            response_timeout_ms: 500,
            failure_policy: RedisFailurePolicy::FailClosed,
        }
    }
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self {
            idle_timeout_mins: 7 * 24 * 60,
            absolute_timeout_hours: 30 * 24,
        }
    }
}

impl Default for ThrottleSettings {
    fn default() -> Self {
        Self {
            sign_in_per_email: 10,
            sign_in_per_ip: 50,
            register_per_ip: 20,
            code_per_account: 20,
            code_per_ip: 100,
            code_per_share: 5_000,
            reset_per_email: 5,
            register_per_email: 5,
            mail_per_ip: 50,
            mail_per_account: 10,
            window_secs: 15 * 60,
            api_token_per_minute: 600,
            content_per_account_per_minute: 3_000,
            imports_per_tenant_per_hour: 30,
            logo_per_ip_per_minute: 600,
        }
    }
}

impl Default for SettlementSettings {
    fn default() -> Self {
        Self {
            transaction_timeout_ms: 5_000,
            reservation_ttl_ms: 4_000,
            grant_ttl_secs: 6 * 3600,
            grant_recheck_secs: 5,
            reconcile_interval_secs: 600,
        }
    }
}

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            backend: StorageBackend::Local,
            root: ".data/storage".into(),
            max_upload_bytes: 2 * 1024 * 1024 * 1024,
            tenant_quota_bytes: 50 * 1024 * 1024 * 1024,
            s3_bucket: String::new(),
            s3_endpoint: String::new(),
            s3_region: "us-east-1".into(),
            s3_access_key_id: String::new(),
            s3_secret_access_key: None,
            s3_allow_http: false,
        }
    }
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Pretty,
            filter: "info,server=info,engine=info,app=info,sqlx=warn".into(),
            otlp_endpoint: String::new(),
        }
    }
}
