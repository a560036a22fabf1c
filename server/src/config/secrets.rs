//! The `[secrets]` section: the session signing key and the code HMAC
//! keys, their development defaults, and the refusals that keep those
//! defaults (or no secret at all) out of production.
//!
//! Why a file of its own: what a secret may be, what it falls back to in
//! development and what production refuses belong together, so that a new
//! secret cannot be added without its refusal. Secrets are `secrecy`
//! types: they never print.

use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;

use super::{ConfigError, Settings, sections::Environment};

/// The development-only secrets used when none is configured. Public by
/// design (they are in the source), so production refuses them.
const DEV_SESSION_KEY: &str = "dev-only-session-key-change-me-dev-only-session-key-change-me-0000";
const DEV_CODE_KEYS: &str = "1:dev-only-code-hmac-key-change-me";

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

impl Default for SecretSettings {
    fn default() -> Self {
        Self {
            session_key: None,
            code_keys: None,
            code_key_current: 1,
        }
    }
}

impl Settings {
    /// The checks of [`Settings::validate`] that concern secrets, in its
    /// order (they come last): the session key's length, the code keys'
    /// shape and current version, then, in production, missing or
    /// development-default secrets, naming each.
    pub(super) fn validate_secrets(&self) -> Result<(), ConfigError> {
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
            // No dev mailbox in production: without a server, mail is lost.
            if self.mail.smtp_url.is_none() {
                problems.push(
                    "mail.smtp_url (APP_MAIL__SMTP_URL) is missing: mail needs an SMTP server",
                );
            }
            if self.mail.from.trim().is_empty() {
                problems.push("mail.from (APP_MAIL__FROM) is missing: the sender of every mail");
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

    pub fn keyring(&self) -> Result<engine::codes::Keyring, ConfigError> {
        engine::codes::Keyring::new(self.secrets.code_key_current, self.code_keys()?)
            .map_err(ConfigError::Unexpected)
    }
}

fn dev_code_secret() -> &'static str {
    DEV_CODE_KEYS
        .split_once(':')
        .map_or(DEV_CODE_KEYS, |(_, s)| s)
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::{DEV_CODE_KEYS, DEV_SESSION_KEY};
    use crate::config::{Settings, sections::Environment};

    fn production() -> Settings {
        let mut s = Settings::default();
        s.server.environment = Environment::Production;
        s.mail.smtp_url = Some(SecretString::from("smtps://user:pass@mail.example.com"));
        s.mail.from = "Acme <courses@acme.example>".into();
        s
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
    fn production_needs_an_smtp_server_and_a_sender_and_names_each() {
        let mut s = production();
        s.secrets.session_key = Some(SecretString::from("k".repeat(64)));
        s.secrets.code_keys = Some(SecretString::from("1:a-real-secret-of-length"));
        s.validate().expect("complete");
        s.mail.smtp_url = None;
        s.mail.from = String::new();
        let error = s.validate().expect_err("must refuse").to_string();
        assert!(error.contains("refusing to start in production"), "{error}");
        assert!(error.contains("mail.smtp_url"), "{error}");
        assert!(error.contains("mail.from"), "{error}");
        s.mail.from = "Acme <courses@acme.example>".into();
        let error = s.validate().expect_err("must refuse").to_string();
        assert!(
            error.contains("mail.smtp_url") && !error.contains("mail.from"),
            "{error}"
        );
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
