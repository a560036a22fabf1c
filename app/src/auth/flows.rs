//! The sign-in flows (ssr only), shared by the pages' server functions and
//! the JSON API: one implementation of parsing, throttling and session
//! handling, whichever adapter the request came through.

use std::net::IpAddr;

use engine::{
    accounts::{self, AccountError, DisplayName, Email, Password, Principal},
    coordination::ThrottleScope,
    throttle::{Decision, Limit},
};
use secrecy::SecretString;
use tower_sessions::Session;

use crate::{auth::guard, error::AppError, state::AppState};

pub fn account_error(error: AccountError) -> AppError {
    match error {
        AccountError::InvalidEmail => AppError::invalid("email", error.to_string()),
        AccountError::InvalidPassword => AppError::invalid("password", error.to_string()),
        AccountError::InvalidDisplayName => AppError::invalid("display_name", error.to_string()),
        AccountError::EmailTaken => AppError::invalid("email", error.to_string()),
        AccountError::InvalidCredentials => AppError::InvalidCredentials,
        AccountError::Disabled => AppError::AccountDisabled,
        AccountError::Unexpected(e) => AppError::internal(&e),
    }
}

/// Counts one attempt; refuses past the limit with the time to wait.
pub async fn throttle(
    state: &AppState,
    scope: ThrottleScope,
    subject: &str,
    limit: Limit,
    what: &str,
) -> Result<(), AppError> {
    let key = state.redis.keys().throttle(scope, subject);
    match state.throttle.hit(&state.redis, &key, limit).await {
        Ok(Decision::Allowed { .. }) => Ok(()),
        Ok(Decision::Refused { retry_after }) => {
            let secs = retry_after.as_secs().max(1);
            let wait = if secs >= 120 {
                format!("{} minutes", secs.div_ceil(60))
            } else {
                format!("{secs} seconds")
            };
            Err(AppError::RateLimited {
                message: format!("Too many {what}. Try again in {wait}."),
                retry_after_secs: secs,
            })
        }
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "throttle unavailable");
            Err(AppError::Unavailable {
                retry_after_secs: 5,
            })
        }
    }
}

/// What a registration form or API call carries.
#[derive(Debug)]
pub struct Registration {
    pub email: String,
    pub display_name: String,
    pub password: String,
    /// `None` for API callers (no second field to compare).
    pub password_confirm: Option<String>,
}

/// Creates an account and signs this session in as it.
pub async fn register(
    state: &AppState,
    session: &Session,
    ip: IpAddr,
    form: Registration,
) -> Result<Principal, AppError> {
    let email = Email::parse(&form.email).map_err(account_error)?;
    let display_name = DisplayName::parse(&form.display_name).map_err(account_error)?;
    if form.password_confirm.is_some_and(|c| c != form.password) {
        return Err(AppError::invalid(
            "password_confirm",
            "the two passwords differ",
        ));
    }
    let password = Password::parse(SecretString::from(form.password)).map_err(account_error)?;
    throttle(
        state,
        ThrottleScope::RegisterIp,
        &ip.to_string(),
        state.auth.register_per_ip,
        "registrations from your network",
    )
    .await?;
    accounts::register(&state.pool, &email, &display_name, &password)
        .await
        .map_err(account_error)?;
    let signed_in = accounts::authenticate(&state.pool, &email, &password)
        .await
        .map_err(account_error)?;
    guard::sign_in_session(session, &signed_in).await?;
    Ok(signed_in.principal)
}

/// Checks the credentials (throttled per IP and per email) and signs this
/// session in.
pub async fn login(
    state: &AppState,
    session: &Session,
    ip: IpAddr,
    email: &str,
    password: String,
) -> Result<Principal, AppError> {
    let email = Email::parse(email).map_err(account_error)?;
    throttle(
        state,
        ThrottleScope::SignInIp,
        &ip.to_string(),
        state.auth.sign_in_per_ip,
        "sign-in attempts from your network",
    )
    .await?;
    throttle(
        state,
        ThrottleScope::SignInEmail,
        email.as_str(),
        state.auth.sign_in_per_email,
        "sign-in attempts for this account",
    )
    .await?;
    // A password outside the policy cannot be anyone's: same answer as a
    // wrong one.
    let password =
        Password::parse(SecretString::from(password)).map_err(|_| AppError::InvalidCredentials)?;
    let signed_in = accounts::authenticate(&state.pool, &email, &password)
        .await
        .map_err(account_error)?;
    guard::sign_in_session(session, &signed_in).await?;
    // Answer from what authentication read: if a concurrent "sign out
    // everywhere" just revoked this session, the next request says so.
    Ok(signed_in.principal)
}
