//! Every Redis key AdmitOne writes is spelled here and nowhere else.
//!
//! Keys that one script touches together share a `{…}` hash tag so that
//! Redis Cluster stores them in one slot; the prefix lets deployments and
//! tests share a server without seeing each other's keys. Subjects that are
//! personal data (emails, IP addresses) appear only as a keyed digest.

use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use uuid::Uuid;

/// What a throttle counts attempts of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleScope {
    /// Sign-in attempts for one address from anywhere: the backstop
    /// against guessing from many networks at once.
    SignInEmail,
    /// Sign-in attempts for one address from one network
    /// ([`crate::throttle::email_network_subject`]): a stranger's wrong
    /// tries use up their own network's window, not the owner's.
    SignInEmailNetwork,
    SignInIp,
    RegisterIp,
    /// Registrations of one address (each mails it: a mailbox is not
    /// flooded).
    RegisterEmail,
    CodeAccount,
    CodeIp,
    CodeShare,
    PasswordChangeAccount,
    PasswordChangeIp,
    /// "Forgot password" for one address (a mailbox is not flooded).
    ResetEmail,
    /// Every form that sends mail or uses a mailed link, per client IP.
    MailIp,
    /// Mail an account asks for itself or others (verification again, a
    /// change of address, invitations), and tenant signups, per account.
    MailAccount,
    /// Calls of `/api/v1` with one API token.
    ApiToken,
    /// Requests of resource bytes (a player's Range requests), per account.
    ContentAccount,
    /// Imports of codes, per tenant.
    ImportTenant,
    /// Reads of a tenant's logo that reach the database, per client IP.
    LogoIp,
}

impl ThrottleScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SignInEmail => "signin-email",
            Self::SignInEmailNetwork => "signin-email-net",
            Self::SignInIp => "signin-ip",
            Self::RegisterIp => "register-ip",
            Self::RegisterEmail => "register-email",
            Self::CodeAccount => "code-account",
            Self::CodeIp => "code-ip",
            Self::CodeShare => "code-share",
            Self::PasswordChangeAccount => "password-account",
            Self::PasswordChangeIp => "password-ip",
            Self::ResetEmail => "reset-email",
            Self::MailIp => "mail-ip",
            Self::MailAccount => "mail-account",
            Self::ApiToken => "api-token",
            Self::ContentAccount => "content-account",
            Self::ImportTenant => "import-tenant",
            Self::LogoIp => "logo-ip",
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

    /// A freshly issued batch's plain codes, parked for one viewing
    /// (`what` = `page` or `csv`) by the admin who issued it. Both copies
    /// share the `{h:<owner>:<batch>}` hash tag: they are written in one
    /// MULTI, which Redis Cluster allows within one slot only.
    pub fn handover(&self, owner: Uuid, batch: Uuid, what: &str) -> String {
        format!("{}:handover:{{h:{owner}:{batch}}}:{what}", self.prefix)
    }

    /// The lease of the one CSV download of a batch in flight (a random
    /// token, with a TTL; see `handover`). It shares the handover keys'
    /// `{h:<owner>:<batch>}` hash tag: `release.lua` deletes it together
    /// with the CSV copy.
    pub fn handover_lease(&self, owner: Uuid, batch: Uuid) -> String {
        format!("{}:handover:{{h:{owner}:{batch}}}:csv-lease", self.prefix)
    }

    /// How far `owner`'s operation `ticket` has got (issuing a batch).
    pub fn progress(&self, owner: Uuid, ticket: Uuid) -> String {
        format!("{}:progress:{owner}:{ticket}", self.prefix)
    }

    /// A server-side session record (tower-sessions id).
    pub fn session(&self, id: &str) -> String {
        format!("{}:session:{id}", self.prefix)
    }

    /// The reservation of a code during its first-access settlement. Shares
    /// the `{t:<tenant>:s:<share>}` hash tag with [`Keys::reservation_user`]
    /// so that `reserve.lua` can take both in one cluster slot.
    pub fn reservation_code(&self, tenant: Uuid, share: Uuid, code: Uuid) -> String {
        format!("{}:res:{{t:{tenant}:s:{share}}}:code:{code}", self.prefix)
    }

    /// The reservation of a learner during a first-access settlement in a share.
    pub fn reservation_user(&self, tenant: Uuid, share: Uuid, principal: Uuid) -> String {
        format!(
            "{}:res:{{t:{tenant}:s:{share}}}:user:{principal}",
            self.prefix
        )
    }

    /// A `SCAN` pattern matching every reservation key of this prefix.
    pub fn reservations_pattern(&self) -> String {
        format!("{}:res:*", self.prefix)
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

    /// The answer of an API create, held for a retry with the same
    /// `Idempotency-Key` (the key itself appears only as a digest).
    pub fn idempotent_answer(&self, tenant: Uuid, actor: Uuid, key: &str) -> String {
        format!("{}:idem:{tenant}:{actor}:{}", self.prefix, self.digest(key))
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

    /// Redis Cluster's slot of a key (CRC16/XMODEM of the hash tag, mod 16384).
    fn slot(key: &str) -> u16 {
        let tagged = match (key.find('{'), key.find('}')) {
            (Some(open), Some(close)) if close > open + 1 => &key[open + 1..close],
            _ => key,
        };
        let mut crc: u16 = 0;
        for &byte in tagged.as_bytes() {
            crc ^= u16::from(byte) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc % 16384
    }

    #[test]
    fn slot_function_matches_redis() {
        // Values from the Redis Cluster specification / CLUSTER KEYSLOT.
        assert_eq!(slot("123456789"), 12739);
        assert_eq!(slot("{user1000}.following"), slot("{user1000}.followers"));
    }

    #[test]
    fn both_reservation_keys_share_one_slot() {
        let keys = Keys::new("p");
        for _ in 0..100 {
            let (t, s) = (Uuid::new_v4(), Uuid::new_v4());
            let code = keys.reservation_code(t, s, Uuid::new_v4());
            let user = keys.reservation_user(t, s, Uuid::new_v4());
            assert_eq!(slot(&code), slot(&user), "{code} / {user}");
        }
    }

    /// Every group of keys one script or MULTI touches together: one slot
    /// each, so all of them run on Redis Cluster.
    #[test]
    fn keys_used_together_share_one_slot() {
        let keys = Keys::new("p");
        for _ in 0..100 {
            let (owner, batch) = (Uuid::new_v4(), Uuid::new_v4());
            let page = keys.handover(owner, batch, "page");
            let csv = keys.handover(owner, batch, "csv");
            let lease = keys.handover_lease(owner, batch);
            assert_eq!(slot(&page), slot(&csv), "{page} / {csv}");
            assert_eq!(slot(&csv), slot(&lease), "{csv} / {lease}");
        }
    }

    #[test]
    fn session_keys_carry_the_prefix() {
        assert_eq!(Keys::new("p").session("abc"), "p:session:abc");
    }
}
