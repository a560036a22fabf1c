//! Every Redis key AdmitOne writes is spelled here and nowhere else.
//!
//! Keys that one script touches together share a `{…}` hash tag so that
//! Redis Cluster stores them in one slot; the prefix lets deployments and
//! tests share a server without seeing each other's keys. Subjects that are
//! personal data (emails, IP addresses) appear only as a keyed digest.

use std::sync::Arc;

use sha2::{Digest as _, Sha256};

/// What a throttle counts attempts of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleScope {
    SignInEmail,
    SignInIp,
    RegisterIp,
}

impl ThrottleScope {
    fn as_str(self) -> &'static str {
        match self {
            Self::SignInEmail => "signin-email",
            Self::SignInIp => "signin-ip",
            Self::RegisterIp => "register-ip",
        }
    }
}

/// Builds the keys of one deployment (or one test).
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: Arc<str>,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: Arc::from(prefix),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A server-side session record (tower-sessions id).
    pub fn session(&self, id: &str) -> String {
        format!("{}:session:{id}", self.prefix)
    }

    /// The fixed-window counter of `subject` in `scope`.
    pub fn throttle(&self, scope: ThrottleScope, subject: &str) -> String {
        format!(
            "{}:throttle:{}:{}",
            self.prefix,
            scope.as_str(),
            self.digest(subject)
        )
    }

    /// A short digest of personal data, salted with the prefix so that keys
    /// of different deployments do not correlate.
    fn digest(&self, subject: &str) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.prefix.as_bytes());
        hasher.update([0]);
        hasher.update(subject.as_bytes());
        let digest = hasher.finalize();
        digest[..12].iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_keys_hide_the_subject_and_differ_by_scope() {
        let keys = Keys::new("t1");
        let email = keys.throttle(ThrottleScope::SignInEmail, "ada@example.com");
        assert!(email.starts_with("t1:throttle:signin-email:"), "{email}");
        assert!(!email.contains("ada"), "{email}");
        assert_ne!(
            email,
            keys.throttle(ThrottleScope::SignInIp, "ada@example.com")
        );
        assert_eq!(
            email,
            keys.throttle(ThrottleScope::SignInEmail, "ada@example.com")
        );
        assert_ne!(
            email,
            Keys::new("t2").throttle(ThrottleScope::SignInEmail, "ada@example.com")
        );
    }

    #[test]
    fn session_keys_carry_the_prefix() {
        assert_eq!(Keys::new("p").session("abc"), "p:session:abc");
    }
}
