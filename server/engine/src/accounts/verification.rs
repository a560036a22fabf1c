//! Proving an address: the link "send again" mails to an account made
//! before registration started from the address (an account registered
//! since is made by its proved address, `super::signup`), and moving an
//! account to a new address, which is proved the same way before the
//! account moves (the old address is told).
//!
//! A verification link proves only the address it was sent to: if the
//! account has moved to another address since, the link does nothing.

use anyhow::Context as _;
use model::Lang;
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    AccountError, AccountId, Email, Password,
    links::{LinkKey, LinkPurpose, LinkToken},
    verify_password,
};
use crate::mail::{self, NewMail, Template};

/// Writes a link of `purpose` for `account` to `email`, valid for the
/// purpose's lifetime. Returns its id (the mail derives the link from it).
pub(super) async fn write_link(
    conn: &mut PgConnection,
    links: &LinkKey,
    account: AccountId,
    purpose: LinkPurpose,
    email: &str,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO account_links (id, account_id, purpose, email, digest, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))",
        id,
        account.0,
        purpose.as_str(),
        email,
        links.digest_of(purpose, id),
        purpose.lifetime().as_seconds_f64(),
    )
    .execute(conn)
    .await
    .with_context(|| format!("writing a {} link", purpose.as_str()))?;
    Ok(id)
}

/// Uses a link of `purpose`: marks it used if it is open (unused, not
/// expired) and returns its account and address. Works once.
pub(super) async fn use_link(
    conn: &mut PgConnection,
    purpose: LinkPurpose,
    token: &LinkToken,
) -> Result<(AccountId, String), AccountError> {
    let row = sqlx::query!(
        "UPDATE account_links SET used_at = now()
         WHERE digest = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
         RETURNING account_id, email",
        token.digest(),
        purpose.as_str(),
    )
    .fetch_optional(conn)
    .await
    .with_context(|| format!("using a {} link", purpose.as_str()))?;
    row.map(|r| (AccountId(r.account_id), r.email))
        .ok_or(AccountError::LinkInvalid)
}

/// Whether a link of `purpose` is open (the page shows its form only then).
pub async fn link_is_open(
    pool: &PgPool,
    purpose: LinkPurpose,
    token: &LinkToken,
) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
             SELECT 1 FROM account_links
             WHERE digest = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
           ) AS "open!""#,
        token.digest(),
        purpose.as_str(),
    )
    .fetch_one(pool)
    .await
    .context("checking a link")
}

/// Queues the verification mail for `account` at `email`, inside the
/// caller's transaction ("send again").
pub(super) async fn send_link(
    conn: &mut PgConnection,
    links: &LinkKey,
    account: AccountId,
    email: &str,
    name: &str,
    lang: Lang,
) -> anyhow::Result<()> {
    let link = write_link(conn, links, account, LinkPurpose::VerifyEmail, email).await?;
    mail::enqueue(
        conn,
        NewMail {
            tenant: None,
            account: Some(account),
            template: Template::VerifyEmail,
            to: email,
            lang,
            params: json!({ "name": name }),
            link: Some(link),
        },
    )
    .await?;
    Ok(())
}

/// What "send again" did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resent {
    Sent,
    /// The address is verified already: nothing to send.
    AlreadyVerified,
}

