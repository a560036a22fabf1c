//! Accounts: register, sign in, change password, and the account's life by
//! mail: verify the address ("send again"), "forgot password" and the
//! reset, change of address. Parsing, throttling and the session are the
//! use case's; passwords, hashing, links, the epoch and the mails are the
//! engine's (`engine::accounts`).
//!
//! Every form that sends mail or takes a mailed link is throttled per
//! client IP; the ones that send mail to an address also per address or
//! per account, so nobody can flood a mailbox.

use std::net::IpAddr;

use engine::{
    accounts::{
        self, AccountError, AccountId, DisplayName, Email, EmailToFind, Password, Principal,
        links::{LinkPurpose, LinkToken},
        recovery, signup,
        verification::{self, Resent},
    },
    coordination::ThrottleScope,
    throttle::Limit,
};
use model::Lang;
use secrecy::SecretString;
use tower_sessions::Session;
use tracing::Instrument as _;

use crate::{ServiceError, Services, session, throttle};

/// Starts a registration: `email` is mailed either a link to finish an
/// account or, if it has one, a note to its owner. The answer is the same
/// either way, after the same work: only the address's shape is checked
/// and the throttles counted (per IP, per mailbox: each registration mails
/// it, and as a form that sends mail, per IP again) before answering; the
/// look-up and the mail happen after the answer, in a task of their own,
/// so neither the answer nor its timing tells whether the address has an
/// account (as [`forgot_password`]).
///
/// `next` (a path on this site; anything else is dropped) is where the
/// finished link goes: kept with the link when it is a bare path (a
/// course's page), else only in `session`, the registering browser's (an
/// invitation's or a transfer's path carries its link's secret, which is
/// never stored).
#[tracing::instrument(name = "register", skip_all)]
pub async fn register(
    services: &Services,
    session: Option<&Session>,
    ip: IpAddr,
    email: &str,
    next: Option<&str>,
    lang: Lang,
) -> Result<(), ServiceError> {
    let email = Email::parse(email)?;
    let next = next.filter(|next| model::is_local_path(next));
    throttle::hit_ip(
        services,
        ThrottleScope::RegisterIp,
        ip,
        services.auth.register_per_ip,
    )
    .await?;
    throttle::hit(
        services,
        ThrottleScope::RegisterEmail,
        &mailbox(&email),
        services.auth.register_per_email,
    )
    .await?;
    mail_ip(services, ip).await?;
    if let (Some(session), Some(next)) = (session, next) {
        session::remember_registration_next(session, email.as_str(), next).await?;
    }
    let stored_next = next.filter(|next| !next.contains('?')).map(str::to_owned);
    let (pool, links) = (services.pool.clone(), services.links.clone());
    tokio::spawn(
        async move {
            match signup::request(&pool, &links, &email, lang, stored_next.as_deref()).await {
                Ok(requested) => tracing::info!(?requested, "registration mailed"),
                // The person was told to look in their mailbox; nothing
                // arrives, and the form says to register again then.
                Err(error) => tracing::error!(
                    error = format!("{error:#}"),
                    "a registration failed: no mail was queued"
                ),
            }
        }
        .in_current_span(),
    );
    Ok(())
}

/// The mailbox an address reaches, for counting what is sent to it: its
/// `+tag` dropped (`ada+1@example.com` and `ada+2@example.com` are one
/// mailbox at most providers), so a stranger cannot multiply one
/// mailbox's limit by tagging its address.
fn mailbox(email: &Email) -> String {
    let (local, domain) = email
        .as_str()
        .split_once('@')
        .unwrap_or((email.as_str(), ""));
    let local = local.split_once('+').map_or(local, |(base, _)| base);
    format!("{local}@{domain}")
}

/// Who an open signup link is for (`None`: unknown, used or expired);
/// its page shows the form only then.
pub async fn signup_link(services: &Services, token: &str) -> Result<Option<String>, ServiceError> {
    let Some(token) = LinkToken::parse(token) else {
        return Ok(None);
    };
    Ok(signup::open_link(&services.pool, &token)
        .await?
        .map(|open| open.email))
}

