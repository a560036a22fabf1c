//! Accounts: the verified, stable principals that codes are bound to.
//!
//! The principal id is the account's immutable uuid, never anything a client
//! sends. Emails and passwords are parsed into newtypes at the edge so that
//! the rest of the code cannot hold an unchecked one; password hashing
//! (argon2id) runs on the blocking pool because it is deliberately slow
//! (the password and its hashing live in `passwords`).
//! Accounts the operator vouches for (bootstrap, the demo seed) are made
//! in `operator`.
//!
//! An account is something a person keeps, so it lives by its address:
//!
//! * [`links`]: the single-use links mailed to it (their secret derived,
//!   only a digest stored);
//! * [`signup`]: registration, which starts from the address alone and
//!   makes the account when the mailed link comes back;
//! * [`verification`]: proving the address of an account made before
//!   that ("send again") and moving an account to a new address;
//! * [`recovery`]: "forgot password", and the reset that ends every
//!   session.
//!
//! Every mail an account action sends is queued in the action's own
//! transaction ([`crate::mail`]).

pub mod links;
mod operator;
mod passwords;
pub mod recovery;
pub mod signup;
pub mod verification;

use anyhow::Context as _;
use model::Lang;
use serde_json::json;
use sqlx::PgConnection;
use sqlx::PgPool;
use uuid::Uuid;

/// Expected failures of this module; everything else is `Unexpected`.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("enter a valid email address, like name@example.com")]
    InvalidEmail,
    #[error("a password needs at least {min} and at most {max} characters", min = Password::MIN_CHARS, max = Password::MAX_CHARS)]
    InvalidPassword,
    #[error("a display name needs 1 to {max} visible characters", max = DisplayName::MAX_CHARS)]
    InvalidDisplayName,
    #[error("an account with this email already exists; sign in instead")]
    EmailTaken,
    /// Unknown email and wrong password look the same (no account probing).
    #[error("the email or the password is wrong")]
    InvalidCredentials,
    #[error("this account is disabled; contact the course provider")]
    Disabled,
    /// A mailed link that is unknown, used, expired, or for an address
    /// the account no longer has: one answer for all.
    #[error("this link has expired or was already used; ask for a new one")]
    LinkInvalid,
    /// A change of address to the address the account already has.
    #[error("this is already your email address")]
    SameEmail,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

pub use model::AccountId;

use crate::mail::{self, NewMail, Template};
pub use operator::{ExistingPassword, ensure_account, is_trusted};
use passwords::DUMMY_HASH;
pub use passwords::{Password, hash_password, verify_password};

