//! "Forgot password": a reset link mailed to the address, valid for 30
//! minutes and once; using it sets the new password, ends every session
//! and every other open reset link, proves the address, and mails a
//! notice.
//!
//! Whether the address has an account is never told: [`request_reset`]
//! answers the same for any address (the use case also spends the same
//! time on both, see `service::accounts::forgot_password`).

use anyhow::Context as _;
use model::Lang;
use serde_json::json;
use sqlx::PgPool;

use super::{
    AccountError, AccountId, EmailToFind, Password, hash_password,
    links::{LinkKey, LinkPurpose, LinkToken},
    set_password,
    verification::{use_link, write_link},
};
use crate::mail::{self, NewMail, Template};

/// Mails a reset link to `email` if an account (not disabled) has it;
/// does nothing otherwise. Older links keep working until one is used.
pub async fn request_reset(
    pool: &PgPool,
    links: &LinkKey,
    email: &EmailToFind,
    lang: Lang,
) -> anyhow::Result<()> {
    let mut tx = pool.begin().await.context("starting a reset request")?;
    let Some(account) = sqlx::query!(
        "SELECT id, display_name FROM accounts WHERE email = $1 AND disabled_at IS NULL",
        email.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("finding the account to reset")?
    else {
        return Ok(());
    };
    let id = AccountId(account.id);
    let link = write_link(
        &mut tx,
        links,
        id,
        LinkPurpose::ResetPassword,
        email.as_str(),
    )
    .await?;
    mail::enqueue(
        &mut tx,
        NewMail {
            tenant: None,
            account: Some(id),
            template: Template::ResetPassword,
            to: email.as_str(),
            lang,
            params: json!({ "name": account.display_name }),
            link: Some(link),
        },
    )
    .await?;
    tx.commit().await.context("committing a reset request")?;
    Ok(())
}

/// Uses a reset link: the account (still at the address the link was sent
/// to) gets `new` as its password; every session and every other reset
/// link ends; the address counts as verified; a notice goes out in
/// `lang`. Returns the account.
pub async fn reset(
    pool: &PgPool,
    token: &LinkToken,
    new: &Password,
    lang: Lang,
) -> Result<AccountId, AccountError> {
    let hash = hash_password(new).await?;
    let mut tx = pool.begin().await.context("starting a reset")?;
    let (account, email) = use_link(&mut tx, LinkPurpose::ResetPassword, token).await?;
    let current = sqlx::query!(
        r#"SELECT email, disabled_at IS NOT NULL AS "disabled!" FROM accounts WHERE id = $1 FOR UPDATE"#,
        account.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("reading the account to reset")?;
    if current.email != email {
        return Err(AccountError::LinkInvalid);
    }
    if current.disabled {
        return Err(AccountError::Disabled);
    }
    set_password(&mut tx, account, &hash, lang).await?;
    sqlx::query!(
        "UPDATE accounts SET email_verified_at = coalesce(email_verified_at, now()) WHERE id = $1",
        account.0,
    )
    .execute(&mut *tx)
    .await
    .context("marking the address verified")?;
    tx.commit().await.context("committing a reset")?;
    Ok(account)
}
