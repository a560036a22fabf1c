//! Typed configuration.
//!
//! Sources, later ones winning: built-in defaults (good for local
//! development), an optional TOML file (`--config FILE` or `APP_CONFIG`),
//! then `APP_…` environment variables with `__` between section and key
//! (`APP_DATABASE__MAX_CONNECTIONS=50`). `DATABASE_URL` and `REDIS_URL` are
//! honoured too, below their `APP_` spellings. Secrets are `secrecy` types:
//! they never print, and in production the server refuses to start while
//! any of them is missing or still the development default.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::Context as _;
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;

/// The development-only secrets used when none is configured. Public by
/// design (they are in the source), so production refuses them.
const DEV_SESSION_KEY: &str = "dev-only-session-key-change-me-dev-only-session-key-change-me-0000";
const DEV_CODE_KEYS: &str = "1:dev-only-code-hmac-key-change-me";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub secrets: SecretSettings,
    pub sessions: SessionSettings,
    pub throttle: ThrottleSettings,
    pub settlement: SettlementSettings,
    pub storage: StorageSettings,
    pub log: LogSettings,
    pub metrics: MetricsSettings,
    pub webhooks: WebhookSettings,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// `GET /metrics` answers only `Authorization: Bearer <token>`; without
    /// a token configured it is not served at all (404).
    pub token: Option<SecretString>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// Run the outbox relay in `serve` (every instance may: rows are
    /// claimed with `FOR UPDATE SKIP LOCKED`).
    pub relay: bool,
    /// Pause between relay rounds when there was nothing to do.
    pub poll_interval_ms: u64,
    /// How long one delivery may take before it counts as failed.
    pub timeout_ms: u64,
    /// Attempts before a delivery is dead-lettered.
    pub max_attempts: i32,
    /// First retry delay; doubled per attempt, with jitter, up to
    /// `backoff_max_secs`.
    pub backoff_base_ms: u64,
    pub backoff_max_secs: u64,
    /// Deliver to loopback, private and link-local addresses too. Off in
    /// production: a tenant's endpoint must not reach the internal network.
    pub allow_private_targets: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            relay: true,
            poll_interval_ms: 1_000,
            timeout_ms: 5_000,
            max_attempts: 8,
            backoff_base_ms: 2_000,
            backoff_max_secs: 3_600,
            allow_private_targets: false,
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
    /// How long in-flight requests may take to finish after SIGTERM/SIGINT.
    pub shutdown_grace_secs: u64,
    /// The address people use; its origin is accepted for state-changing
    /// requests, and `https` makes session cookies `Secure`.
    pub public_url: String,
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
    /// Code entry attempts per account per window.
    pub code_per_account: u32,
    /// Code entry attempts per client IP per window.
    pub code_per_ip: u32,
    /// Code entry attempts per share per window (all learners together).
    pub code_per_share: u32,
    pub window_secs: u64,
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

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretSettings {
    /// Signs session cookies; at least 64 characters.
    pub session_key: Option<SecretString>,
    /// Code HMAC keys as `version:secret` pairs, comma-separated
    /// (`2:newsecret,1:oldsecret`). Look-ups try every version; new codes
    /// use `code_key_current`.
    pub code_keys: Option<SecretString>,
    pub code_key_current: u16,
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
            shutdown_grace_secs: 20,
            public_url: "http://127.0.0.1:3000".into(),
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

impl Default for SecretSettings {
    fn default() -> Self {
        Self {
            session_key: None,
            code_keys: None,
            code_key_current: 1,
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
            window_secs: 15 * 60,
        }
    }
}

impl Default for SettlementSettings {
    fn default() -> Self {
        Self {
            transaction_timeout_ms: 5_000,
            reservation_ttl_ms: 4_000,
            grant_ttl_secs: 6 * 3600,
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

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("refusing to start in production: {0}")]
    InsecureProduction(String),
    #[error("invalid setting {key}: {message}")]
    Invalid { key: &'static str, message: String },
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl Settings {
    /// Loads defaults, then `file` (if given), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("APP_CONFIG").map(Into::into));
        let mut builder = config::Config::builder();
        if let Some(file) = &file {
            builder = builder.add_source(config::File::from(file.as_path()).required(true));
        }
        let mut env = config::Environment::with_prefix("APP")
            .prefix_separator("_")
            .separator("__")
            .try_parsing(true);
        // APP_CONFIG names the file; it is not a setting.
        env = env.ignore_empty(true);
        let mut vars: std::collections::HashMap<String, String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("APP_") && k != "APP_CONFIG")
            .collect();
        for (plain, ours) in [
            ("DATABASE_URL", "APP_DATABASE__URL"),
            ("REDIS_URL", "APP_REDIS__URL"),
        ] {
            if let (false, Ok(url)) = (vars.contains_key(ours), std::env::var(plain)) {
                vars.insert(ours.into(), url);
            }
        }
        env = env.source(Some(vars));
        let settings: Settings = builder
            .add_source(env)
            .build()
            .context("reading the configuration")?
            .try_deserialize()
            .context("parsing the configuration")?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks values and, in production, refuses missing or default secrets,
    /// naming each.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.redis.response_timeout_ms == 0 {
            return Err(ConfigError::Invalid {
                key: "redis.response_timeout_ms",
                message: "must be above 0".into(),
            });
        }
        if self.database.max_connections == 0 {
            return Err(ConfigError::Invalid {
                key: "database.max_connections",
                message: "must be above 0".into(),
            });
        }
        if self.sessions.idle_timeout_mins == 0 || self.sessions.absolute_timeout_hours == 0 {
            return Err(ConfigError::Invalid {
                key: "sessions",
                message: "timeouts must be above 0".into(),
            });
        }
        let t = &self.throttle;
        if t.window_secs == 0
            || t.sign_in_per_email == 0
            || t.sign_in_per_ip == 0
            || t.register_per_ip == 0
        {
            return Err(ConfigError::Invalid {
                key: "throttle",
                message: "limits and window must be above 0".into(),
            });
        }
        let st = &self.settlement;
        if st.reservation_ttl_ms == 0
            || st.reservation_ttl_ms >= st.transaction_timeout_ms
            || st.grant_ttl_secs == 0
        {
            return Err(ConfigError::Invalid {
                key: "settlement",
                message: "reservation_ttl_ms must be above 0 and below transaction_timeout_ms; grant_ttl_secs above 0".into(),
            });
        }
        if t.code_per_account == 0 || t.code_per_ip == 0 || t.code_per_share == 0 {
            return Err(ConfigError::Invalid {
                key: "throttle",
                message: "code limits must be above 0".into(),
            });
        }
        self.storage_config()?;
        if self.server.trust_forwarded_for.is_some() && self.server.trusted_proxy_hops != 0 {
            return Err(ConfigError::Invalid {
                key: "server.trust_forwarded_for",
                message: "replaced by server.trusted_proxy_hops: set only that one".into(),
            });
        }
        if !(self.server.public_url.starts_with("http://")
            || self.server.public_url.starts_with("https://"))
        {
            return Err(ConfigError::Invalid {
                key: "server.public_url",
                message: "must start with http:// or https://".into(),
            });
        }
        if let Some(key) = &self.secrets.session_key
            && key.expose_secret().len() < 64
        {
            return Err(ConfigError::Invalid {
                key: "secrets.session_key",
                message: "needs at least 64 characters".into(),
            });
        }
        let code_keys = self.code_keys()?;
        if !code_keys
            .iter()
            .any(|(v, _)| *v == self.secrets.code_key_current)
        {
            return Err(ConfigError::Invalid {
                key: "secrets.code_key_current",
                message: format!(
                    "version {} is not among secrets.code_keys",
                    self.secrets.code_key_current
                ),
            });
        }
        if self.server.environment == Environment::Production {
            let mut problems = Vec::new();
            match &self.secrets.session_key {
                None => problems.push("secrets.session_key (APP_SECRETS__SESSION_KEY) is missing"),
                Some(key) if key.expose_secret() == DEV_SESSION_KEY => problems.push(
                    "secrets.session_key (APP_SECRETS__SESSION_KEY) is the development default",
                ),
                Some(_) => {}
            }
            match &self.secrets.code_keys {
                None => problems.push("secrets.code_keys (APP_SECRETS__CODE_KEYS) is missing"),
                Some(keys) if keys.expose_secret().contains(dev_code_secret()) => problems.push(
                    "secrets.code_keys (APP_SECRETS__CODE_KEYS) contains the development default",
                ),
                Some(_) => {}
            }
            if !problems.is_empty() {
                return Err(ConfigError::InsecureProduction(problems.join("; ")));
            }
        }
        Ok(())
    }

    /// The session signing key (the development default when unset; never
    /// in production, see [`Settings::validate`]).
    pub fn session_key(&self) -> SecretString {
        self.secrets
            .session_key
            .clone()
            .unwrap_or_else(|| SecretString::from(DEV_SESSION_KEY))
    }

    /// The code HMAC keys by version.
    pub fn code_keys(&self) -> Result<Vec<(u16, SecretString)>, ConfigError> {
        let raw = self
            .secrets
            .code_keys
            .clone()
            .unwrap_or_else(|| SecretString::from(DEV_CODE_KEYS));
        let invalid = |message: &str| ConfigError::Invalid {
            key: "secrets.code_keys",
            message: message.into(),
        };
        let mut keys = Vec::new();
        for pair in raw
            .expose_secret()
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (version, secret) = pair
                .split_once(':')
                .ok_or_else(|| invalid("each entry is version:secret"))?;
            let version: u16 = version
                .trim()
                .parse()
                .map_err(|_| invalid("a version is a number from 0 to 65535"))?;
            if secret.len() < 16 {
                return Err(invalid("each secret needs at least 16 characters"));
            }
            if keys.iter().any(|(v, _)| *v == version) {
                return Err(invalid("a version appears twice"));
            }
            keys.push((version, SecretString::from(secret.to_owned())));
        }
        if keys.is_empty() {
            return Err(invalid("at least one key is needed"));
        }
        Ok(keys)
    }

    /// The number of trusted proxies, from `server.trusted_proxy_hops` or
    /// the old `server.trust_forwarded_for` (`true`: one).
    pub fn trusted_proxy_hops(&self) -> u8 {
        match self.server.trust_forwarded_for {
            Some(true) if self.server.trusted_proxy_hops == 0 => 1,
            _ => self.server.trusted_proxy_hops,
        }
    }

    pub fn is_production(&self) -> bool {
        self.server.environment == Environment::Production
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        format!("{}:{}", self.server.host, self.server.port)
            .parse()
            .map_err(|_| ConfigError::Invalid {
                key: "server.host",
                message: format!("{:?} is not an IP address", self.server.host),
            })
    }

    /// The origin (`scheme://host[:port]`) of `server.public_url`.
    pub fn public_origin(&self) -> String {
        let url = self.server.public_url.trim_end_matches('/');
        match url.split_once("://") {
            Some((scheme, rest)) => {
                format!("{scheme}://{}", rest.split('/').next().unwrap_or(rest))
            }
            None => url.to_owned(),
        }
    }

    pub fn auth_policy(&self) -> app::state::AuthPolicy {
        use engine::throttle::Limit;
        let t = &self.throttle;
        app::state::AuthPolicy {
            sign_in_per_email: Limit::new(t.sign_in_per_email, t.window_secs),
            sign_in_per_ip: Limit::new(t.sign_in_per_ip, t.window_secs),
            register_per_ip: Limit::new(t.register_per_ip, t.window_secs),
            absolute_session: Duration::from_secs(self.sessions.absolute_timeout_hours * 3600),
            trusted_proxy_hops: self.trusted_proxy_hops(),
            code_per_account: Limit::new(t.code_per_account, t.window_secs),
            code_per_ip: Limit::new(t.code_per_ip, t.window_secs),
            code_per_share: Limit::new(t.code_per_share, t.window_secs),
        }
    }

    pub fn settlement_options(&self) -> engine::settlement::options::SettlementOptions {
        use engine::settlement::options::{FailurePolicy, SettlementOptions};
        SettlementOptions {
            failure_policy: match self.redis.failure_policy {
                RedisFailurePolicy::FailClosed => FailurePolicy::FailClosed,
                RedisFailurePolicy::DbOnly => FailurePolicy::DbOnly,
            },
            reservation_ttl: Duration::from_millis(self.settlement.reservation_ttl_ms),
            transaction_timeout: Duration::from_millis(self.settlement.transaction_timeout_ms),
            grant_ttl: Duration::from_secs(self.settlement.grant_ttl_secs),
            fault: None,
            probe: None,
        }
    }

    pub fn storage_config(&self) -> Result<engine::storage::StorageConfig, ConfigError> {
        use engine::storage::StorageConfig;
        let st = &self.storage;
        Ok(match st.backend {
            StorageBackend::Local => StorageConfig::Local {
                root: st.root.clone().into(),
            },
            StorageBackend::S3 => {
                let missing = |key: &'static str| ConfigError::Invalid {
                    key,
                    message: "is required with storage.backend = \"s3\"".into(),
                };
                if st.s3_bucket.is_empty() {
                    return Err(missing("storage.s3_bucket"));
                }
                if st.s3_access_key_id.is_empty() {
                    return Err(missing("storage.s3_access_key_id"));
                }
                StorageConfig::S3 {
                    bucket: st.s3_bucket.clone(),
                    endpoint: (!st.s3_endpoint.is_empty()).then(|| st.s3_endpoint.clone()),
                    region: st.s3_region.clone(),
                    access_key_id: st.s3_access_key_id.clone(),
                    secret_access_key: st
                        .s3_secret_access_key
                        .clone()
                        .ok_or_else(|| missing("storage.s3_secret_access_key"))?,
                    allow_http: st.s3_allow_http,
                }
            }
        })
    }

    pub fn keyring(&self) -> Result<engine::codes::Keyring, ConfigError> {
        engine::codes::Keyring::new(self.secrets.code_key_current, self.code_keys()?)
            .map_err(ConfigError::Unexpected)
    }

    pub fn db_options(&self) -> engine::db::DbOptions {
        let d = &self.database;
        engine::db::DbOptions {
            max_connections: d.max_connections,
            acquire_timeout: Duration::from_millis(d.acquire_timeout_ms),
            statement_timeout: Duration::from_millis(d.statement_timeout_ms),
            lock_timeout: Duration::from_millis(d.lock_timeout_ms),
            idle_in_transaction_timeout: Duration::from_millis(d.idle_in_transaction_timeout_ms),
        }
    }

    pub fn redis_options(&self) -> engine::coordination::RedisOptions {
        let r = &self.redis;
        engine::coordination::RedisOptions {
            urls: r
                .url
                .expose_secret()
                .split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned)
                .collect(),
            cluster: r.cluster,
            key_prefix: r.key_prefix.clone(),
            response_timeout: Duration::from_millis(r.response_timeout_ms),
        }
    }
}

