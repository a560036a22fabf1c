//! The learner's side of the API: a share's page data, phase 1+2 (enter a
//! code: validate, keep it pending in the session) and phase 3 (open
//! content: settle, then stream the bytes with Range support).

use std::net::SocketAddr;

use app::auth::guard;
use axum::{
    Json,
    body::Body,
    extract::{ConnectInfo, Path, Request, State, rejection::JsonRejection},
    http::{HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use engine::{
    accounts::Principal,
    codes::PlainCode,
    coordination::ThrottleScope,
    settlement::{self, RequestId, SettlementError, SettlementRequest},
    shares::{self, Share, ShareId},
    storage::ByteRange,
};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;
use uuid::Uuid;

use super::error::{ApiError, rejection};
use crate::startup::ServerState;

/// The session key of a share's pending code (phase 2).
pub fn pending_key(share: Uuid) -> String {
    format!("pending:{share}")
}

/// A share learners may see (active, paused or outside its window: the
/// page explains); drafts and archived shares do not exist for them.
async fn visible_share(state: &ServerState, slug: &str) -> Result<Share, ApiError> {
    match shares::find_by_slug(&state.app.pool, slug).await? {
        Some(share) if share.status != "draft" && share.status != "archived" => Ok(share),
        _ => Err(ApiError::not_found()),
    }
}

async fn signed_in(state: &ServerState, session: &Session) -> Result<Principal, ApiError> {
    Ok(guard::principal_of(&state.app, session)
        .await?
        .ok_or(app::error::AppError::Unauthenticated)?)
}

async fn pending_code(session: &Session, share: Uuid) -> Result<Option<Uuid>, ApiError> {
    session
        .get::<Uuid>(&pending_key(share))
        .await
        .map_err(|e| ApiError::from(guard::session_error(e)))
}

pub async fn share(
    State(state): State<ServerState>,
    session: Session,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let share = visible_share(&state, &slug).await?;
    let resources = shares::resources(&state.app.pool, share.tenant(), ShareId(share.id)).await?;
    let principal = guard::principal_of(&state.app, &session).await?;
    let me = match &principal {
        None => json!({ "signed_in": false }),
        Some(p) => {
            let binding = settlement::binding_of(&state.app.pool, &share, p.id).await?;
            let pending = pending_code(&session, share.id).await?.is_some();
            json!({ "signed_in": true, "email": p.email, "binding": binding, "pending": pending && binding.is_none() })
        }
    };
    let unavailable = share.unavailable_because(time::OffsetDateTime::now_utc());
    Ok(Json(json!({
        "share": {
            "id": share.id, "slug": share.slug, "title": share.title,
            "description": share.description, "status": share.status,
        },
        "available": unavailable.is_none(),
        "unavailable_reason": unavailable,
        "resources": resources,
        "me": me,
    })))
}

#[derive(Deserialize)]
pub struct CodeBody {
    code: String,
}

pub async fn enter_code(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    Path(slug): Path<String>,
    body: Result<Json<CodeBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let principal = signed_in(&state, &session).await?;
    let share = visible_share(&state, &slug).await?;
    // A typo is caught by the check symbol before any attempt is counted.
    let code = PlainCode::parse(&body.code).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_code",
            e.to_string(),
        )
    })?;
    let app = &state.app;
    use app::auth::flows::throttle;
    throttle(
        app,
        ThrottleScope::CodeAccount,
        &principal.id.0.to_string(),
        app.auth.code_per_account,
        "code attempts",
    )
    .await?;
    throttle(
        app,
        ThrottleScope::CodeIp,
        &peer.ip().to_string(),
        app.auth.code_per_ip,
        "code attempts from your network",
    )
    .await?;
    throttle(
        app,
        ThrottleScope::CodeShare,
        &share.id.to_string(),
        app.auth.code_per_share,
        "code attempts for this course",
    )
    .await?;
    let code_id =
        settlement::validate(&app.pool, &app.keyring, &share, principal.id, &code).await?;
    if settlement::binding_of(&app.pool, &share, principal.id)
        .await?
        .is_some()
    {
        return Ok(Json(json!({ "status": "bound" })));
    }
    session
        .insert(&pending_key(share.id), code_id)
        .await
        .map_err(|e| ApiError::from(guard::session_error(e)))?;
    Ok(Json(json!({
        "status": "pending",
        "message": "Code accepted. It will be bound to this account when you first open the course.",
    })))
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

pub async fn content(
    State(state): State<ServerState>,
    session: Session,
    Path((slug, resource_id)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    let principal = signed_in(&state, &session).await?;
    let share = visible_share(&state, &slug).await?;
    let resource_id = Uuid::parse_str(&resource_id).map_err(|_| ApiError::not_found())?;
    let resource = shares::resource(
        &state.app.pool,
        share.tenant(),
        ShareId(share.id),
        resource_id,
    )
    .await?
    .ok_or_else(ApiError::not_found)?;
    let request_id = request_id(&request)?;
    // A first access binds a code for good, so it must come from this site:
    // a cross-site navigation (which SameSite=Lax lets through with the
    // cookie) may only reach content the learner already holds.
    let cross_site = request
        .headers()
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site");
    let pending = if cross_site {
        None
    } else {
        pending_code(&session, share.id).await?
    };
    let settle = SettlementRequest {
        share: share.clone(),
        principal: principal.id,
        resource: resource.id,
        pending_code: pending,
        request_id,
    };
    let grant = state
        .app
        .settler
        .settle(&state.app.pool, &state.app.redis, &settle)
        .await?;
    if pending.is_some() {
        session
            .remove::<Uuid>(&pending_key(share.id))
            .await
            .map_err(|e| ApiError::from(guard::session_error(e)))?;
    }
    let range = request
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(ByteRange::parse);
    let mut response = match state.app.storage.get(&resource.storage_key, range).await? {
        Ok(read) => {
            let mut response = Response::new(Body::from_stream(read.body));
            let headers = response.headers_mut();
            headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            let content_type = HeaderValue::from_str(&resource.content_type)
                .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
            headers.insert(header::CONTENT_TYPE, content_type);
            match read.range {
                Some(served) => {
                    *response.status_mut() = StatusCode::PARTIAL_CONTENT;
                    let headers = response.headers_mut();
                    headers.insert(
                        header::CONTENT_LENGTH,
                        HeaderValue::from(served.end - served.start),
                    );
                    let value = format!(
                        "bytes {}-{}/{}",
                        served.start,
                        served.end.saturating_sub(1),
                        read.size
                    );
                    headers.insert(
                        header::CONTENT_RANGE,
                        HeaderValue::from_str(&value).map_err(anyhow::Error::new)?,
                    );
                }
                None => {
                    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(read.size));
                }
            }
            response
        }
        Err(size) => {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            let value = format!("bytes */{size}");
            response.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&value).map_err(anyhow::Error::new)?,
            );
            response
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let access = if grant.replayed {
        "replayed"
    } else if grant.bound_now {
        "bound"
    } else if grant.counted {
        "counted"
    } else {
        "reused"
    };
    headers.insert(
        HeaderName::from_static("x-admitone-access"),
        HeaderValue::from_static(access),
    );
    match resource.kind.as_str() {
        // Uploaded pages run sandboxed: no scripts on our origin.
        "page" => {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'",
                ),
            );
        }
        "file" => {
            headers.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment"),
            );
        }
        _ => {}
    }
    Ok(response)
}
