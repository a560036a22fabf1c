//! The sign-in flows (ssr only), shared by the pages' server functions and
//! the JSON API: one implementation of parsing, throttling and session
//! handling, whichever adapter the request came through.

use std::net::IpAddr;

use engine::{
    accounts::{self, AccountError, DisplayName, Email, Password, Principal},
    coordination::ThrottleScope,
    throttle::{Decision, Limit, ip_subject},
};
use secrecy::SecretString;
use tower_sessions::Session;

use crate::{
    auth::guard,
    error::AppError,
    i18n::{Lang, t},
    state::AppState,
};

/// An account outcome as the pages show it.
pub fn account_error(error: AccountError) -> AppError {
    AppError::outcome(error)
}

/// Counts one attempt; refuses past the limit with the time to wait.
/// `what` names the attempts in the current language ("sign-in attempts
/// for this account").
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
            engine::measures::throttled(scope.as_str());
            let secs = retry_after.as_secs().max(1);
            let minutes = secs.div_ceil(60);
            let message = match (crate::i18n::lang(), secs >= 120) {
                (Lang::En, true) => format!("Too many {what}. Try again in {minutes} minutes."),
                (Lang::En, false) => format!("Too many {what}. Try again in {secs} seconds."),
                (Lang::Zh, true) => format!("{what}过于频繁，请 {minutes} 分钟后再试。"),
                (Lang::Zh, false) => format!("{what}过于频繁，请 {secs} 秒后再试。"),
            };
            Err(AppError::RateLimited {
                message,
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
            t("the two passwords differ", "两次输入的密码不一致"),
        ));
    }
    let password = Password::parse(SecretString::from(form.password)).map_err(account_error)?;
    throttle(
        state,
        ThrottleScope::RegisterIp,
        &ip_subject(ip),
        state.auth.register_per_ip,
        t("registrations from your network", "来自你所在网络的注册"),
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
        &ip_subject(ip),
        state.auth.sign_in_per_ip,
        t(
            "sign-in attempts from your network",
            "来自你所在网络的登录尝试",
        ),
    )
    .await?;
    throttle(
        state,
        ThrottleScope::SignInEmail,
        email.as_str(),
        state.auth.sign_in_per_email,
        t("sign-in attempts for this account", "这个账号的登录尝试"),
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

fn wrong_password() -> &'static str {
    t("the current password is wrong", "当前密码不正确")
}

/// What a password change form carries.
#[derive(Debug)]
pub struct PasswordChange {
    pub current_password: String,
    pub new_password: String,
    pub new_password_confirm: String,
}

/// Changes `principal`'s password and returns the account's new session
/// epoch. Throttled per account and per IP with the sign-in limits: every
/// attempt costs an argon2 verification, and it is a guess at the current
/// password by whoever holds the session. Malformed input is refused
/// before anything is counted.
pub async fn change_password(
    state: &AppState,
    principal: &Principal,
    ip: IpAddr,
    form: PasswordChange,
) -> Result<i64, AppError> {
    if form.new_password != form.new_password_confirm {
        return Err(AppError::invalid(
            "new_password_confirm",
            t("the two new passwords differ", "两次输入的新密码不一致"),
        ));
    }
    let new = Password::parse(SecretString::from(form.new_password))
        .map_err(|e| AppError::invalid("new_password", crate::i18n::errors::message(&e)))?;
    throttle(
        state,
        ThrottleScope::PasswordChangeAccount,
        &principal.id.0.to_string(),
        state.auth.sign_in_per_email,
        t("password change attempts", "修改密码的尝试"),
    )
    .await?;
    throttle(
        state,
        ThrottleScope::PasswordChangeIp,
        &ip_subject(ip),
        state.auth.sign_in_per_ip,
        t(
            "password change attempts from your network",
            "来自你所在网络的修改密码尝试",
        ),
    )
    .await?;
    let current = Password::parse(SecretString::from(form.current_password))
        .map_err(|_| AppError::invalid("current_password", wrong_password()))?;
    accounts::change_password(&state.pool, principal.id, &current, &new)
        .await
        .map_err(|e| match e {
            AccountError::InvalidCredentials => {
                AppError::invalid("current_password", wrong_password())
            }
            other => account_error(other),
        })
}
