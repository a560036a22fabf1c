//! The learner's flows (ssr only), shared by the pages' server functions and
//! the JSON API: one implementation of "which shares exist for learners",
//! code entry (phases 1+2) and opening a resource (phase 3), whichever
//! adapter the request came through. Each adapter maps [`LearnerError`] to
//! its own representation.

use std::net::IpAddr;

use engine::{
    accounts::{AccountId, Principal},
    codes::{CodeFormatError, PlainCode},
    coordination::ThrottleScope,
    resources::{self, Resource},
    settlement::{self, Grant, RequestId, SettlementError, SettlementRequest},
    shares::{self, Share, ShareId},
};
use time::OffsetDateTime;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{
    auth::{flows::throttle, guard},
    error::AppError,
    state::AppState,
};

/// What went wrong in a learner flow: a code that is not a code, a
/// settlement outcome (each adapter serves both through
/// `engine::outcome`, so they agree), or an error already in user terms
/// (throttled, session trouble, not found).
#[derive(Debug)]
pub enum LearnerError {
    /// The typed text is not a code (caught before anything is counted).
    Format(CodeFormatError),
    Settlement(SettlementError),
    App(AppError),
}

impl From<SettlementError> for LearnerError {
    fn from(error: SettlementError) -> Self {
        Self::Settlement(error)
    }
}

impl From<AppError> for LearnerError {
    fn from(error: AppError) -> Self {
        Self::App(error)
    }
}

impl From<anyhow::Error> for LearnerError {
    fn from(error: anyhow::Error) -> Self {
        Self::Settlement(SettlementError::Unexpected(error))
    }
}

impl From<LearnerError> for AppError {
    fn from(error: LearnerError) -> Self {
        match error {
            LearnerError::App(error) => error,
            LearnerError::Format(error) => AppError::outcome(error),
            LearnerError::Settlement(error) => settlement_error(error),
        }
    }
}

/// A settlement outcome as the pages show it (kind, code and field from
/// `engine::outcome`, like the JSON API).
pub fn settlement_error(error: SettlementError) -> AppError {
    match error {
        // The page says what to do with the unused code.
        SettlementError::AlreadyHasAccess => AppError::Refused {
            kind: engine::outcome::Outcome::kind(&error),
            reason: engine::outcome::Outcome::code(&error).to_owned(),
            message: crate::i18n::t(
                "You already have access to this course, so this code was not used: keep it for someone else.",
                "你已经可以访问这门课程，这个兑换码没有被使用：请留给其他人。",
            )
            .to_owned(),
            field: None,
        },
        error => AppError::outcome(error),
    }
}

/// The session key of a share's pending code (phase 2).
pub fn pending_key(share: Uuid) -> String {
    format!("pending:{share}")
}

/// A share learners may see (active, paused or outside its window: the
/// page explains); drafts and archived shares do not exist for them.
pub async fn visible_share(state: &AppState, slug: &str) -> Result<Share, AppError> {
    let share = shares::find_by_slug(&state.pool, slug)
        .await
        .map_err(|e| AppError::internal(&e))?;
    match share {
        Some(share) if share.status != "draft" && share.status != "archived" => Ok(share),
        _ => Err(AppError::NotFound),
    }
}

/// Why nobody new can get in right now, if so: the share's own state, or
/// its quota used up.
pub fn unavailable_because(share: &Share, now: OffsetDateTime) -> Option<shares::Unavailability> {
    share.unavailable_to_newcomers(now)
}

/// A code accepted in phase 2, with the account that entered it: a
/// session can outlive a sign-in (a shared computer), and a pending code
/// must never be bound to anyone but the learner who typed it.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Pending {
    principal: Uuid,
    code: Uuid,
}

/// The code id `principal` entered for `share` in this session (phase 2),
/// if any.
pub async fn pending_code(
    session: &Session,
    share: Uuid,
    principal: AccountId,
) -> Result<Option<Uuid>, AppError> {
    let pending = session
        .get::<Pending>(&pending_key(share))
        .await
        .map_err(guard::session_error)?;
    Ok(pending
        .filter(|p| p.principal == principal.0)
        .map(|p| p.code))
}

/// What entering a code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeEntered {
    /// Kept in the session; bound at the first opening.
    Pending,
    /// The learner typed the code already bound to them.
    AlreadyBound,
}