/// Mails a new verification link (older ones keep working until they
/// expire: whichever arrives first may be used).
pub async fn resend(
    pool: &PgPool,
    links: &LinkKey,
    account: AccountId,
    lang: Lang,
) -> Result<Resent, AccountError> {
    let mut tx = pool.begin().await.context("starting a resend")?;
    let row = sqlx::query!(
        r#"SELECT email, display_name, email_verified_at IS NOT NULL AS "verified!"
           FROM accounts WHERE id = $1 AND disabled_at IS NULL"#,
        account.0,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading the account to verify")?
    .ok_or(AccountError::Disabled)?;
    if row.verified {
        return Ok(Resent::AlreadyVerified);
    }
    send_link(&mut tx, links, account, &row.email, &row.display_name, lang).await?;
    tx.commit().await.context("committing a resend")?;
    Ok(Resent::Sent)
}

/// Uses a verification link: the account's address is verified, if it is
/// still the address the link was sent to.
pub async fn verify(pool: &PgPool, token: &LinkToken) -> Result<AccountId, AccountError> {
    let mut tx = pool.begin().await.context("starting a verification")?;
    let (account, email) = use_link(&mut tx, LinkPurpose::VerifyEmail, token).await?;
    let verified = sqlx::query!(
        "UPDATE accounts SET email_verified_at = coalesce(email_verified_at, now())
         WHERE id = $1 AND email = $2 AND disabled_at IS NULL",
        account.0,
        email,
    )
    .execute(&mut *tx)
    .await
    .context("verifying an address")?;
    if verified.rows_affected() == 0 {
        // Rolled back: the link stays as it was (it can never succeed).
        return Err(AccountError::LinkInvalid);
    }
    tx.commit().await.context("committing a verification")?;
    Ok(account)
}

/// Starts moving `account` to `new`: checks the current password, then
/// mails the new address a link (in `lang`) and tells the current address
/// (if someone else asked, they change the password, which ends the link);
/// a newer request replaces an open one. The account keeps its address
/// until the link comes back.
pub async fn request_change(
    pool: &PgPool,
    links: &LinkKey,
    account: AccountId,
    current: &Password,
    new: &Email,
    lang: Lang,
) -> Result<(), AccountError> {
    let row = sqlx::query!(
        "SELECT email, display_name, password_hash FROM accounts WHERE id = $1 AND disabled_at IS NULL",
        account.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading the account")?
    .ok_or(AccountError::Disabled)?;
    if !verify_password(current, &row.password_hash).await? {
        return Err(AccountError::InvalidCredentials);
    }
    if row.email == new.as_str() {
        return Err(AccountError::SameEmail);
    }
    if super::find_by_email(pool, &new.into()).await?.is_some() {
        return Err(AccountError::EmailTaken);
    }
    let mut tx = pool.begin().await.context("starting a change of address")?;
    super::end_open_links(&mut tx, account, &["change_email"]).await?;
    let link = write_link(
        &mut tx,
        links,
        account,
        LinkPurpose::ChangeEmail,
        new.as_str(),
    )
    .await?;
    mail::enqueue(
        &mut tx,
        NewMail {
            tenant: None,
            account: Some(account),
            template: Template::ChangeEmail,
            to: new.as_str(),
            lang,
            params: json!({ "name": row.display_name, "old_email": row.email }),
            link: Some(link),
        },
    )
    .await?;
    mail::enqueue(
        &mut tx,
        NewMail {
            tenant: None,
            account: Some(account),
            template: Template::EmailChangeRequested,
            to: &row.email,
            lang,
            params: json!({ "name": row.display_name, "new_email": new.as_str() }),
            link: None,
        },
    )
    .await?;
    tx.commit()
        .await
        .context("committing a change of address")?;
    Ok(())
}

/// Uses a change-of-address link: the account moves to the new address
/// (verified: the link came back from it), every other open link of the
/// account dies (they were mailed to the old address), and the old
/// address is told. Returns the account and its new address.
pub async fn confirm_change(
    pool: &PgPool,
    token: &LinkToken,
) -> Result<(AccountId, String), AccountError> {
    let mut tx = pool.begin().await.context("starting a change of address")?;
    let (account, new) = use_link(&mut tx, LinkPurpose::ChangeEmail, token).await?;
    let old = sqlx::query!(
        "SELECT email, display_name, lang FROM accounts WHERE id = $1 AND disabled_at IS NULL FOR UPDATE",
        account.0,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading the account to move")?
    .ok_or(AccountError::Disabled)?;
    let moved = sqlx::query!(
        "UPDATE accounts SET email = $2, email_verified_at = now() WHERE id = $1",
        account.0,
        new,
    )
    .execute(&mut *tx)
    .await;
    match moved {
        Ok(_) => {}
        // Someone registered the address since the request.
        Err(error)
            if error
                .as_database_error()
                .is_some_and(|e| e.kind() == sqlx::error::ErrorKind::UniqueViolation) =>
        {
            return Err(AccountError::EmailTaken);
        }
        Err(error) => {
            return Err(anyhow::Error::new(error)
                .context("moving the account")
                .into());
        }
    }
    super::end_open_links(
        &mut tx,
        account,
        &["verify_email", "reset_password", "change_email"],
    )
    .await?;
    mail::enqueue(
        &mut tx,
        NewMail {
            tenant: None,
            account: Some(account),
            template: Template::EmailChanged,
            to: &old.email,
            lang: Lang::parse(&old.lang).unwrap_or_default(),
            params: json!({ "name": old.display_name, "new_email": new }),
            link: None,
        },
    )
    .await?;
    tx.commit()
        .await
        .context("committing a change of address")?;
    Ok((account, new))
}
