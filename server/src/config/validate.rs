//! [`Settings::validate`]: the checks a loaded configuration must pass
//! before anything starts, each refusal naming its key.
//!
//! Why a file of its own: [`Settings::load`] runs them, and tests and
//! callers that build [`Settings`] by hand run them too; the checks on
//! secrets and the production refusals are in [`super::secrets`] and run
//! last, from here.

use super::{ConfigError, Settings};

impl Settings {
    /// Checks values and, in production, refuses missing or default secrets,
    /// naming each.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.redis.response_timeout_ms == 0 {
            return Err(ConfigError::Invalid {
                key: "redis.response_timeout_ms",
                message: "must be above 0".into(),
            });
        }
        use secrecy::ExposeSecret as _;
        engine::db::parse_url(self.database.url.expose_secret()).map_err(|e| {
            ConfigError::Invalid {
                key: "database.url",
                message: e.to_string(),
            }
        })?;
        self.validate_failover()?;
        if self.database.primary_probe_interval_ms == 0 {
            return Err(ConfigError::Invalid {
                key: "database.primary_probe_interval_ms",
                message: "must be above 0".into(),
            });
        }
        if self.database.read_from_standby && self.failover_hosts()?.is_empty() {
            return Err(ConfigError::Invalid {
                key: "database.read_from_standby",
                message: "needs database.failover_hosts: the standby is found among the \
                          formation's nodes"
                    .into(),
            });
        }
        if !(10..=2_000).contains(&self.database.standby_wait_ms) {
            return Err(ConfigError::Invalid {
                key: "database.standby_wait_ms",
                message: "must be between 10 and 2000: a read waits this long for the standby \
                          before it runs on the primary"
                    .into(),
            });
        }
        if self.database.read_from_standby && self.database.standby_max_connections == 0 {
            return Err(ConfigError::Invalid {
                key: "database.standby_max_connections",
                message: "must be above 0".into(),
            });
        }
        if self.database.max_connections == 0 {
            return Err(ConfigError::Invalid {
                key: "database.max_connections",
                message: "must be above 0".into(),
            });
        }
        // A settlement may take up to three of its transactions: the
        // deadline must leave it room to finish.
        if self.server.request_timeout_secs.saturating_mul(1000)
            <= self.settlement.transaction_timeout_ms.saturating_mul(3)
        {
            return Err(ConfigError::Invalid {
                key: "server.request_timeout_secs",
                message: "must be above three settlement transactions (settlement.transaction_timeout_ms)"
                    .into(),
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
        if t.api_token_per_minute == 0 {
            return Err(ConfigError::Invalid {
                key: "throttle.api_token_per_minute",
                message: "must be above 0".into(),
            });
        }
        if t.content_per_account_per_minute == 0 {
            return Err(ConfigError::Invalid {
                key: "throttle.content_per_account_per_minute",
                message: "must be above 0".into(),
            });
        }
        if t.logo_per_ip_per_minute == 0 {
            return Err(ConfigError::Invalid {
                key: "throttle.logo_per_ip_per_minute",
                message: "must be above 0".into(),
            });
        }
        if t.imports_per_tenant_per_hour == 0 {
            return Err(ConfigError::Invalid {
                key: "throttle.imports_per_tenant_per_hour",
                message: "must be above 0".into(),
            });
        }
        if self.tenants.transfers_per_code > 1_000 {
            return Err(ConfigError::Invalid {
                key: "tenants.transfers_per_code",
                message: "must be at most 1000".into(),
            });
        }
        if st.grant_recheck_secs > 60 {
            return Err(ConfigError::Invalid {
                key: "settlement.grant_recheck_secs",
                message: "must be at most 60: it is how long a revoked learner may keep streaming"
                    .into(),
            });
        }
        if t.reset_per_email == 0
            || t.register_per_email == 0
            || t.mail_per_ip == 0
            || t.mail_per_account == 0
        {
            return Err(ConfigError::Invalid {
                key: "throttle",
                message: "mail limits must be above 0".into(),
            });
        }
        self.validate_mail()?;
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
        if let Some(bad) = self
            .server
            .allowed_hosts
            .iter()
            .find(|host| host.trim().is_empty() || host.contains(['/', '@', ' ', '?', '#']))
        {
            return Err(ConfigError::Invalid {
                key: "server.allowed_hosts",
                message: format!("{bad:?} is not a host or host:port (no scheme, no path)"),
            });
        }
        self.validate_secrets()
    }

    /// The SMTP URL and the sender parse. (Production's refusal to run
    /// without them is with the other production refusals, in
    /// `secrets.rs`: the URL carries the SMTP password.)
    fn validate_mail(&self) -> Result<(), ConfigError> {
        crate::mail::transport::smtp_builder(&self.mail).map_err(|e| ConfigError::Invalid {
            key: "mail.smtp_url",
            message: format!("{e:#}"),
        })?;
        crate::mail::transport::from_address(&self.mail).map_err(|e| ConfigError::Invalid {
            key: "mail.from",
            message: format!("{e:#}"),
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;

    #[test]
    fn development_defaults_are_valid() {
        Settings::default().validate().expect("defaults validate");
    }

    #[test]
    fn a_database_url_the_driver_would_half_ignore_is_refused() {
        let mut s = Settings::default();
        s.database.url = "postgres://app:pw@db/admitone?target_session_attrs=read-write"
            .to_owned()
            .into();
        let error = s.validate().expect_err("ignored parameter").to_string();
        assert!(error.contains("database.url"), "{error}");
        assert!(error.contains("target_session_attrs"), "{error}");
        assert!(!error.contains("pw@"), "{error}");
    }

    #[test]
    fn failover_hosts_are_host_port_pairs() {
        let mut s = Settings::default();
        s.database.failover_hosts = " db2:5432, [::1]:5433 ,".into();
        s.validate().expect("two hosts");
        assert_eq!(
            s.db_options().failover_hosts,
            [("db2".to_owned(), 5432), ("::1".to_owned(), 5433)]
        );
        for bad in [
            "db2",
            "db2:",
            "db2:0",
            "db2:65536",
            ":5432",
            "user@db2:5432",
            "db2:54x",
            "db2:5432:5433",
            "[db2:5432",
            "[fe80::1%eth0]:5432",
        ] {
            s.database.failover_hosts = bad.into();
            let error = s.validate().expect_err(bad).to_string();
            assert!(error.contains("database.failover_hosts"), "{bad}: {error}");
        }
        // The URL must name its node by TCP in its authority: a socket or
        // a host parameter would send every node's connections there.
        s.database.failover_hosts = "db2:5432".into();
        for url in [
            "postgres:///admitone?host=/var/run/postgresql",
            "postgres://db1/admitone?host=db3",
            "postgres://db1/admitone?port=6432",
        ] {
            s.database.url = url.to_owned().into();
            let error = s.validate().expect_err(url).to_string();
            assert!(error.contains("database.failover_hosts"), "{url}: {error}");
        }
        s.database.url = "postgres://app@db1:5432/admitone?sslmode=require"
            .to_owned()
            .into();
        s.validate().expect("a TCP node and its failover host");
        s.database.failover_hosts = String::new();
        s.database.primary_probe_interval_ms = 0;
        let error = s.validate().expect_err("no probing").to_string();
        assert!(error.contains("primary_probe_interval_ms"), "{error}");
    }

    #[test]
    fn reads_from_a_standby_need_the_formation() {
        let mut s = Settings::default();
        s.database.read_from_standby = true;
        let error = s.validate().expect_err("no failover hosts").to_string();
        assert!(error.contains("database.read_from_standby"), "{error}");
        assert!(error.contains("failover_hosts"), "{error}");
        s.database.url = "postgres://app@db1:5432/admitone".to_owned().into();
        s.database.failover_hosts = "db2:5432".into();
        s.validate().expect("a formation to find a standby in");
        assert!(s.db_options().read_from_standby);
        s.database.standby_max_connections = 0;
        let error = s.validate().expect_err("no connections").to_string();
        assert!(error.contains("standby_max_connections"), "{error}");
        s.database.read_from_standby = false;
        s.validate()
            .expect("the standby's pool size matters only when reads go there");
        for wait in [0, 9, 2_001] {
            s.database.standby_wait_ms = wait;
            let error = s.validate().expect_err("out of bounds").to_string();
            assert!(error.contains("standby_wait_ms"), "{wait}: {error}");
        }
    }

    #[test]
    fn the_smtp_url_and_the_sender_must_parse() {
        let mut s = Settings::default();
        s.mail.from = "nobody".into();
        let error = s.validate().expect_err("bad sender").to_string();
        assert!(error.contains("mail.from"), "{error}");
        s.mail.from = "Acme <courses@acme.example>".into();
        s.mail.smtp_url = Some("ftp://mail.example.com".to_owned().into());
        let error = s.validate().expect_err("bad url").to_string();
        assert!(error.contains("mail.smtp_url"), "{error}");
        s.mail.smtp_url = Some("smtps://user:pass@mail.example.com".to_owned().into());
        s.validate().expect("both parse");
    }
}
