//! Single-use links mailed to a person: verify an address, reset a
//! password, confirm a change of address, accept an invitation.
//!
//! A link's secret is never stored anywhere. It is derived from the row's
//! id and the link's purpose with a server key ([`LinkKey`], itself derived
//! from the session signing key), when the row is written (to store its
//! digest) and again when the mail relay writes the mail out. The database
//! keeps only the SHA-256 digest, to find the row when the link comes
//! back: a copy of the database, a backup, or the mail outbox yields no
//! usable link. Rotating the session key ends every open link (people ask
//! for a new one).
//!
//! Each table that holds links uses one with a conditional UPDATE
//! (`used_at IS NULL AND expires_at > now()`), so a link works once, and
//! only while it lives.

use hmac::{Hmac, Mac as _};
use secrecy::{ExposeSecret as _, SecretString};
use sha2::{Digest as _, Sha256};
use uuid::Uuid;

/// What a link does, and so how long it lives and what its secret is
/// derived with (a verification link can never serve as a reset link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkPurpose {
    VerifyEmail,
    ResetPassword,
    ChangeEmail,
    Invitation,
    /// A learner's code moving to the account with this address.
    Transfer,
    /// Finishing a registration: the address proves itself before any
    /// account exists ([`super::signup`]).
    SignUp,
}

impl LinkPurpose {
    /// The word in `account_links.purpose` (invitations and signup links have their own tables).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerifyEmail => "verify_email",
            Self::ResetPassword => "reset_password",
            Self::ChangeEmail => "change_email",
            Self::Invitation => "invitation",
            Self::Transfer => "transfer",
            Self::SignUp => "sign_up",
        }
    }

    /// How long a link works after it is sent.
    pub fn lifetime(self) -> time::Duration {
        match self {
            Self::VerifyEmail | Self::ChangeEmail | Self::SignUp => time::Duration::hours(24),
            Self::ResetPassword => time::Duration::minutes(30),
            Self::Invitation | Self::Transfer => time::Duration::days(7),
        }
    }

    /// The page a link opens, under the server's public URL.
    pub fn path(self) -> &'static str {
        match self {
            Self::VerifyEmail => "/verify-email",
            Self::ResetPassword => "/reset-password",
            Self::ChangeEmail => "/confirm-email",
            Self::Invitation => "/invitation",
            Self::Transfer => "/transfer",
            Self::SignUp => "/register/finish",
        }
    }
}

/// The key links are derived with.
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey([REDACTED])")
    }
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

impl LinkKey {
    /// The link key of a server whose session signing key is `master`: a
    /// key of its own (HMAC of a fixed label), so a link never reveals
    /// anything about the session key.
    pub fn derive(master: &SecretString) -> Self {
        Self(hmac(
            master.expose_secret().as_bytes(),
            &[b"admitone/account-links/v1"],
        ))
    }

    /// The secret of link `id`: 43 URL-safe characters (256 bits).
    pub fn token(&self, purpose: LinkPurpose, id: Uuid) -> SecretString {
        use base64::Engine as _;
        let mac = hmac(&self.0, &[purpose.as_str().as_bytes(), b":", id.as_bytes()]);
        SecretString::from(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac))
    }

    /// What is stored of link `id`: the digest of its secret.
    pub fn digest_of(&self, purpose: LinkPurpose, id: Uuid) -> Vec<u8> {
        digest(&self.token(purpose, id))
    }

    /// The full link: `{origin}{path}?token={secret}`.
    pub fn url(&self, origin: &str, purpose: LinkPurpose, id: Uuid) -> String {
        format!(
            "{}{}?token={}",
            origin.trim_end_matches('/'),
            purpose.path(),
            self.token(purpose, id).expose_secret()
        )
    }
}

/// The digest a presented secret is looked up by.
pub fn digest(token: &SecretString) -> Vec<u8> {
    Sha256::digest(token.expose_secret().as_bytes()).to_vec()
}

/// A secret as it came back in a link: only the shape is checked here (43
/// URL-safe base64 characters), so junk is refused before any query.
#[derive(Debug)]
pub struct LinkToken(SecretString);

impl LinkToken {
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        (raw.len() == 43
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .then(|| Self(SecretString::from(raw.to_owned())))
    }

    pub fn digest(&self) -> Vec<u8> {
        digest(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(master: &str) -> LinkKey {
        LinkKey::derive(&SecretString::from(master.to_owned()))
    }

    #[test]
    fn a_token_depends_on_the_key_the_purpose_and_the_id() {
        let id = Uuid::new_v4();
        let k = key("one key");
        let token = k.token(LinkPurpose::VerifyEmail, id);
        assert_eq!(
            token.expose_secret(),
            k.token(LinkPurpose::VerifyEmail, id).expose_secret(),
            "derived again, the same"
        );
        for other in [
            k.token(LinkPurpose::ResetPassword, id),
            k.token(LinkPurpose::VerifyEmail, Uuid::new_v4()),
            key("another key").token(LinkPurpose::VerifyEmail, id),
        ] {
            assert_ne!(token.expose_secret(), other.expose_secret());
        }
        let parsed = LinkToken::parse(token.expose_secret()).expect("its own shape");
        assert_eq!(parsed.digest(), k.digest_of(LinkPurpose::VerifyEmail, id));
    }

    #[test]
    fn only_the_shape_of_a_token_parses() {
        let good = key("k").token(LinkPurpose::Invitation, Uuid::nil());
        assert!(LinkToken::parse(good.expose_secret()).is_some());
        assert!(LinkToken::parse(&format!(" {} ", good.expose_secret())).is_some());
        for bad in [
            "",
            "short",
            &"a".repeat(44),
            &format!("{}=", &"a".repeat(42)),
            &"é".repeat(43),
        ] {
            assert!(LinkToken::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_url_carries_the_token_on_the_purposes_page() {
        let k = key("k");
        let id = Uuid::new_v4();
        let url = k.url(
            "https://courses.example.com/",
            LinkPurpose::ResetPassword,
            id,
        );
        assert_eq!(
            url,
            format!(
                "https://courses.example.com/reset-password?token={}",
                k.token(LinkPurpose::ResetPassword, id).expose_secret()
            )
        );
    }

    #[test]
    fn lifetimes_are_the_documented_ones() {
        assert_eq!(
            LinkPurpose::VerifyEmail.lifetime(),
            time::Duration::hours(24)
        );
        assert_eq!(
            LinkPurpose::ResetPassword.lifetime(),
            time::Duration::minutes(30)
        );
        assert_eq!(
            LinkPurpose::ChangeEmail.lifetime(),
            time::Duration::hours(24)
        );
        assert_eq!(LinkPurpose::Invitation.lifetime(), time::Duration::days(7));
    }
}
