//! Accounts in the browser: register, sign in, sign out, sign out
//! everywhere, change password, and who is signed in.
//!
//! Server functions here are thin adapters over `service::accounts` (the
//! same use cases the JSON API calls): read the session from context, call
//! the use case, map its outcome to [`AppError`], leave a message for the
//! next page. Each has a stable endpoint under `/api/auth/`.

#[cfg(feature = "ssr")]
pub mod guard;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::i18n::t;

/// The signed-in account as pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentUser {
    pub email: String,
    pub display_name: String,
}

/// A one-time message shown on the next page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flash {
    pub kind: FlashKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FlashKind {
    Success,
    Info,
    Error,
}

/// Where to go after signing in: a local path only (never another site).
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.contains('\\')
                && !path.chars().any(char::is_control) =>
        {
            path.to_owned()
        }
        _ => "/".to_owned(),
    }
}

/// Creates an account and signs it in.
#[server(endpoint = "auth/register")]
pub async fn register(
    email: String,
    display_name: String,
    password: String,
    password_confirm: String,
    next: Option<String>,
) -> Result<(), AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let session = guard::session().await?;
        let ip = guard::client_ip().await?;
        let form = service::accounts::Registration {
            email,
            display_name,
            password,
            password_confirm: Some(password_confirm),
        };
        let principal = service::accounts::register(&state, &session, ip, form).await?;
        guard::set_flash(&Flash {
            kind: FlashKind::Success,
            message: crate::i18n::lang().pick(
                format!(
                    "Welcome, {}! Your account is ready.",
                    principal.display_name
                ),
                format!("欢迎你，{}！账号已创建好。", principal.display_name),
            ),
        })
        .await?;
        leptos_axum::redirect(&safe_next(next.as_deref()));
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Signs in with email and password.
#[server(endpoint = "auth/login")]
pub async fn login(email: String, password: String, next: Option<String>) -> Result<(), AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let session = guard::session().await?;
        let ip = guard::client_ip().await?;
        service::accounts::login(&state, &session, ip, &email, password).await?;
        leptos_axum::redirect(&safe_next(next.as_deref()));
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Signs this browser out.
#[server(endpoint = "auth/logout")]
pub async fn logout() -> Result<(), AppError> {
    let run = async {
        guard::sign_out().await?;
        guard::set_flash(&Flash {
            kind: FlashKind::Info,
            message: t("You have signed out.", "你已退出登录。").into(),
        })
        .await?;
        leptos_axum::redirect("/");
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Signs the account out on every device, this one included.
#[server(endpoint = "auth/logout-all")]
pub async fn logout_all() -> Result<(), AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let principal = guard::require_learner().await?;
        let session = guard::session().await?;
        service::accounts::sign_out_everywhere(&state, &session, &principal).await?;
        guard::set_flash(&Flash {
            kind: FlashKind::Info,
            message: t(
                "You have signed out on every device.",
                "你已在所有设备上退出登录。",
            )
            .into(),
        })
        .await?;
        leptos_axum::redirect("/");
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Changes the password (throttled like sign-in); every other session of
/// the account ends.
#[server(endpoint = "auth/change-password")]
pub async fn change_password(
    current_password: String,
    new_password: String,
    new_password_confirm: String,
) -> Result<(), AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let principal = guard::require_learner().await?;
        let ip = guard::client_ip().await?;
        let form = service::accounts::PasswordChange {
            current_password,
            new_password,
            new_password_confirm,
        };
        let epoch = service::accounts::change_password(&state, &principal, ip, form).await?;
        guard::restamp(principal.id, epoch).await?;
        guard::set_flash(&Flash {
            kind: FlashKind::Success,
            message: t(
                "Password changed. Your other devices were signed out.",
                "密码已修改，你的其他设备已退出登录。",
            )
            .into(),
        })
        .await?;
        leptos_axum::redirect("/account");
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Who is signed in, if anyone.
#[server(endpoint = "auth/whoami", input = server_fn::codec::GetUrl)]
pub async fn whoami() -> Result<Option<CurrentUser>, AppError> {
    let principal = guard::current_principal()
        .await
        .map_err(AppError::respond)?;
    Ok(principal.map(|p| CurrentUser {
        email: p.email,
        display_name: p.display_name,
    }))
}

/// Takes the pending one-time message, if any.
#[server(endpoint = "flash/take")]
pub async fn take_flash() -> Result<Option<Flash>, AppError> {
    guard::take_flash().await.map_err(AppError::respond)
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(safe_next(Some("/s/course?x=1")), "/s/course?x=1");
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil",
            "javascript:x",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/");
    }
}
