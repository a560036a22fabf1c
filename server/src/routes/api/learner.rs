//! The learner's side of the API: a share's page data, phase 1+2 (enter a
//! code: validate, keep it pending in the session), phase 3 (open a
//! resource: settle, the one request that binds and counts) and its bytes
//! (served with Range support under the live grant an opening left).

use std::net::SocketAddr;

use axum::{
    Json,
    extract::{ConnectInfo, Path, Request, State, rejection::JsonRejection},
    http::{HeaderMap, HeaderName, HeaderValue},
    response::{IntoResponse, Response},
};
use engine::{
    accounts::Principal,
    settlement::{RequestId, SettlementError},
    shares::Share,
};
use serde::Deserialize;
use service::{
    content,
    learner::{self, CodeEntered, Standing},
    session::{self, client_ip},
};
use tower_sessions::Session;
use uuid::Uuid;

use super::schema::{self, ErrorBody, Me, PublicShare, SharePage};
use crate::problem::{ApiError, rejection};
use crate::state::ServerState;

async fn visible_share(state: &ServerState, slug: &str) -> Result<Share, ApiError> {
    Ok(learner::visible_share(&state.services, slug).await?)
}

async fn signed_in(state: &ServerState, session: &Session) -> Result<Principal, ApiError> {
    Ok(session::learner_of(&state.services, session).await?)
}

/// A share's page data and where the caller stands (drafts and archived
/// shares do not exist for learners).
#[utoipa::path(get, path = "/api/v1/s/{slug}", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    responses(
        (status = 200, description = "The share", body = SharePage),
        (status = 404, description = "No such share", body = ErrorBody),
    ))]
