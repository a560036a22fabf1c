//! Accounts in the browser: register (an address, then the mailed link
//! that makes the account), sign in, sign out, sign out everywhere,
//! change password, and who is signed in; the account's life by mail:
//! verify the address of an older account (and send the link again),
//! forgot password and the reset, change of address.
//!
//! Server functions here are thin adapters over `service::accounts` (the
//! same use cases the JSON API calls): read the session from context, call
//! the use case, map its outcome to [`AppError`], leave a message for the
//! next page. Each has a stable endpoint under `/api/auth/`.

#[cfg(feature = "ssr")]
pub mod guard;

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
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
    /// A link mailed to `email` came back.
    pub email_verified: bool,
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
        Some(path) if model::is_local_path(path) => path.to_owned(),
        _ => "/".to_owned(),
    }
}

/// Starts a registration: the address is mailed a link to finish the
/// account (or, if it has one, a note to its owner). The same answer for
/// every address: back to `next` with a message to look in the mailbox.
#[server(endpoint = "auth/register")]
pub async fn register(email: String, next: Option<String>) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = guard::session().await?;
    let ip = guard::client_ip().await?;
    let lang = crate::i18n::lang();
    service::accounts::register(&state, Some(&session), ip, &email, next.as_deref(), lang).await?;
    let email = email.trim().to_lowercase();
    guard::set_flash(&Flash {
        kind: FlashKind::Info,
        message: lang.format(Msg::WeSentAMailToOpen2, &[("email", &email)]),
    })
    .await?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

/// The address an open signup link is for (`None`: it no longer works);
/// the page shows its form only then.
#[server(endpoint = "auth/register/check", input = server_fn::codec::GetUrl)]
pub async fn signup_link(token: String) -> Result<Option<String>, AppError> {
    let state = crate::state::services()?;
    Ok(service::accounts::signup_link(&state, &token).await?)
}

/// Finishes a registration with its mailed link: the account is made and
/// this browser signed in as it, then on to where registration started.
#[server(endpoint = "auth/register/finish")]
pub async fn finish_registration(
    token: String,
    display_name: String,
    password: String,
    password_confirm: String,
) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = guard::session().await?;
    let ip = guard::client_ip().await?;
    let form = service::accounts::FinishRegistration {
        token,
        display_name,
        password,
        password_confirm: Some(password_confirm),
    };
    let (principal, next) =
        service::accounts::finish_registration(&state, &session, ip, form).await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Success,
        message: crate::i18n::lang().format(
            Msg::WelcomeYourAccountIsReady,
            &[("display_name", &principal.display_name)],
        ),
    })
    .await?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

/// Signs in with email and password.
#[server(endpoint = "auth/login")]
pub async fn login(email: String, password: String, next: Option<String>) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = guard::session().await?;
    let ip = guard::client_ip().await?;
    service::accounts::login(&state, &session, ip, &email, password, crate::i18n::lang()).await?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

/// Signs this browser out.
#[server(endpoint = "auth/logout")]
pub async fn logout() -> Result<(), AppError> {
    guard::sign_out().await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Info,
        message: t(Msg::YouHaveSignedOut).into(),
    })
    .await?;
    leptos_axum::redirect("/");
    Ok(())
}

/// Signs the account out on every device, this one included.
#[server(endpoint = "auth/logout-all")]
pub async fn logout_all() -> Result<(), AppError> {
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let session = guard::session().await?;
    service::accounts::sign_out_everywhere(&state, &session, &principal).await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Info,
        message: t(Msg::YouHaveSignedOutOnEvery).into(),
    })
    .await?;
    leptos_axum::redirect("/");
    Ok(())
}

/// Changes the password (throttled like sign-in); every other session of
/// the account ends.
#[server(endpoint = "auth/change-password")]
pub async fn change_password(
    current_password: String,
    new_password: String,
    new_password_confirm: String,
) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let ip = guard::client_ip().await?;
    let form = service::accounts::PasswordChange {
        current_password,
        new_password,
        new_password_confirm,
    };
    let epoch =
        service::accounts::change_password(&state, &principal, ip, form, crate::i18n::lang())
            .await?;
    guard::restamp(principal.id, epoch).await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Success,
        message: t(Msg::PasswordChangedYourOtherDevicesWere).into(),
    })
    .await?;
    leptos_axum::redirect("/account");
    Ok(())
}

/// Who is signed in, if anyone.
#[server(endpoint = "auth/whoami", input = server_fn::codec::GetUrl)]
pub async fn whoami() -> Result<Option<CurrentUser>, AppError> {
    let principal = guard::current_principal().await?;
    Ok(principal.map(|p| CurrentUser {
        email: p.email,
        display_name: p.display_name,
        email_verified: p.email_verified,
    }))
}

