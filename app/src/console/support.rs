//! Shared by the console's server functions (ssr only): the checks each
//! one starts with (`member_of_tenant`, `member_share`: a member whose role
//! allows the function's one `Permission`), and how dates,
//! limits and QR codes are read and written.

use crate::i18n::Msg;
use engine::shares::{Share, ShareId};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    auth::guard,
    error::AppError,
    state::{Services, services},
};

pub fn internal(error: anyhow::Error) -> AppError {
    AppError::internal(&error)
}

/// The state, the tenant and its signed-in member whose role allows
/// `permission` (401/403 otherwise).
pub async fn member_of_tenant(
    tenant: Uuid,
    permission: engine::tenants::Permission,
) -> Result<
    (
        Services,
        engine::tenants::TenantId,
        engine::accounts::Principal,
    ),
    AppError,
> {
    let state = services()?;
    let tenant = engine::tenants::TenantId(tenant);
    let admin = guard::require_member(tenant, permission).await?;
    Ok((state, tenant, admin))
}

/// The signed-in member of `tenant` allowed `permission`, and its share
/// `share` (404 for a share of another tenant: ids are not secrets, but
/// they stay apart).
pub async fn member_share(
    tenant: Uuid,
    share: Uuid,
    permission: engine::tenants::Permission,
) -> Result<
    (
        Services,
        engine::accounts::Principal,
        Share,
        engine::tenants::Role,
    ),
    AppError,
> {
    let state = services()?;
    let session = guard::session().await?;
    let (admin, role, share) = service::session::member_share(
        &state,
        &session,
        engine::tenants::TenantId(tenant),
        ShareId(share),
        permission,
    )
    .await?;
    Ok((state, admin, share, role))
}

/// The explicit "I understand" a destructive action needs (a checkbox
/// posting `confirm=yes`, as unbinding asks): without it nothing changes
/// and the form says why, beside the box.
pub fn confirmed(confirm: Option<&str>, why: crate::i18n::Msg) -> Result<(), AppError> {
    if confirm == Some("yes") {
        Ok(())
    } else {
        Err(AppError::invalid("confirm", crate::i18n::t(why)))
    }
}

/// Says `message` on the page a plain form post (no JavaScript) returns
/// to, as a one-time message (its answer is a redirect); a hydrated page
/// says the answer itself, so nothing is left for a later page.
pub async fn say_on_next_page(message: String) -> Result<(), AppError> {
    if guard::from_plain_form() {
        guard::set_flash(&crate::auth::Flash {
            kind: crate::auth::FlashKind::Success,
            message,
        })
        .await?;
    }
    Ok(())
}

/// A QR code of `text` as an SVG document (`None` if it does not fit).
pub fn qr_svg(text: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::M).ok()?;
    Some(
        code.render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(120, 120)
            .quiet_zone(true)
            .build(),
    )
}

/// The tenant's time zone: every time a console page shows, and every
/// date it reads, is in it (`engine::zone`).
pub async fn zone(
    state: &Services,
    tenant: engine::tenants::TenantId,
) -> Result<engine::zone::Zone, AppError> {
    engine::tenants::zone(&state.pool, tenant)
        .await
        .map_err(internal)
}

/// A `datetime-local` value in the tenant's zone; empty when unset.
pub fn local_input(zone: &engine::zone::Zone, at: Option<OffsetDateTime>) -> String {
    at.map(|t| zone.input_value(t)).unwrap_or_default()
}

/// Parses a `datetime-local` value (a time in the tenant's zone); empty is
/// unset.
pub fn parse_local(
    zone: &engine::zone::Zone,
    field: &str,
    raw: &str,
) -> Result<Option<OffsetDateTime>, AppError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    zone.from_input(raw)
        .map(Some)
        .ok_or_else(|| AppError::invalid(field, crate::i18n::t(Msg::ADateAndTimeLike2026)))
}

/// Like [`parse_local`], but a field sent back exactly as the form showed
/// `stored` keeps `stored` itself: its seconds, and which of a repeated
/// hour's two readings it was, survive saving another field.
pub fn parse_local_or_kept(
    zone: &engine::zone::Zone,
    field: &str,
    raw: &str,
    stored: Option<OffsetDateTime>,
) -> Result<Option<OffsetDateTime>, AppError> {
    if let Some(at) = stored
        && raw.trim() == zone.input_value(at)
    {
        return Ok(Some(at));
    }
    parse_local(zone, field, raw)
}

/// Parses an optional limit field (1 to 1,000,000,000); empty is unset.
pub fn parse_number(field: &str, raw: &str) -> Result<Option<i64>, AppError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse::<i64>()
        .ok()
        .filter(|n| (1..=1_000_000_000).contains(n))
        .map(Some)
        .ok_or_else(|| AppError::invalid(field, crate::i18n::t(Msg::AWholeNumberFrom1To)))
}