/// Phases 1+2: checks a typed code for this learner and keeps it pending in
/// the session. Binds nothing. A typo is refused by the check symbol before
/// any attempt is counted.
pub async fn enter_code(
    state: &AppState,
    session: &Session,
    principal: &Principal,
    ip: IpAddr,
    share: &Share,
    typed: &str,
) -> Result<CodeEntered, LearnerError> {
    let code = PlainCode::parse(typed).map_err(LearnerError::Format)?;
    let policy = &state.auth;
    throttle(
        state,
        ThrottleScope::CodeAccount,
        &principal.id.0.to_string(),
        policy.code_per_account,
        crate::i18n::t("code attempts", "兑换码尝试"),
    )
    .await?;
    throttle(
        state,
        ThrottleScope::CodeIp,
        &engine::throttle::ip_subject(ip),
        policy.code_per_ip,
        crate::i18n::t(
            "code attempts from your network",
            "来自你所在网络的兑换码尝试",
        ),
    )
    .await?;
    throttle(
        state,
        ThrottleScope::CodeShare,
        &share.id.to_string(),
        policy.code_per_share,
        crate::i18n::t("code attempts for this course", "这门课程的兑换码尝试"),
    )
    .await?;
    let code_id =
        settlement::validate(&state.pool, &state.keyring, share, principal.id, &code).await?;
    if settlement::binding_of(&state.pool, share, principal.id)
        .await?
        .is_some()
    {
        return Ok(CodeEntered::AlreadyBound);
    }
    session
        .insert(
            &pending_key(share.id),
            Pending {
                principal: principal.id.0,
                code: code_id,
            },
        )
        .await
        .map_err(guard::session_error)?;
    Ok(CodeEntered::Pending)
}

/// One request to open a resource.
#[derive(Debug)]
pub struct Opening<'a> {
    pub share: &'a Share,
    pub resource: Uuid,
    /// Random per logical attempt; an API client's retries reuse it.
    pub request_id: RequestId,
    /// From another site (`Sec-Fetch-Site: cross-site`): see [`open`].
    pub cross_site: bool,
    pub patience: Patience,
}

/// Phase 3: decides whether `principal` may open the resource now,
/// binding the pending code on a first access. A cross-site request (a
/// link on another site, which `SameSite=Lax` lets through with the
/// cookie) may only reach what the learner already holds: it never binds.
pub async fn open(
    state: &AppState,
    session: &Session,
    principal: &Principal,
    opening: Opening<'_>,
) -> Result<(Resource, Grant), LearnerError> {
    let Opening {
        share,
        resource: resource_id,
        request_id,
        cross_site,
        patience,
    } = opening;
    let resource = resources::resource(&state.pool, share.tenant(), ShareId(share.id), resource_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let pending = if cross_site {
        None
    } else {
        pending_code(session, share.id, principal.id).await?
    };
    let request = SettlementRequest {
        share: share.clone(),
        principal: principal.id,
        resource: resource.id,
        pending_code: pending,
        request_id,
        patience,
    };
    let grant = state
        .settler
        .settle(&state.pool, &state.redis, &request)
        .await?;
    if pending.is_some() {
        // The access is decided (and maybe bound): a session hiccup now
        // must not turn it into an error page. A stale pending id is
        // harmless; the next settlement finds the binding first.
        if let Err(error) = session.remove::<Pending>(&pending_key(share.id)).await {
            tracing::warn!(error = %error, "could not clear a pending code after settlement");
        }
    }
    Ok((resource, grant))
}

pub use engine::settlement::patience::Patience;

/// Whether the request came from another site (`Sec-Fetch-Site`).
pub fn is_cross_site(headers: &http::HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site")
}

/// A date as pages show it: `29 November 2026`.
pub fn human_date(at: OffsetDateTime) -> String {
    let format = match crate::i18n::lang() {
        crate::i18n::Lang::En => {
            time::macros::format_description!("[day padding:none] [month repr:long] [year]")
        }
        crate::i18n::Lang::Zh => {
            time::macros::format_description!("[year]年[month padding:none]月[day padding:none]日")
        }
    };
    at.format(&format).unwrap_or_else(|_| at.date().to_string())
}
