//! Registration from an address alone, so that the form tells nobody
//! whether an address has an account.
//!
//! [`request`] is all the registration form does: whatever the address,
//! the person is told "we sent you a mail". What the mail says is what
//! differs, and only the address's owner reads it:
//!
//! * an address without an account gets a link to finish one (name and
//!   password), a [`LinkPurpose::SignUp`] link valid for a day;
//! * an address with an account gets a note saying so, with the ways to
//!   sign in or reset the password; nothing changes (a disabled account's
//!   address gets nothing: it cannot sign in).
//!
//! No account exists until the link comes back ([`finish`]), so the
//! address is proved before anyone chose a password for it: nobody can
//! create an account at somebody else's address and wait for its owner to
//! confirm it. An account made under the earlier rules that never proved
//! its address (and is not disabled) counts as no account: the owner of
//! the address, by finishing a link, takes it over with a password of
//! their own, and every session of whoever registered it ends.

use anyhow::Context as _;
use model::Lang;
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    AccountError, AccountId, DisplayName, Email, Password, Principal, SignedIn, hash_password,
    links::{LinkKey, LinkPurpose, LinkToken},
};
use crate::mail::{self, NewMail, Template};

/// Which mail a registration sent (the person who asked is told the same
/// either way; this is for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// A link to finish the account went to the address.
    LinkSent,
    /// The address has an account: its owner was told so.
    OwnerTold,
    /// The address's account is disabled: no mail.
    Nothing,
}

/// Mails `email` either a link to finish an account (in `lang`, coming
/// back to `next`) or, if the address has an account, a note to its owner
/// (in the account's language). `next` must be a path on this site
/// (the caller checks it; the table refuses anything else).
pub async fn request(
    pool: &PgPool,
    links: &LinkKey,
    email: &Email,
    lang: Lang,
    next: Option<&str>,
) -> anyhow::Result<Requested> {
    let mut tx = pool.begin().await.context("starting a registration")?;
    let owner = sqlx::query!(
        r#"SELECT id, display_name, lang,
                  email_verified_at IS NOT NULL OR disabled_at IS NOT NULL AS "kept!",
                  disabled_at IS NOT NULL AS "disabled!"
           FROM accounts WHERE email = $1"#,
        email.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("looking up the address to register")?;
    let requested = match owner {
        Some(owner) if owner.disabled => Requested::Nothing,
        Some(owner) if owner.kept => {
            mail::enqueue(
                &mut tx,
                NewMail {
                    tenant: None,
                    account: Some(AccountId(owner.id)),
                    template: Template::AccountExists,
                    to: email.as_str(),
                    lang: Lang::parse(&owner.lang).unwrap_or_default(),
                    params: json!({ "name": owner.display_name }),
                    link: None,
                },
            )
            .await?;
            Requested::OwnerTold
        }
        _ => {
            let id = Uuid::now_v7();
            sqlx::query!(
                "INSERT INTO signup_links (id, email, lang, next_path, digest, expires_at)
                 VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))",
                id,
                email.as_str(),
                lang.tag(),
                next,
                links.digest_of(LinkPurpose::SignUp, id),
                LinkPurpose::SignUp.lifetime().as_seconds_f64(),
            )
            .execute(&mut *tx)
            .await
            .context("writing a signup link")?;
            mail::enqueue(
                &mut tx,
                NewMail {
                    tenant: None,
                    account: None,
                    template: Template::SignUp,
                    to: email.as_str(),
                    lang,
                    params: json!({}),
                    link: Some(id),
                },
            )
            .await?;
            Requested::LinkSent
        }
    };
    tx.commit().await.context("committing a registration")?;
    Ok(requested)
}

/// What an open signup link is for (its page shows the address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSignup {
    pub email: String,
}

/// The address an open signup link (unused, unexpired) is for.
pub async fn open_link(pool: &PgPool, token: &LinkToken) -> anyhow::Result<Option<OpenSignup>> {
    let email = sqlx::query_scalar!(
        "SELECT email FROM signup_links
         WHERE digest = $1 AND used_at IS NULL AND expires_at > now()",
        token.digest(),
    )
    .fetch_optional(pool)
    .await
    .context("reading a signup link")?;
    Ok(email.map(|email| OpenSignup { email }))
}