/// Mails the verification link again (throttled). Answers what happened,
/// in the page's language.
#[server(endpoint = "auth/verify/resend")]
pub async fn resend_verification() -> Result<String, AppError> {
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let ip = guard::client_ip().await?;
    let resent =
        service::accounts::resend_verification(&state, &principal, ip, crate::i18n::lang()).await?;
    let message = match resent {
        engine::accounts::verification::Resent::Sent => {
            crate::i18n::lang().format(Msg::WeSentANewLinkTo, &[("email", &principal.email)])
        }
        engine::accounts::verification::Resent::AlreadyVerified => {
            t(Msg::YourAddressIsVerifiedAlready).to_owned()
        }
    };
    if guard::from_plain_form() {
        guard::set_flash(&Flash {
            kind: FlashKind::Success,
            message: message.clone(),
        })
        .await?;
        leptos_axum::redirect(&back_or("/account"));
    }
    Ok(message)
}

/// Where a plain form came from (its `Referer`, if on this site), else
/// `fallback`: a form shown on several pages returns to its page.
#[cfg(feature = "ssr")]
fn back_or(fallback: &str) -> String {
    leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| {
            let referer = parts.headers.get(http::header::REFERER)?.to_str().ok()?;
            let host = parts.headers.get(http::header::HOST)?.to_str().ok()?;
            let rest = referer.split_once("://")?.1;
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            (authority == host).then(|| safe_next(Some(path)))
        })
        .unwrap_or_else(|| fallback.to_owned())
}

/// Uses a verification link: the address is verified. A POST from the
/// link's page (its button), never the GET of the link itself: a mail
/// scanner that opens every link must not verify an address for whoever
/// registered it. On to the home page with a message.
#[server(endpoint = "auth/verify")]
pub async fn verify_email(token: String) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let ip = guard::client_ip().await?;
    service::accounts::verify_email(&state, ip, &token).await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Success,
        message: t(Msg::YourEmailAddressIsVerifiedIf).into(),
    })
    .await?;
    leptos_axum::redirect("/");
    Ok(())
}

/// Uses a change-of-address link (a POST from its page, like
/// [`verify_email`]); on to the home page with a message.
#[server(endpoint = "auth/confirm-email")]
pub async fn confirm_email(token: String) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let ip = guard::client_ip().await?;
    let email = service::accounts::confirm_email_change(&state, ip, &token).await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Success,
        message: crate::i18n::lang().format(Msg::YourAccountNowUsesSignIn, &[("email", &email)]),
    })
    .await?;
    leptos_axum::redirect("/");
    Ok(())
}

/// "Forgot password": the same answer for every address.
#[server(endpoint = "auth/forgot")]
pub async fn forgot_password(email: String) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let ip = guard::client_ip().await?;
    service::accounts::forgot_password(&state, ip, &email, crate::i18n::lang()).await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Info,
        message: t(Msg::IfAnAccountUsesThisAddress).into(),
    })
    .await?;
    leptos_axum::redirect("/login");
    Ok(())
}

/// Whether a reset link still works (the reset page shows its form then).
#[server(endpoint = "auth/reset/check", input = server_fn::codec::GetUrl)]
pub async fn reset_link_open(token: String) -> Result<bool, AppError> {
    let state = crate::state::services()?;
    Ok(service::accounts::reset_link_is_open(&state, &token).await?)
}

/// Sets a new password with a reset link; every session ends, this
/// browser's included (it signs in with the new password).
#[server(endpoint = "auth/reset")]
pub async fn reset_password(
    token: String,
    new_password: String,
    new_password_confirm: String,
) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let ip = guard::client_ip().await?;
    let form = service::accounts::PasswordReset {
        token,
        new_password,
        new_password_confirm,
    };
    service::accounts::reset_password(&state, ip, form, crate::i18n::lang()).await?;
    guard::sign_out().await?;
    guard::set_flash(&Flash {
        kind: FlashKind::Success,
        message: t(Msg::YourPasswordIsResetAndEvery).into(),
    })
    .await?;
    leptos_axum::redirect("/login");
    Ok(())
}

/// Starts a change of address: the new address gets a link.
#[server(endpoint = "auth/change-email")]
pub async fn change_email(current_password: String, new_email: String) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let ip = guard::client_ip().await?;
    let form = service::accounts::EmailChange {
        current_password,
        new_email: new_email.clone(),
    };
    service::accounts::change_email(&state, &principal, ip, form, crate::i18n::lang()).await?;
    let email = new_email.trim().to_lowercase();
    guard::set_flash(&Flash {
        kind: FlashKind::Info,
        message: crate::i18n::lang().format(Msg::WeSentALinkToOpen, &[("email", &email)]),
    })
    .await?;
    leptos_axum::redirect("/account");
    Ok(())
}

/// Takes the pending one-time message, if any.
#[server(endpoint = "flash/take")]
pub async fn take_flash() -> Result<Option<Flash>, AppError> {
    guard::take_flash().await
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