/// What the form a signup link opens carries.
#[derive(Debug)]
pub struct FinishRegistration {
    pub token: String,
    pub display_name: String,
    pub password: String,
    /// `None` for API callers (no second field to compare).
    pub password_confirm: Option<String>,
}

/// Finishes a registration with its mailed link: the account is made (its
/// address proved by the link) and `session` signed in as it. Returns who
/// signed in and the path they registered from. Malformed input is
/// refused before anything is counted; the link is throttled per IP like
/// every mailed link.
#[tracing::instrument(name = "finish_registration", skip_all)]
pub async fn finish_registration(
    services: &Services,
    session: &Session,
    ip: IpAddr,
    form: FinishRegistration,
) -> Result<(Principal, Option<String>), ServiceError> {
    let token = link_token(&form.token)?;
    let display_name = DisplayName::parse(&form.display_name)?;
    if form.password_confirm.is_some_and(|c| c != form.password) {
        return Err(ServiceError::PasswordsDiffer);
    }
    let password = Password::parse(SecretString::from(form.password))?;
    mail_ip(services, ip).await?;
    let finished = signup::finish(&services.pool, &token, &display_name, &password).await?;
    let here =
        session::take_registration_next(session, &finished.signed_in.principal.email).await?;
    session::sign_in(session, &finished.signed_in).await?;
    Ok((finished.signed_in.principal, here.or(finished.next)))
}

/// Checks the credentials and signs `session` in; the account's notices
/// are written in `lang` from now on. Throttled per client network, per
/// email from that network (a stranger's wrong tries cost the owner
/// nothing), and per email from anywhere at [`throttle::EMAIL_NETWORKS`]
/// times that (guessing from many networks at once still stops).
#[tracing::instrument(name = "login", skip_all)]
pub async fn login(
    services: &Services,
    session: &Session,
    ip: IpAddr,
    email: &str,
    password: String,
    lang: Lang,
) -> Result<Principal, ServiceError> {
    let email = EmailToFind::parse(email)?;
    throttle::hit_ip(
        services,
        ThrottleScope::SignInIp,
        ip,
        services.auth.sign_in_per_ip,
    )
    .await?;
    throttle::hit(
        services,
        ThrottleScope::SignInEmailNetwork,
        &engine::throttle::email_network_subject(email.as_str(), ip),
        services.auth.sign_in_per_email,
    )
    .await?;
    let anywhere = services.auth.sign_in_per_email;
    throttle::hit(
        services,
        ThrottleScope::SignInEmail,
        email.as_str(),
        Limit {
            max: anywhere.max.saturating_mul(throttle::EMAIL_NETWORKS),
            ..anywhere
        },
    )
    .await?;
    // A password outside the policy cannot be anyone's: same answer as a
    // wrong one.
    let password = Password::parse(SecretString::from(password))
        .map_err(|_| AccountError::InvalidCredentials)?;
    let signed_in = accounts::authenticate(&services.pool, &email, &password).await?;
    session::sign_in(session, &signed_in).await?;
    // Best effort: a signed-in session is not undone for it.
    if let Err(error) = accounts::remember_lang(&services.pool, signed_in.principal.id, lang).await
    {
        tracing::warn!(error = format!("{error:#}"), "remembering a language");
    }
    // Answer from what authentication read: if a concurrent "sign out
    // everywhere" just revoked this session, the next request says so.
    Ok(signed_in.principal)
}

/// What a password change form carries.
#[derive(Debug)]
pub struct PasswordChange {
    pub current_password: String,
    pub new_password: String,
    pub new_password_confirm: String,
}

