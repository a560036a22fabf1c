//! The settings turned into the option types of the crates that use them:
//! the service layer's [`AuthPolicy`](service::AuthPolicy), and the engine's
//! settlement, storage, database and Redis options.
//!
//! Why a file of its own: this is the one place where a setting's unit
//! (milliseconds, a comma-separated URL list, a backend name) becomes the
//! typed value the engine takes, so the engine never reads configuration.

use std::time::Duration;

use secrecy::ExposeSecret as _;

use super::{
    ConfigError, Settings,
    sections::{RedisFailurePolicy, StorageBackend},
};

impl Settings {
    pub fn auth_policy(&self) -> service::AuthPolicy {
        use engine::throttle::Limit;
        let t = &self.throttle;
        service::AuthPolicy {
            sign_in_per_email: Limit::new(t.sign_in_per_email, t.window_secs),
            sign_in_per_ip: Limit::new(t.sign_in_per_ip, t.window_secs),
            register_per_ip: Limit::new(t.register_per_ip, t.window_secs),
            absolute_session: Duration::from_secs(self.sessions.absolute_timeout_hours * 3600),
            trusted_proxy_hops: self.trusted_proxy_hops(),
            code_per_account: Limit::new(t.code_per_account, t.window_secs),
            code_per_ip: Limit::new(t.code_per_ip, t.window_secs),
            code_per_share: Limit::new(t.code_per_share, t.window_secs),
            reset_per_email: Limit::new(t.reset_per_email, t.window_secs),
            register_per_email: Limit::new(t.register_per_email, t.window_secs),
            mail_per_ip: Limit::new(t.mail_per_ip, t.window_secs),
            mail_per_account: Limit::new(t.mail_per_account, t.window_secs),
            api_token: Limit::new(t.api_token_per_minute, 60),
            content_per_account: Limit::new(t.content_per_account_per_minute, 60),
            imports_per_tenant: Limit::new(t.imports_per_tenant_per_hour, 3600),
            logo_per_ip: Limit::new(t.logo_per_ip_per_minute, 60),
            tenant_self_signup: self.tenants.self_signup,
            transfers_per_code: self.tenants.transfers_per_code,
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

    pub fn db_options(&self) -> engine::db::DbOptions {
        let d = &self.database;
        engine::db::DbOptions {
            max_connections: d.max_connections,
            acquire_timeout: Duration::from_millis(d.acquire_timeout_ms),
            statement_timeout: Duration::from_millis(d.statement_timeout_ms),
            lock_timeout: Duration::from_millis(d.lock_timeout_ms),
            idle_in_transaction_timeout: Duration::from_millis(d.idle_in_transaction_timeout_ms),
            ping_if_idle_for: engine::db::PING_IF_IDLE_FOR,
            // Checked by `validate`: every entry is a host and a port.
            failover_hosts: self.failover_hosts().unwrap_or_default(),
            primary_probe_every: Duration::from_millis(d.primary_probe_interval_ms),
            read_from_standby: d.read_from_standby,
            standby_wait: Duration::from_millis(d.standby_wait_ms),
            standby_max_connections: d.standby_max_connections,
        }
    }

    /// `database.failover_hosts` as (host, port) pairs.
    pub fn failover_hosts(&self) -> Result<Vec<(String, u16)>, super::ConfigError> {
        let invalid = |entry: &str| super::ConfigError::Invalid {
            key: "database.failover_hosts",
            message: format!("{entry:?} is not host:port"),
        };
        self.database
            .failover_hosts
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let (host, port) = entry.rsplit_once(':').ok_or_else(|| invalid(entry))?;
                // An IPv6 address in brackets; any other `:` is a mistake
                // (`db2:5432:5433`).
                let host = match host.strip_prefix('[') {
                    Some(v6) => v6.strip_suffix(']').ok_or_else(|| invalid(entry))?,
                    None if host.contains(':') => return Err(invalid(entry)),
                    None => host,
                };
                let port: u16 = port.parse().map_err(|_| invalid(entry))?;
                if host.is_empty()
                    || port == 0
                    || host.contains(['/', '@', ' ', '?', '#', ',', '[', ']', '%'])
                {
                    return Err(invalid(entry));
                }
                Ok((host.to_owned(), port))
            })
            .collect()
    }

    /// With `failover_hosts`, the URL must name its node the same way
    /// (TCP, in its authority): a socket or a `host`/`hostaddr`/`port`
    /// parameter would override every node's address alike.
    pub(super) fn validate_failover(&self) -> Result<(), super::ConfigError> {
        if self.failover_hosts()?.is_empty() {
            return Ok(());
        }
        let refuse = |message: &str| super::ConfigError::Invalid {
            key: "database.failover_hosts",
            message: message.into(),
        };
        let url = url::Url::parse(self.database.url.expose_secret())
            .map_err(|_| refuse("needs database.url to be a URL"))?;
        let tcp = url
            .host_str()
            .is_some_and(|host| !host.is_empty() && !host.starts_with('%'));
        let overridden = url
            .query_pairs()
            .any(|(key, _)| matches!(key.as_ref(), "host" | "hostaddr" | "port"));
        if !tcp || overridden {
            return Err(refuse(
                "needs database.url to name its node by host and port (TCP, no socket, \
                 no host, hostaddr or port parameter)",
            ));
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use crate::config::{Settings, sections::StorageBackend};

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
}