/// A normalised email: trimmed, lower-cased, one `@` with text on both
/// sides, a domain of at least two labels SMTP accepts, and as a whole an
/// address the mailer can send to as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub const MAX_CHARS: usize = 254;

    /// An address for a new account, or a new address for one: one the
    /// mailer can send to as written, or the account could never be
    /// confirmed (and `x<y@z>` would mail `y@z`).
    pub fn parse(raw: &str) -> Result<Self, AccountError> {
        let EmailToFind(email) = EmailToFind::parse(raw)?;
        // ASCII throughout: without SMTPUTF8 (which few relays offer) the
        // envelope carries nothing else.
        let sendable = email.is_ascii()
            && email
                .split_once('@')
                .is_some_and(|(_, domain)| domain.split('.').all(is_label))
            && email.parse::<lettre::Address>().is_ok();
        if sendable {
            Ok(Self(email))
        } else {
            Err(AccountError::InvalidEmail)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An address typed to find an existing account (sign-in, "forgot
/// password", disabling an account), by the looser rules accounts were
/// once created under: an account made then is never locked out by the
/// stricter [`Email::parse`]. Only look-ups take it; nothing that creates
/// an account or sends mail to a new address does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailToFind(String);

impl EmailToFind {
    pub fn parse(raw: &str) -> Result<Self, AccountError> {
        let email = raw.trim().to_lowercase();
        let valid = email.chars().count() <= Email::MAX_CHARS
            && !email.chars().any(|c| c.is_whitespace() || c.is_control())
            && match email.split_once('@') {
                Some((local, domain)) => {
                    !local.is_empty()
                        && !domain.contains('@')
                        && domain.contains('.')
                        && !domain.starts_with('.')
                        && !domain.ends_with('.')
                }
                None => false,
            };
        if valid {
            Ok(Self(email))
        } else {
            Err(AccountError::InvalidEmail)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Every address an account can be made with can be looked up.
impl From<&Email> for EmailToFind {
    fn from(email: &Email) -> Self {
        Self(email.0.clone())
    }
}

impl std::fmt::Display for EmailToFind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One label of a mail domain as SMTP accepts it (RFC 5321: ASCII
/// letters, digits and inner hyphens, at most 63). Stricter than `lettre`,
/// which takes `_` (no mail host has one) and Unicode labels (which it
/// does not convert to punycode: a relay without SMTPUTF8 refuses them).
fn is_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && !label.starts_with('-')
        && !label.ends_with('-')
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl std::fmt::Display for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What other people see of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub const MAX_CHARS: usize = 80;

    pub fn parse(raw: &str) -> Result<Self, AccountError> {
        let name = raw.trim();
        let chars = name.chars().count();
        if (1..=Self::MAX_CHARS).contains(&chars) && !name.chars().any(char::is_control) {
            Ok(Self(name.to_owned()))
        } else {
            Err(AccountError::InvalidDisplayName)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A verified principal: who a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: AccountId,
    pub email: String,
    pub display_name: String,
    /// A link sent to `email` came back (or the operator vouched for it).
    pub email_verified: bool,
}

/// The proof of a successful sign-in: who signed in, and the session epoch
/// the new session must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    pub principal: Principal,
    pub session_epoch: i64,
}

/// Inserts an account the operator vouches for (bootstrap, demo): its
/// address verified, in the default language; `None` if the email is
/// taken. (People's accounts are made by their proved address:
/// [`signup`].)
async fn insert_account(
    conn: &mut PgConnection,
    email: &Email,
    display_name: &DisplayName,
    password_hash: &str,
) -> anyhow::Result<Option<AccountId>> {
    let inserted = sqlx::query_scalar!(
        r#"INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
           VALUES ($1, $2, $3, $4, now())
           ON CONFLICT (email) DO NOTHING
           RETURNING id"#,
        Uuid::now_v7(),
        email.as_str(),
        display_name.as_str(),
        password_hash,
    )
    .fetch_optional(conn)
    .await
    .context("inserting an account")?;
    Ok(inserted.map(AccountId))
}

/// Remembers the language `account` last signed in with: notices (a
/// receipt, an admin's unbind) are written in it.
pub async fn remember_lang(pool: &PgPool, account: AccountId, lang: Lang) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE accounts SET lang = $2 WHERE id = $1 AND lang <> $2",
        account.0,
        lang.tag(),
    )
    .execute(pool)
    .await
    .context("remembering an account's language")?;
    Ok(())
}

/// Checks an email and password. An unknown email spends the same argon2
/// time as a wrong password and gets the same error.
pub async fn authenticate(
    pool: &PgPool,
    email: &EmailToFind,
    password: &Password,
) -> Result<SignedIn, AccountError> {
    let row = sqlx::query!(
        r#"SELECT id, display_name, password_hash, session_epoch, disabled_at IS NOT NULL AS "disabled!",
                  email_verified_at IS NOT NULL AS "verified!"
           FROM accounts WHERE email = $1"#,
        email.as_str(),
    )
    .fetch_optional(pool)
    .await
    .context("reading an account to sign in")?;
    let Some(row) = row else {
        let _ = verify_password(password, DUMMY_HASH).await?;
        return Err(AccountError::InvalidCredentials);
    };
    if !verify_password(password, &row.password_hash).await? {
        return Err(AccountError::InvalidCredentials);
    }
    if row.disabled {
        return Err(AccountError::Disabled);
    }
    Ok(SignedIn {
        principal: Principal {
            id: AccountId(row.id),
            email: email.as_str().to_owned(),
            display_name: row.display_name,
            email_verified: row.verified,
        },
        session_epoch: row.session_epoch,
    })
}

/// The principal of a session that was signed in at `session_epoch`, if the
/// account still exists, is not disabled, and has not revoked its sessions
/// since.
pub async fn session_principal(
    pool: &PgPool,
    account: AccountId,
    session_epoch: i64,
) -> anyhow::Result<Option<Principal>> {
    let row = sqlx::query!(
        r#"SELECT email, display_name, email_verified_at IS NOT NULL AS "verified!" FROM accounts
           WHERE id = $1 AND disabled_at IS NULL AND session_epoch = $2"#,
        account.0,
        session_epoch,
    )
    .fetch_optional(pool)
    .await
    .context("reading a session's principal")?;
    Ok(row.map(|row| Principal {
        id: account,
        email: row.email,
        display_name: row.display_name,
        email_verified: row.verified,
    }))
}

/// "Sign out everywhere": invalidates every session of the account in one
/// atomic UPDATE, and ends an open change of address (someone who had the
/// session may have asked for it). Returns the new epoch.
pub async fn revoke_all_sessions(pool: &PgPool, account: AccountId) -> anyhow::Result<i64> {
    let mut tx = pool
        .begin()
        .await
        .context("starting a sign-out everywhere")?;
    let epoch = sqlx::query_scalar!(
        "UPDATE accounts SET session_epoch = session_epoch + 1 WHERE id = $1 RETURNING session_epoch",
        account.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("revoking an account's sessions")?;
    end_open_links(&mut tx, account, &["reset_password", "change_email"]).await?;
    tx.commit()
        .await
        .context("committing a sign-out everywhere")?;
    Ok(epoch)
}

/// Ends the account's open links of these purposes.
pub(crate) async fn end_open_links(
    conn: &mut PgConnection,
    account: AccountId,
    purposes: &[&str],
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE account_links SET used_at = now()
         WHERE account_id = $1 AND purpose = ANY($2) AND used_at IS NULL",
        account.0,
        purposes as &[&str],
    )
    .execute(conn)
    .await
    .context("ending open links")?;
    Ok(())
}

/// Replaces the password after checking the current one, and revokes every
/// session; open reset links die with the old password, and a notice is
/// mailed (in `lang`). Returns the new epoch, with which the caller may
/// re-stamp the session that asked (so only the *other* sessions end).
pub async fn change_password(
    pool: &PgPool,
    account: AccountId,
    current: &Password,
    new: &Password,
    lang: Lang,
) -> Result<i64, AccountError> {
    let stored: String = sqlx::query_scalar!(
        "SELECT password_hash FROM accounts WHERE id = $1 AND disabled_at IS NULL",
        account.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading the password hash")?
    .ok_or(AccountError::Disabled)?;
    if !verify_password(current, &stored).await? {
        return Err(AccountError::InvalidCredentials);
    }
    let hash = hash_password(new).await?;
    let mut tx = pool.begin().await.context("starting a password change")?;
    let epoch = set_password(&mut tx, account, &hash, lang).await?;
    tx.commit().await.context("committing the new password")?;
    Ok(epoch)
}

/// Stores a new password hash: every session ends (the epoch moves),
/// every open reset link and change of address dies (whoever knew the old
/// password may have asked for them), and the account is told by mail.
/// Returns the new epoch.
pub(super) async fn set_password(
    conn: &mut PgConnection,
    account: AccountId,
    hash: &str,
    lang: Lang,
) -> anyhow::Result<i64> {
    let row = sqlx::query!(
        "UPDATE accounts SET password_hash = $2, session_epoch = session_epoch + 1
         WHERE id = $1 RETURNING session_epoch, email, display_name",
        account.0,
        hash,
    )
    .fetch_one(&mut *conn)
    .await
    .context("storing the new password")?;
    end_open_links(&mut *conn, account, &["reset_password", "change_email"]).await?;
    mail::enqueue(
        conn,
        NewMail {
            tenant: None,
            account: Some(account),
            template: Template::PasswordChanged,
            to: &row.email,
            lang,
            params: json!({ "name": row.display_name }),
            link: None,
        },
    )
    .await?;
    Ok(row.session_epoch)
}

/// The account with this email, if any.
pub async fn find_by_email(
    pool: &PgPool,
    email: &EmailToFind,
) -> anyhow::Result<Option<AccountId>> {
    let id = sqlx::query_scalar!("SELECT id FROM accounts WHERE email = $1", email.as_str())
        .fetch_optional(pool)
        .await
        .context("finding an account by email")?;
    Ok(id.map(AccountId))
}

/// Disables an account: it can no longer sign in, and its sessions end.
pub async fn disable(pool: &PgPool, account: AccountId) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE accounts SET disabled_at = coalesce(disabled_at, now()), session_epoch = session_epoch + 1
         WHERE id = $1",
        account.0,
    )
    .execute(pool)
    .await
    .context("disabling an account")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised() {
        let email = Email::parse("  Ada.Lovelace@Example.COM ").expect("valid");
        assert_eq!(email.as_str(), "ada.lovelace@example.com");
    }

    #[test]
    fn an_account_made_under_the_older_rules_can_still_be_found() {
        for raw in ["a..b@example.com", "ada@exa_mple.com"] {
            assert!(Email::parse(raw).is_err(), "{raw:?} is no new address");
            assert_eq!(EmailToFind::parse(raw).expect("found").as_str(), raw);
        }
        assert!(EmailToFind::parse("not-an-email").is_err());
    }

    #[test]
    fn addresses_the_mailer_sends_to_are_accepted() {
        for raw in [
            "ada@example.com",
            "ada.lovelace+courses@mail.example.co.uk",
            "o'brien@example.ie",
            "ada@xn--bcher-kva.example",
            "ada@a-b.example",
        ] {
            assert!(Email::parse(raw).is_ok(), "{raw:?} should be accepted");
        }
    }

    #[test]
    fn malformed_emails_are_rejected() {
        for raw in [
            "",
            "   ",
            "no-at-sign",
            "@example.com",
            "a@b",
            "a@@example.com",
            "a b@example.com",
            "a@.example.com",
            "a@example.com.",
            // Not an address the mailer can send to as written.
            "ada<victim@example.com>",
            "\"ada\"<victim@example.com>",
            "a..b@example.com",
            ".a@example.com",
            "a,b@example.com",
            "ada@exa_mple.com",
            "ada@-example.com",
            "ada@example..com",
            "ada@example-.com",
            // Not ASCII: refused by a relay without SMTPUTF8 (and `lettre`
            // does not write a domain as punycode).
            "ada@bücher.example",
            "adä@example.com",
        ] {
            assert!(
                matches!(Email::parse(raw), Err(AccountError::InvalidEmail)),
                "{raw:?} should be rejected"
            );
        }
    }

    #[test]
    fn display_names_are_trimmed_and_bounded() {
        assert_eq!(DisplayName::parse("  Ada ").expect("valid").as_str(), "Ada");
        assert!(DisplayName::parse("   ").is_err());
        assert!(DisplayName::parse(&"x".repeat(81)).is_err());
        assert!(DisplayName::parse("bad\u{7}bell").is_err());
    }
}