/// Changes `principal`'s password and returns the account's new session
/// epoch (the caller re-stamps its own session with it; every other one
/// ends). Throttled per account and per IP with the sign-in limits: every
/// attempt costs an argon2 verification, and it is a guess at the current
/// password by whoever holds the session. Malformed input is refused
/// before anything is counted.
#[tracing::instrument(name = "change_password", skip_all, fields(principal = %principal.id.0))]
pub async fn change_password(
    services: &Services,
    principal: &Principal,
    ip: IpAddr,
    form: PasswordChange,
    lang: Lang,
) -> Result<i64, ServiceError> {
    if form.new_password != form.new_password_confirm {
        return Err(ServiceError::NewPasswordsDiffer);
    }
    let new = Password::parse(SecretString::from(form.new_password))
        .map_err(ServiceError::InvalidNewPassword)?;
    throttle::hit(
        services,
        ThrottleScope::PasswordChangeAccount,
        &principal.id.0.to_string(),
        services.auth.sign_in_per_email,
    )
    .await?;
    throttle::hit_ip(
        services,
        ThrottleScope::PasswordChangeIp,
        ip,
        services.auth.sign_in_per_ip,
    )
    .await?;
    let current = Password::parse(SecretString::from(form.current_password))
        .map_err(|_| ServiceError::WrongCurrentPassword)?;
    accounts::change_password(&services.pool, principal.id, &current, &new, lang)
        .await
        .map_err(|e| match e {
            AccountError::InvalidCredentials => ServiceError::WrongCurrentPassword,
            other => other.into(),
        })
}

/// Signs `principal` out on every device (the account's session epoch
/// moves in one atomic UPDATE), `session` included.
#[tracing::instrument(name = "sign_out_everywhere", skip_all, fields(principal = %principal.id.0))]
pub async fn sign_out_everywhere(
    services: &Services,
    session: &Session,
    principal: &Principal,
) -> Result<(), ServiceError> {
    accounts::revoke_all_sessions(&services.pool, principal.id).await?;
    session::sign_out(session).await
}

/// Counts one use of a form that sends mail or takes a mailed link, from `ip`.
async fn mail_ip(services: &Services, ip: IpAddr) -> Result<(), ServiceError> {
    throttle::hit_ip(
        services,
        ThrottleScope::MailIp,
        ip,
        services.auth.mail_per_ip,
    )
    .await
}

/// Counts one mail `account` asks for.
async fn mail_account(services: &Services, account: AccountId) -> Result<(), ServiceError> {
    throttle::hit(
        services,
        ThrottleScope::MailAccount,
        &account.0.to_string(),
        services.auth.mail_per_account,
    )
    .await
}

/// A link's secret as it came back: junk is the same as an expired link.
fn link_token(raw: &str) -> Result<LinkToken, ServiceError> {
    LinkToken::parse(raw).ok_or(ServiceError::Account(AccountError::LinkInvalid))
}

/// "Send the verification mail again" (throttled per account and per IP).
#[tracing::instrument(name = "resend_verification", skip_all, fields(principal = %principal.id.0))]
pub async fn resend_verification(
    services: &Services,
    principal: &Principal,
    ip: IpAddr,
    lang: Lang,
) -> Result<Resent, ServiceError> {
    if principal.email_verified {
        return Ok(Resent::AlreadyVerified);
    }
    mail_account(services, principal.id).await?;
    mail_ip(services, ip).await?;
    Ok(verification::resend(&services.pool, &services.links, principal.id, lang).await?)
}

/// Uses a verification link (throttled per IP: the link is the secret).
#[tracing::instrument(name = "verify_email", skip_all)]
pub async fn verify_email(
    services: &Services,
    ip: IpAddr,
    token: &str,
) -> Result<AccountId, ServiceError> {
    let token = link_token(token)?;
    mail_ip(services, ip).await?;
    Ok(verification::verify(&services.pool, &token).await?)
}

/// "Forgot password": the same answer, after the same work, whether the
/// address has an account or not. Only the address's shape is checked and
/// the throttles counted (per address and per IP) before answering; the
/// look-up, the link and the mail happen after the answer, in a task of
/// their own, so neither the answer nor its timing tells whether an
/// account exists.
#[tracing::instrument(name = "forgot_password", skip_all)]
pub async fn forgot_password(
    services: &Services,
    ip: IpAddr,
    email: &str,
    lang: Lang,
) -> Result<(), ServiceError> {
    let email = EmailToFind::parse(email)?;
    throttle::hit(
        services,
        ThrottleScope::ResetEmail,
        email.as_str(),
        services.auth.reset_per_email,
    )
    .await?;
    mail_ip(services, ip).await?;
    let (pool, links) = (services.pool.clone(), services.links.clone());
    tokio::spawn(async move {
        if let Err(error) = recovery::request_reset(&pool, &links, &email, lang).await {
            tracing::error!(
                error = format!("{error:#}"),
                "a password reset request failed"
            );
        }
    });
    Ok(())
}

