//! Issuing codes and the one-time page of a new batch (`…/batches/{batch}`,
//! the page in `pages/console/issued.rs`): the issue form's server function,
//! its progress while it runs, and the plain codes, shown once.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// A batch's plain codes, the one time they are shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedView {
    pub share_title: String,
    /// Absolute link learners open.
    pub link: String,
    /// `None` once shown (or for anyone but the issuing admin). At most
    /// [`SHOWN_ON_PAGE`]; the CSV has them all.
    pub codes: Option<Vec<IssuedCard>>,
    /// How many codes the batch has.
    pub total: usize,
    pub csv_url: String,
}

/// One new code, with its printable QR code (small batches only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedCard {
    pub code: String,
    /// An SVG QR code of the link with the code in its fragment (never
    /// sent to the server, so never in a log).
    pub qr_svg: Option<String>,
}

/// Most codes the one-time page lists (the CSV has every one).
pub const SHOWN_ON_PAGE: usize = 1_000;
/// Most codes that get printable cards with a QR code.
pub const CARDS_UP_TO: usize = 200;

/// Most codes one batch may hold.
pub const MAX_BATCH: i64 = 100_000;

/// Issues `count` codes and opens the one-time result page; with
/// `mailable` (a checkbox), the batch's mail page instead, as its codes
/// are never shown. `ticket` (chosen by the page) names the request: the
/// page polls
/// [`issue_progress`] with it, and a second submission of the same form
/// (a double click, a retry) opens the first batch instead of issuing
/// another.
#[server(prefix = "/api/admin", endpoint = "codes/issue")]
pub async fn issue_codes(
    tenant_id: Uuid,
    share_id: Uuid,
    count: String,
    label: String,
    expires_at: Option<String>,
    ticket: Option<Uuid>,
    mailable: Option<String>,
) -> Result<(), AppError> {
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let count = count
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|n| (1..=MAX_BATCH).contains(n))
        .ok_or_else(|| AppError::invalid("count", crate::i18n::t(Msg::ANumberOfCodesFrom1)))?;
    let zone = support::zone(&state, share.tenant()).await?;
    let expires_at =
        support::parse_local(&zone, "expires_at", expires_at.as_deref().unwrap_or(""))?;
    let issued = service::issuing::issue_for_handover(
        &state,
        &admin,
        service::issuing::Issue {
            share: &share,
            count,
            label: &label,
            expires_at,
            ticket,
            mailable: mailable.is_some(),
        },
    )
    .await?;
    let (service::issuing::Issued::New { batch_id } | service::issuing::Issued::Again { batch_id }) =
        issued;
    // A mailable batch's codes are never shown: its page is the mail page.
    let page = if mailable.is_some() { "/mail" } else { "" };
    leptos_axum::redirect(&format!(
        "/admin/t/{tenant_id}/s/{share_id}/batches/{batch_id}{page}"
    ));
    Ok(())
}

/// How far issuing under `ticket` has got: `(done, total)` codes, `None`
/// before the first report.
#[server(prefix = "/api/admin", endpoint = "codes/progress", input = server_fn::codec::GetUrl)]
pub async fn issue_progress(tenant_id: Uuid, ticket: Uuid) -> Result<Option<(u64, u64)>, AppError> {
    let (state, _, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    engine::progress::read(&state.redis, admin.id, ticket)
        .await
        .map_err(support::internal)
}

/// The batch's plain codes, the one time they are shown.
#[server(prefix = "/api/admin", endpoint = "codes/issued", input = server_fn::codec::GetUrl)]
pub async fn issued_codes(
    tenant_id: Uuid,
    share_id: Uuid,
    batch_id: Uuid,
) -> Result<IssuedView, AppError> {
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    // Only this share's batch (or replacement code), taken by its admin.
    if !engine::read_models::handover_of_share(&state.pool, share.tenant(), share.id, batch_id)
        .await
        .map_err(support::internal)?
    {
        return Err(AppError::NotFound);
    }
    let codes = engine::handover::take(
        &state.redis,
        admin.id,
        batch_id,
        engine::handover::Copy::Page,
    )
    .await
    .map_err(support::internal)?;
    let link = format!("{}/s/{}", state.public_origin, share.slug);
    let total = codes.as_ref().map_or(0, Vec::len);
    let cards = codes.map(|codes| {
        codes
            .into_iter()
            .take(SHOWN_ON_PAGE)
            .map(|code| IssuedCard {
                qr_svg: (total <= CARDS_UP_TO)
                    .then(|| support::qr_svg(&format!("{link}#code={code}")))
                    .flatten(),
                code,
            })
            .collect()
    });
    Ok(IssuedView {
        share_title: share.title,
        link,
        codes: cards,
        total,
        csv_url: format!("/admin/t/{tenant_id}/s/{share_id}/batches/{batch_id}/codes.csv"),
    })
}