/// A finished registration: who signed up, and where they were going.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub signed_in: SignedIn,
    /// The path the person registered from (`None`: the home page).
    pub next: Option<String>,
}

/// Uses a signup link: the account at its address is made, verified, with
/// `name` and `password`, in the language registration asked in. Every
/// other open signup link of the address ends. Works once.
///
/// An unverified, not disabled account at the address (made before
/// registration started from the address) is taken over: it gets the name
/// and the password, is verified, and whatever its registrant left open
/// ends (its sessions, its mailed links, the moves of its codes it asked
/// for). An address whose account is verified or disabled by now is
/// [`AccountError::EmailTaken`], and the link stays as it was (it can
/// never succeed).
///
/// Finishes of one address take turns (a transaction-scoped advisory lock
/// on the address): two links of it finished at once would otherwise each
/// wait for the other's rows.
pub async fn finish(
    pool: &PgPool,
    token: &LinkToken,
    name: &DisplayName,
    password: &Password,
) -> Result<Finished, AccountError> {
    // A dead link is told at once, without the argon2 work.
    let email = open_link(pool, token)
        .await?
        .ok_or(AccountError::LinkInvalid)?
        .email;
    let hash = hash_password(password).await?;
    let mut tx = pool
        .begin()
        .await
        .context("starting to finish a registration")?;
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('signup:' || $1, 0))",
        email,
    )
    .execute(&mut *tx)
    .await
    .context("taking the address's turn")?;
    let link = sqlx::query!(
        "UPDATE signup_links SET used_at = now()
         WHERE digest = $1 AND used_at IS NULL AND expires_at > now()
         RETURNING email, lang, next_path",
        token.digest(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("using a signup link")?
    .ok_or(AccountError::LinkInvalid)?;
    let account = sqlx::query!(
        r#"INSERT INTO accounts (id, email, display_name, password_hash, lang, email_verified_at)
           VALUES ($1, $2, $3, $4, $5, now())
           ON CONFLICT (email) DO UPDATE
               SET display_name = EXCLUDED.display_name,
                   password_hash = EXCLUDED.password_hash,
                   lang = EXCLUDED.lang,
                   email_verified_at = now(),
                   session_epoch = accounts.session_epoch + 1
               WHERE accounts.email_verified_at IS NULL AND accounts.disabled_at IS NULL
           RETURNING id, session_epoch, (xmax = 0) AS "made!""#,
        Uuid::now_v7(),
        link.email,
        name.as_str(),
        hash,
        link.lang,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("making the account")?
    // Rolled back: the link stays open, and can never succeed.
    .ok_or(AccountError::EmailTaken)?;
    sqlx::query!(
        "UPDATE signup_links SET used_at = now() WHERE email = $1 AND used_at IS NULL",
        link.email,
    )
    .execute(&mut *tx)
    .await
    .context("ending the address's other signup links")?;
    if !account.made {
        end_registrants_leftovers(&mut tx, AccountId(account.id)).await?;
        tracing::info!(account = %account.id, "an unverified account was taken over by its address");
    }
    tx.commit()
        .await
        .context("committing a finished registration")?;
    Ok(Finished {
        signed_in: SignedIn {
            principal: Principal {
                id: AccountId(account.id),
                email: link.email,
                display_name: name.as_str().to_owned(),
                email_verified: true,
            },
            session_epoch: account.session_epoch,
        },
        next: link.next_path,
    })
}

/// What whoever registered a taken-over account left open ends with it:
/// its mailed links (a verification, a reset, a change of address) and
/// the moves of its codes it asked for that wait for their target or an
/// admin (its codes are the address owner's now). Its sessions end by the
/// epoch the takeover moved.
async fn end_registrants_leftovers(
    conn: &mut PgConnection,
    account: AccountId,
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE account_links SET used_at = now() WHERE account_id = $1 AND used_at IS NULL",
        account.0,
    )
    .execute(&mut *conn)
    .await
    .context("ending a taken-over account's links")?;
    sqlx::query!(
        "UPDATE transfer_requests SET status = 'cancelled', decided_at = now(), decided_by = $1
         WHERE from_account = $1 AND status IN ('awaiting_target', 'awaiting_admin')",
        account.0,
    )
    .execute(&mut *conn)
    .await
    .context("cancelling a taken-over account's transfer requests")?;
    Ok(())
}