/// Whether a reset link is still open (the reset page shows its form then).
pub async fn reset_link_is_open(services: &Services, token: &str) -> Result<bool, ServiceError> {
    let Some(token) = LinkToken::parse(token) else {
        return Ok(false);
    };
    Ok(verification::link_is_open(&services.pool, LinkPurpose::ResetPassword, &token).await?)
}

/// What the reset form carries.
#[derive(Debug)]
pub struct PasswordReset {
    pub token: String,
    pub new_password: String,
    pub new_password_confirm: String,
}

/// Uses a reset link: the new password is set, every session of the
/// account ends, and a notice goes out (in `lang`). Throttled per IP.
#[tracing::instrument(name = "reset_password", skip_all)]
pub async fn reset_password(
    services: &Services,
    ip: IpAddr,
    form: PasswordReset,
    lang: Lang,
) -> Result<AccountId, ServiceError> {
    let token = link_token(&form.token)?;
    if form.new_password != form.new_password_confirm {
        return Err(ServiceError::NewPasswordsDiffer);
    }
    let new = Password::parse(SecretString::from(form.new_password))
        .map_err(ServiceError::InvalidNewPassword)?;
    mail_ip(services, ip).await?;
    Ok(recovery::reset(&services.pool, &token, &new, lang).await?)
}

/// What the change-of-address form carries.
#[derive(Debug)]
pub struct EmailChange {
    pub current_password: String,
    pub new_email: String,
}

/// Starts moving `principal` to a new address: the current password is
/// checked (throttled like a password change: it is a guess at it), and
/// the new address gets a link. Throttled per account and per IP.
#[tracing::instrument(name = "change_email", skip_all, fields(principal = %principal.id.0))]
pub async fn change_email(
    services: &Services,
    principal: &Principal,
    ip: IpAddr,
    form: EmailChange,
    lang: Lang,
) -> Result<(), ServiceError> {
    let new = Email::parse(&form.new_email).map_err(|_| ServiceError::InvalidNewEmail)?;
    throttle::hit(
        services,
        ThrottleScope::PasswordChangeAccount,
        &principal.id.0.to_string(),
        services.auth.sign_in_per_email,
    )
    .await?;
    mail_account(services, principal.id).await?;
    mail_ip(services, ip).await?;
    let current = Password::parse(SecretString::from(form.current_password))
        .map_err(|_| ServiceError::WrongCurrentPassword)?;
    verification::request_change(
        &services.pool,
        &services.links,
        principal.id,
        &current,
        &new,
        lang,
    )
    .await
    .map_err(|e| match e {
        AccountError::InvalidCredentials => ServiceError::WrongCurrentPassword,
        AccountError::EmailTaken => ServiceError::NewEmailTaken,
        other => other.into(),
    })
}

/// Uses a change-of-address link. Returns the new address.
#[tracing::instrument(name = "confirm_email_change", skip_all)]
pub async fn confirm_email_change(
    services: &Services,
    ip: IpAddr,
    token: &str,
) -> Result<String, ServiceError> {
    let token = link_token(token)?;
    mail_ip(services, ip).await?;
    let (_, email) = verification::confirm_change(&services.pool, &token)
        .await
        .map_err(|e| match e {
            AccountError::EmailTaken => ServiceError::NewEmailTaken,
            other => other.into(),
        })?;
    Ok(email)
}

#[cfg(test)]
mod tests {
    use engine::accounts::Email;

    use super::mailbox;

    #[test]
    fn a_tagged_address_counts_as_its_mailbox() {
        let of = |raw: &str| mailbox(&Email::parse(raw).expect("email"));
        assert_eq!(of("ada+1@example.com"), "ada@example.com");
        assert_eq!(of("Ada+x+y@Example.com"), "ada@example.com");
        assert_eq!(of("ada@example.com"), "ada@example.com");
        assert_ne!(of("ada@example.com"), of("ada@example.org"));
        assert_ne!(of("ada.b@example.com"), of("adab@example.com"));
    }
}