pub async fn share(
    State(state): State<ServerState>,
    session: Session,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let overview = learner::share_overview(&state.services, &session, &slug).await?;
    let me = match overview.standing {
        Standing::SignedOut => Me {
            signed_in: false,
            email: None,
            binding: None,
            pending: false,
            must_verify: false,
        },
        Standing::NeedsCode(p) => Me {
            signed_in: true,
            pending: false,
            must_verify: false,
            email: Some(p.email),
            binding: None,
        },
        Standing::Pending {
            principal,
            must_verify,
        } => Me {
            signed_in: true,
            pending: true,
            must_verify,
            email: Some(principal.email),
            binding: None,
        },
        Standing::Holds(p, binding) => Me {
            signed_in: true,
            email: Some(p.email),
            pending: false,
            must_verify: false,
            binding: Some(binding),
        },
    };
    let share = overview.share;
    Ok(Json(SharePage {
        share: PublicShare {
            id: share.id.0,
            slug: share.slug,
            title: share.title,
            description: share.description,
            status: share.status,
        },
        available: overview.unavailable.is_none(),
        unavailable: overview.unavailable,
        unavailable_reason: overview.unavailable.map(|why| why.to_string()),
        resources: overview.resources,
        me,
        brand: overview.branding.map(Into::into),
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct CodeBody {
    /// As typed: spaces, dashes, lower case and O/0, I/L/1 are forgiven.
    code: String,
}

/// Phases 1+2: checks a code and keeps it pending for this session. Binds
/// nothing: the first opening of content does.
#[utoipa::path(post, path = "/api/v1/s/{slug}/code", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    request_body = CodeBody,
    responses(
        (status = 200, description = "Pending (or already yours)", body = schema::CodeEntered),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "The share is paused or closed", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "Used by another account (`code_bound`), revoked (`code_revoked`), past its date (`code_expired`), or you already have access (`already_has_access`)", body = ErrorBody),
        (status = 422, description = "Not a code (typo), or not this share's", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
        (status = 503, description = "Degraded: retry", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn enter_code(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Result<Json<CodeBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let principal = signed_in(&state, &session).await?;
    let share = visible_share(&state, &slug).await?;
    let ip = client_ip(&state.services, &peer, &headers);
    let entered = learner::enter_code(
        &state.services,
        &session,
        &principal,
        ip,
        &share,
        &body.code,
    )
    .await?;
    Ok(Json(match entered {
        CodeEntered::AlreadyBound => schema::CodeEntered {
            status: "bound".into(),
            message: None,
        },
        CodeEntered::Pending => schema::CodeEntered {
            status: "pending".into(),
            message: Some(
                "Code accepted. It will be bound to this account when you first open the course."
                    .into(),
            ),
        },
    }))
}

/// The request id of this attempt: the caller's `Idempotency-Key`, or new.
fn request_id(request: &Request) -> Result<RequestId, ApiError> {
    match request.headers().get("idempotency-key") {
        Some(value) => {
            let value = value
                .to_str()
                .map_err(|_| ApiError::from(SettlementError::InvalidRequestId))?;
            Ok(RequestId::parse(value)?)
        }
        None => Ok(RequestId::generate()),
    }
}

/// The answer to opening a resource.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Opened {
    /// `bound` (this opening bound your code), `counted` (a new access),
    /// `reused` (a live grant of this resource already held) or `replayed`
    /// (a retry with the same `Idempotency-Key`, answered from its record).
    access: &'static str,
    /// The code this access is through.
    code_id: Uuid,
    /// Until when the bytes are served without opening it again.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    expires_at: time::OffsetDateTime,
    /// Where the bytes are (`GET`, with `Range`), under this grant.
    content_url: String,
}

/// Phase 3: opens a resource, the one moment an access is counted. A first
/// opening binds the pending code for good; later ones count a new access
/// once the last one expired, or reuse the live grant. A retry with the
/// same `Idempotency-Key` is answered from the first attempt. Cross-site
/// requests are refused (the `Origin` check).
#[utoipa::path(post, path = "/api/v1/s/{slug}/resources/{resource_id}/open", tag = "learner",
    params(
        ("slug" = String, Path, description = "The share's link name"),
        ("resource_id" = Uuid, Path, description = "The resource"),
        ("Idempotency-Key" = Option<String>, Header, description = "Reuse for retries of one attempt"),
    ),
    responses(
        (status = 200, description = "Opened: the grant and where its bytes are", body = Opened),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "No access: enter a code first (`code_required`), paused, limit reached, your access period ended (`access_ended`, with its date), or a request from another site", body = ErrorBody),
        (status = 404, description = "No such share or resource", body = ErrorBody),
        (status = 409, description = "Code used by another account (`code_bound`), revoked (`code_revoked`), past its date before it was bound (`code_expired`), or busy: retry", body = ErrorBody),
        (status = 422, description = "Bad Idempotency-Key", body = ErrorBody),
        (status = 503, description = "Degraded: retry", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn open(
    State(state): State<ServerState>,
    session: Session,
    Path((slug, resource_id)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    // Signed in, as the session says: the settlement checks the account.
    let claim = session::claimed(&state.services, &session).await?;
    let share = learner::share_to_open(&state.services, &slug).await?;
    let resource_id = Uuid::parse_str(&resource_id).map_err(|_| ApiError::not_found())?;
    let request_id = request_id(&request)?;
    let cross_site = learner::is_cross_site(request.headers());
    let grant = learner::open(
        &state.services,
        &session,
        claim,
        learner::Opening {
            share: &share,
            resource: resource_id,
            request_id,
            cross_site,
            patience: learner::Patience::AnswerAtOnce,
        },
    )
    .await?;
    let access = if grant.replayed {
        "replayed"
    } else if grant.bound_now {
        "bound"
    } else if grant.counted {
        "counted"
    } else {
        "reused"
    };
    let mut response = Json(Opened {
        access,
        code_id: grant.code_id,
        expires_at: grant.expires_at,
        content_url: format!("/api/v1/s/{}/resources/{resource_id}/content", share.slug),
    })
    .into_response();
    response.headers_mut().insert(
        HeaderName::from_static("x-admitone-access"),
        HeaderValue::from_static(access),
    );
    Ok(response)
}

/// A resource's bytes, with `Range`, under the live grant an opening left
/// (`POST …/open` or the resource page). Never counts, binds or debits: a
/// request from any site serves only what the learner opened. A revoke,
/// an unbind, a pause or "sign out everywhere" stops it within
/// `settlement.grant_recheck_secs` (5 s by default).
#[utoipa::path(get, path = "/api/v1/s/{slug}/resources/{resource_id}/content", tag = "learner",
    params(
        ("slug" = String, Path, description = "The share's link name"),
        ("resource_id" = Uuid, Path, description = "The resource"),
    ),
    responses(
        (status = 200, description = "The bytes", content_type = "application/octet-stream"),
        (status = 206, description = "A byte range", content_type = "application/octet-stream"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "No live grant (`open_from_course_page`: open it first), a paused share, a revoked code, or an ended access period (`access_ended`)", body = ErrorBody),
        (status = 404, description = "No such share or resource", body = ErrorBody),
        (status = 416, description = "Range not satisfiable"),
        (status = 429, description = "Too many requests from this account", body = ErrorBody),
        (status = 503, description = "Degraded: retry", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn content(
    State(state): State<ServerState>,
    session: Session,
    Path((slug, resource_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let resource_id = Uuid::parse_str(&resource_id).map_err(|_| ApiError::not_found())?;
    let grant = content::live_grant(&state.services, &session, &slug, resource_id).await?;
    crate::content::serve(&state.services.storage, &grant.resource, &headers).await
}
