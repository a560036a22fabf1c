//! Accounts: register, sign in, change password. Parsing, throttling and
//! the session are the use case's; passwords, hashing and the epoch are
//! the engine's (`engine::accounts`).

use std::net::IpAddr;

use engine::{
    accounts::{self, AccountError, DisplayName, Email, Password, Principal},
    coordination::ThrottleScope,
    throttle::ip_subject,
};
use secrecy::SecretString;
use tower_sessions::Session;

use crate::{ServiceError, Services, session, throttle};

/// What a registration form or API call carries.
#[derive(Debug)]
pub struct Registration {
    pub email: String,
    pub display_name: String,
    pub password: String,
    /// `None` for API callers (no second field to compare).
    pub password_confirm: Option<String>,
}

/// Creates an account and signs `session` in as it. Malformed input is
/// refused before the attempt is counted (per IP).
#[tracing::instrument(name = "register", skip_all)]
pub async fn register(
    services: &Services,
    session: &Session,
    ip: IpAddr,
    form: Registration,
) -> Result<Principal, ServiceError> {
    let email = Email::parse(&form.email)?;
    let display_name = DisplayName::parse(&form.display_name)?;
    if form.password_confirm.is_some_and(|c| c != form.password) {
        return Err(ServiceError::PasswordsDiffer);
    }
    let password = Password::parse(SecretString::from(form.password))?;
    throttle::hit(
        services,
        ThrottleScope::RegisterIp,
        &ip_subject(ip),
        services.auth.register_per_ip,
    )
    .await?;
    accounts::register(&services.pool, &email, &display_name, &password).await?;
    let signed_in = accounts::authenticate(&services.pool, &email, &password).await?;
    session::sign_in(session, &signed_in).await?;
    Ok(signed_in.principal)
}

/// Checks the credentials (throttled per IP and per email) and signs
/// `session` in.
#[tracing::instrument(name = "login", skip_all)]
pub async fn login(
    services: &Services,
    session: &Session,
    ip: IpAddr,
    email: &str,
    password: String,
) -> Result<Principal, ServiceError> {
    let email = Email::parse(email)?;
    throttle::hit(
        services,
        ThrottleScope::SignInIp,
        &ip_subject(ip),
        services.auth.sign_in_per_ip,
    )
    .await?;
    throttle::hit(
        services,
        ThrottleScope::SignInEmail,
        email.as_str(),
        services.auth.sign_in_per_email,
    )
    .await?;
    // A password outside the policy cannot be anyone's: same answer as a
    // wrong one.
    let password = Password::parse(SecretString::from(password))
        .map_err(|_| AccountError::InvalidCredentials)?;
    let signed_in = accounts::authenticate(&services.pool, &email, &password).await?;
    session::sign_in(session, &signed_in).await?;
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
    throttle::hit(
        services,
        ThrottleScope::PasswordChangeIp,
        &ip_subject(ip),
        services.auth.sign_in_per_ip,
    )
    .await?;
    let current = Password::parse(SecretString::from(form.current_password))
        .map_err(|_| ServiceError::WrongCurrentPassword)?;
    accounts::change_password(&services.pool, principal.id, &current, &new)
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