fn dev_code_secret() -> &'static str {
    DEV_CODE_KEYS
        .split_once(':')
        .map_or(DEV_CODE_KEYS, |(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn production() -> Settings {
        let mut s = Settings::default();
        s.server.environment = Environment::Production;
        s
    }

    #[test]
    fn development_defaults_are_valid() {
        Settings::default().validate().expect("defaults validate");
    }

    #[test]
    fn production_names_every_missing_secret() {
        let error = production()
            .validate()
            .expect_err("must refuse")
            .to_string();
        assert!(error.contains("secrets.session_key"), "{error}");
        assert!(error.contains("secrets.code_keys"), "{error}");
        assert!(error.contains("missing"), "{error}");
    }

    #[test]
    fn production_refuses_development_defaults() {
        let mut s = production();
        s.secrets.session_key = Some(SecretString::from(DEV_SESSION_KEY));
        s.secrets.code_keys = Some(SecretString::from(DEV_CODE_KEYS));
        let error = s.validate().expect_err("must refuse").to_string();
        assert!(error.contains("session_key"), "{error}");
        assert!(error.contains("code_keys"), "{error}");
        assert!(error.contains("development default"), "{error}");
    }

    #[test]
    fn production_accepts_real_secrets() {
        let mut s = production();
        s.secrets.session_key = Some(SecretString::from("k".repeat(64)));
        s.secrets.code_keys = Some(SecretString::from(
            "2:a-real-secret-of-length,1:an-older-real-secret",
        ));
        s.secrets.code_key_current = 2;
        s.validate().expect("valid");
        assert_eq!(s.code_keys().expect("parsed").len(), 2);
    }

    #[test]
    fn malformed_code_keys_are_refused() {
        for raw in [
            "",
            "nocolon",
            "x:aaaaaaaaaaaaaaaaaaaa",
            "1:short",
            "1:aaaaaaaaaaaaaaaaaaaa,1:bbbbbbbbbbbbbbbbbbbb",
        ] {
            let mut s = Settings::default();
            s.secrets.code_keys = Some(SecretString::from(raw));
            assert!(s.validate().is_err(), "{raw:?} should be refused");
        }
    }

    #[test]
    fn public_origin_drops_the_path() {
        let mut s = Settings::default();
        s.server.public_url = "https://courses.example.com/app/".into();
        assert_eq!(s.public_origin(), "https://courses.example.com");
        s.server.public_url = "ftp://x".into();
        assert!(s.validate().is_err());
    }

    #[test]
    fn a_toml_file_overrides_the_defaults_and_typos_are_refused() {
        let dir = std::env::temp_dir().join(format!("admitone-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            "[server]\nport = 4100\n[redis]\nkey_prefix = \"staging\"\nfailure_policy = \"db-only\"\n[throttle]\nwindow_secs = 60\n",
        )
        .expect("write");
        let settings = Settings::load(Some(&good)).expect("loads");
        assert_eq!(settings.server.port, 4100);
        assert_eq!(settings.redis.key_prefix, "staging");
        assert_eq!(settings.redis.failure_policy, RedisFailurePolicy::DbOnly);
        assert_eq!(settings.throttle.window_secs, 60);
        assert_eq!(
            settings.throttle.sign_in_per_email, 10,
            "unset keys keep their defaults"
        );

        let typo = dir.join("typo.toml");
        std::fs::write(&typo, "[server]\nprot = 4100\n").expect("write");
        let error = format!(
            "{:#}",
            Settings::load(Some(&typo)).expect_err("unknown key")
        );
        assert!(error.contains("prot"), "{error}");
        let bad_value = dir.join("bad.toml");
        std::fs::write(&bad_value, "[redis]\nfailure_policy = \"maybe\"\n").expect("write");
        assert!(Settings::load(Some(&bad_value)).is_err());
        assert!(
            Settings::load(Some(&dir.join("missing.toml"))).is_err(),
            "a named file must exist"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn proxy_hops_are_explicit_and_the_old_bool_still_reads() {
        let dir = std::env::temp_dir().join(format!("admitone-hops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let load = |name: &str, body: &str| {
            let file = dir.join(name);
            std::fs::write(&file, body).expect("write");
            Settings::load(Some(&file))
        };
        assert_eq!(
            Settings::default().trusted_proxy_hops(),
            0,
            "off by default"
        );
        let two = load("two.toml", "[server]\ntrusted_proxy_hops = 2\n").expect("loads");
        assert_eq!(two.trusted_proxy_hops(), 2);
        assert_eq!(two.auth_policy().trusted_proxy_hops, 2);
        let old = load("old.toml", "[server]\ntrust_forwarded_for = true\n").expect("loads");
        assert_eq!(old.trusted_proxy_hops(), 1, "the old bool means one proxy");
        let off = load("off.toml", "[server]\ntrust_forwarded_for = false\n").expect("loads");
        assert_eq!(off.trusted_proxy_hops(), 0);
        let both = load(
            "both.toml",
            "[server]\ntrust_forwarded_for = true\ntrusted_proxy_hops = 2\n",
        );
        let error = format!("{:#}", both.expect_err("ambiguous"));
        assert!(error.contains("trusted_proxy_hops"), "{error}");
        assert!(
            load("big.toml", "[server]\ntrusted_proxy_hops = 300\n").is_err(),
            "out of range"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn s3_storage_names_what_is_missing() {
        let mut s = Settings::default();
        s.storage.backend = StorageBackend::S3;
        let error = s.validate().expect_err("incomplete").to_string();
        assert!(error.contains("storage.s3_bucket"), "{error}");
        s.storage.s3_bucket = "courses".into();
        s.storage.s3_access_key_id = "key".into();
        assert!(
            s.validate()
                .expect_err("no secret")
                .to_string()
                .contains("s3_secret_access_key")
        );
        s.storage.s3_secret_access_key = Some(SecretString::from("secret"));
        s.validate().expect("complete");
    }

    #[test]
    fn current_code_key_must_exist() {
        let mut s = Settings::default();
        s.secrets.code_key_current = 9;
        assert!(s.validate().is_err());
    }

    #[test]
    fn secrets_do_not_print() {
        let mut s = Settings::default();
        s.secrets.session_key = Some(SecretString::from("super-secret-session-key".repeat(3)));
        let printed = format!("{s:?}");
        assert!(!printed.contains("super-secret"), "{printed}");
        assert!(!printed.contains("dev-only"), "{printed}");
    }
}
