//! Accounts the operator vouches for: `server admin create-tenant`'s
//! owner and the local demo seed. Apart from the accounts people make for
//! themselves because the rules differ: the operator's accounts start
//! verified, and whether an existing account may be handed a tenant is
//! decided here, in one place.

use anyhow::Context as _;
use sqlx::PgPool;

use super::{AccountError, AccountId, DisplayName, Email, Password, hash_password, insert_account};

/// Whether the operator may hand `account` a tenant (`server admin
/// create-tenant` naming an email that already has an account).
///
/// Anyone can register any address, so an existing account proves nothing
/// about who holds it until a link mailed to it came back: only an
/// account with a verified address is trusted (accounts the operator
/// created, or made admins before addresses were verified, count as
/// verified). The bootstrap's rule lives here, in one place.
pub async fn is_trusted(pool: &PgPool, account: AccountId) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT email_verified_at IS NOT NULL AS "verified!" FROM accounts WHERE id = $1"#,
        account.0,
    )
    .fetch_optional(pool)
    .await
    .context("checking whether an account is trusted")
    .map(|verified| verified.unwrap_or(false))
}

/// What [`ensure_account`] does when the email already has an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExistingPassword {
    /// Leave the existing password alone (operator bootstrap).
    Keep,
    /// Replace it (the local demo seed, so its printed credentials work).
    Reset,
}

/// Creates the account for `email` (its address vouched for by the
/// operator: verified), or returns the existing one. Returns the id and
/// whether it was created.
pub async fn ensure_account(
    pool: &PgPool,
    email: &Email,
    display_name: &DisplayName,
    password: &Password,
    existing: ExistingPassword,
) -> Result<(AccountId, bool), AccountError> {
    let hash = hash_password(password).await?;
    let mut conn = pool.acquire().await.context("connecting")?;
    if let Some(id) = insert_account(&mut conn, email, display_name, &hash).await? {
        return Ok((id, true));
    }
    let id = match existing {
        ExistingPassword::Keep => {
            sqlx::query_scalar!("SELECT id FROM accounts WHERE email = $1", email.as_str())
                .fetch_one(&mut *conn)
                .await
                .context("reading an existing account")?
        }
        ExistingPassword::Reset => sqlx::query_scalar!(
            "UPDATE accounts SET password_hash = $2, disabled_at = NULL,
                    email_verified_at = coalesce(email_verified_at, now())
             WHERE email = $1 RETURNING id",
            email.as_str(),
            hash,
        )
        .fetch_one(&mut *conn)
        .await
        .context("resetting an existing account's password")?,
    };
    Ok((AccountId(id), false))
}
