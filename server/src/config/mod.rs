//! Typed configuration.
//!
//! Sources, later ones winning: built-in defaults (good for local
//! development), an optional TOML file (`--config FILE` or `APP_CONFIG`),
//! then `APP_…` environment variables with `__` between section and key
//! (`APP_DATABASE__MAX_CONNECTIONS=50`). `DATABASE_URL` and `REDIS_URL` are
//! honoured too, below their `APP_` spellings. Secrets are `secrecy` types:
//! they never print, and in production the server refuses to start while
//! any of them is missing or still the development default.
//!
//! This module holds [`Settings`], its loading and the few answers read
//! straight off it; the rest is split by concern: [`sections`] (one type
//! per TOML table and its defaults), [`secrets`] (the secrets, their
//! development defaults and the production refusals), `validate` (every
//! other check a loaded configuration must pass) and `options` (the
//! settings turned into the engine's and the app's option types).

pub mod secrets;
pub mod sections;

mod options;
mod validate;

use std::{net::SocketAddr, path::Path};

use anyhow::Context as _;
use serde::Deserialize;

use secrets::SecretSettings;
use sections::{
    DatabaseSettings, Environment, LogSettings, MailSettings, MetricsSettings, RedisSettings,
    ServerSettings, SessionSettings, SettlementSettings, StorageSettings, TenantSettings,
    ThrottleSettings, WebhookSettings,
};

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
    pub mail: MailSettings,
    pub tenants: TenantSettings,
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
        Self::load_from(file.as_deref(), vars)
    }

    /// [`Settings::load`] from a given environment (`APP_…` variables;
    /// tests pass their own).
    fn load_from(
        file: Option<&Path>,
        vars: std::collections::HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder();
        if let Some(file) = file {
            builder = builder.add_source(config::File::from(file).required(true));
        }
        let env = config::Environment::with_prefix("APP")
            .prefix_separator("_")
            .separator("__")
            .try_parsing(true)
            // A list in one variable: `APP_SERVER__ALLOWED_HOSTS=a:3000,b`.
            .list_separator(",")
            .with_list_parse_key("server.allowed_hosts")
            .ignore_empty(true)
            .source(Some(vars));
        let settings: Settings = builder
            .add_source(env)
            .build()
            .context("reading the configuration")?
            .try_deserialize()
            .context("parsing the configuration")?;
        settings.validate()?;
        Ok(settings)
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

    /// Whether mail goes to the dev mailbox and `/dev/mailbox` shows it:
    /// development, no SMTP server, and a server listening on loopback
    /// only. The page shows every reset link, so a development server
    /// reachable from elsewhere (a demo on a public address) never has it;
    /// its mail waits in the outbox until an SMTP server is configured.
    pub fn dev_mailbox(&self) -> bool {
        !self.is_production()
            && self.mail.smtp_url.is_none()
            && self
                .server
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
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
}

#[cfg(test)]
mod tests {
    use super::{Settings, sections::RedisFailurePolicy};

    /// The `KEY=value` lines of an `EnvironmentFile`.
    fn environment_file(path: &std::path::Path) -> std::collections::HashMap<String, String> {
        std::fs::read_to_string(path)
            .expect("the environment file")
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| {
                let (key, value) = line.split_once('=').expect("KEY=value");
                (key.to_owned(), value.to_owned())
            })
            .collect()
    }

    /// What `server/deploy/` ships is what the server accepts: the example
    /// production configuration, with the secrets its comment names and
    /// the highly available PostgreSQL's `ha.env`, passes the server's own
    /// validation and means what the docs say (the pool follows the
    /// formation and reads go to its standby).
    #[test]
    fn the_deployed_configuration_loads_with_the_formations_settings() {
        let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
        let mut vars = environment_file(&deploy.join("ha/ha.env"));
        for (key, value) in [
            ("APP_SECRETS__SESSION_KEY", "k".repeat(64)),
            ("APP_SECRETS__CODE_KEYS", format!("1:{}", "c".repeat(64))),
            (
                "APP_DATABASE__URL",
                "postgres://admitone:secret@db1.internal:5432/admitone".to_owned(),
            ),
            ("APP_REDIS__URL", "redis://redis.internal:6379".to_owned()),
            ("APP_METRICS__TOKEN", "m".repeat(32)),
            ("APP_STORAGE__S3_ACCESS_KEY_ID", "AKIAEXAMPLE".to_owned()),
            ("APP_STORAGE__S3_SECRET_ACCESS_KEY", "s".repeat(40)),
            (
                "APP_MAIL__SMTP_URL",
                "smtp://courses:secret@smtp.example.com:587?tls=required".to_owned(),
            ),
        ] {
            vars.insert(key.to_owned(), value);
        }
        let settings = Settings::load_from(Some(&deploy.join("admitone.toml")), vars.clone())
            .expect("server/deploy/admitone.toml with ha.env");
        assert!(settings.is_production());
        let db = settings.db_options();
        assert_eq!(db.failover_hosts, [("db2.internal".to_owned(), 5432)]);
        assert!(db.read_from_standby);
        // The same file without the formation's other nodes is refused,
        // by name: ha.env's reads need them.
        vars.remove("APP_DATABASE__FAILOVER_HOSTS");
        let error = Settings::load_from(Some(&deploy.join("admitone.toml")), vars)
            .expect_err("reads on a standby without a formation")
            .to_string();
        assert!(error.contains("database.read_from_standby"), "{error}");
    }

    #[test]
    fn the_dev_mailbox_is_for_a_loopback_development_server_without_smtp() {
        let mut s = Settings::default();
        assert!(s.dev_mailbox(), "make run");
        s.server.host = "::1".into();
        assert!(s.dev_mailbox());
        s.server.host = "0.0.0.0".into();
        assert!(!s.dev_mailbox(), "reachable from elsewhere");
        s.server.host = "127.0.0.1".into();
        s.mail.smtp_url = Some("smtp://127.0.0.1:2525".to_owned().into());
        assert!(!s.dev_mailbox(), "an SMTP server");
        s.mail.smtp_url = None;
        s.server.environment = super::sections::Environment::Production;
        assert!(!s.dev_mailbox(), "production");
    }

    #[test]
    fn the_allowed_hosts_are_a_list_in_one_variable_and_bad_ones_are_refused() {
        let vars = |value: &str| {
            std::collections::HashMap::from([(
                "APP_SERVER__ALLOWED_HOSTS".to_owned(),
                value.to_owned(),
            )])
        };
        let settings =
            Settings::load_from(None, vars("admitone.internal:3000,courses.example.org"))
                .expect("settings");
        assert_eq!(
            settings.server.allowed_hosts,
            ["admitone.internal:3000", "courses.example.org"]
        );
        assert!(
            Settings::load_from(None, Default::default())
                .expect("settings")
                .server
                .allowed_hosts
                .is_empty()
        );
        assert!(matches!(
            Settings::load_from(None, vars("https://courses.example.org/")),
            Err(super::ConfigError::Invalid {
                key: "server.allowed_hosts",
                ..
            })
        ));
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
    fn the_request_deadline_leaves_a_settlement_room_and_limits_are_positive() {
        let mut settings = Settings::default();
        assert!(settings.validate().is_ok());
        settings.server.request_timeout_secs = 15; // = 3 × 5 s transactions
        assert!(
            settings.validate().is_err(),
            "no room for three transactions"
        );
        settings.server.request_timeout_secs = 16;
        assert!(settings.validate().is_ok());
        settings.throttle.api_token_per_minute = 0;
        assert!(settings.validate().is_err());
    }

    #[test]
    fn transfers_per_code_is_at_most_a_thousand_and_zero_is_allowed() {
        let mut settings = Settings::default();
        assert_eq!(settings.tenants.transfers_per_code, 2);
        settings.tenants.transfers_per_code = 0;
        assert!(settings.validate().is_ok(), "0 turns requests off");
        settings.tenants.transfers_per_code = 1_000;
        assert!(settings.validate().is_ok());
        settings.tenants.transfers_per_code = 1_001;
        assert!(settings.validate().is_err());
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
}
