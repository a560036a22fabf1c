//! Moving a course to another account, from the browser: the learner's
//! page for it (`/s/{slug}/transfer`: ask, see where the request stands,
//! withdraw) and the receiving account's confirmation (`/transfer?token=…`,
//! the mailed link). Thin adapters over `service::transfers`, under
//! `/api/learner/transfer…`.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use model::TransferStatus;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::{auth::guard, state::services};

/// The learner's page about moving a course.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferPageView {
    pub title: String,
    /// The signed-in learner's address (the one the course is bound to).
    pub email: String,
    /// Whether the learner holds a code of this course they may move.
    pub holds: bool,
    pub latest: Option<MyTransfer>,
}

/// The learner's latest request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MyTransfer {
    pub status: TransferStatus,
    pub to_email: String,
    /// Human date it was asked.
    pub asked: String,
    /// The admins' reason for a refusal.
    pub reason: Option<String>,
}

/// What the learner's page shows.
#[server(endpoint = "learner/transfer", input = server_fn::codec::GetUrl)]
pub async fn transfer_page(slug: String) -> Result<TransferPageView, AppError> {
    let state = services()?;
    let principal = guard::require_learner().await?;
    let session = guard::session().await?;
    let share = service::learner::visible_share(&state, &slug).await?;
    let binding = engine::settlement::binding_of(&state.pool, &share, principal.id)
        .await
        .map_err(|e| AppError::internal(&e))?;
    let latest = service::transfers::latest(&state, &session, &slug).await?;
    Ok(TransferPageView {
        title: share.title,
        email: principal.email,
        holds: binding.is_some_and(|b| !b.revoked),
        latest: latest.map(|t| MyTransfer {
            status: t.status,
            to_email: t.to_email,
            asked: super::human_date(t.created_at),
            // A refusal's reason is the learners' (both got it by
            // mail); an approval's note is the team's.
            reason: t
                .decision_reason
                .filter(|_| t.status == TransferStatus::Refused),
        }),
    })
}

/// Asks to move the learner's code of the course to the account with
/// `email`; a link goes to that address.
#[server(endpoint = "learner/transfer/request")]
pub async fn request_transfer(slug: String, email: String, note: String) -> Result<(), AppError> {
    let state = services()?;
    let session = guard::session().await?;
    let ip = guard::client_ip().await?;
    service::transfers::request(
        &state,
        &session,
        ip,
        &slug,
        service::transfers::TransferForm { email, note },
        crate::i18n::lang(),
    )
    .await?;
    Ok(())
}

/// Withdraws the learner's open request.
#[server(endpoint = "learner/transfer/cancel")]
pub async fn cancel_transfer(slug: String) -> Result<(), AppError> {
    let state = services()?;
    let session = guard::session().await?;
    service::transfers::cancel(&state, &session, &slug).await?;
    Ok(())
}

/// What a confirmation link shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferLinkView {
    Open {
        course: String,
        tenant_name: String,
        from_email: String,
        to_email: String,
        /// Who is signed in (`None`: nobody).
        signed_in_as: Option<String>,
    },
    /// Used, replaced, expired or unknown.
    Invalid,
}

/// The request behind a confirmation link.
#[server(endpoint = "learner/transfer/link", input = server_fn::codec::GetUrl)]
pub async fn transfer_link(token: String) -> Result<TransferLinkView, AppError> {
    let state = services()?;
    let me = guard::current_principal().await?;
    Ok(match service::transfers::preview(&state, &token).await? {
        Some(p) => TransferLinkView::Open {
            course: p.course,
            tenant_name: p.tenant_name,
            from_email: p.from_email,
            to_email: p.to_email,
            signed_in_as: me.map(|m| m.email),
        },
        None => TransferLinkView::Invalid,
    })
}

/// The receiving account confirms; on to "My courses" with a note that
/// the course's team decides next.
#[server(endpoint = "learner/transfer/confirm")]
pub async fn confirm_transfer(token: String) -> Result<(), AppError> {
    let state = services()?;
    let principal = guard::require_learner().await?;
    let ip = guard::client_ip().await?;
    service::transfers::confirm(&state, &principal, ip, &token).await?;
    guard::set_flash(&crate::auth::Flash {
        kind: crate::auth::FlashKind::Success,
        message: crate::i18n::t(Msg::ConfirmedTheCourseSTeamDecides).into(),
    })
    .await?;
    leptos_axum::redirect("/courses");
    Ok(())
}
