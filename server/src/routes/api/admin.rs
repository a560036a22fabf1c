//! Admin endpoints. Each resolves the tenant that owns its target first and
//! authorises against it (`admin_of`), so a path naming another tenant's
//! share or code is refused before anything is read or written.

use app::auth::guard;
use axum::{
    Json,
    extract::{Multipart, Path, Query, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    accounts::Principal,
    shares::{self, NewShare, Share, ShareId, ShareInput, ShareStatus},
    storage::Storage,
    tenants::TenantId,
    tokens::{self, Scope, TokenCaller},
};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;
use uuid::Uuid;

use super::error::{ApiError, rejection};
use crate::startup::ServerState;

fn parse_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::not_found())
}

/// Who calls an admin endpoint: a browser with an admin's session, or an
/// integration with an API token (`Authorization: Bearer a1t_…`).
pub enum Caller {
    Session(Session),
    Token(TokenCaller),
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller
where
    ServerState: axum::extract::FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let state = <ServerState as axum::extract::FromRef<S>>::from_ref(state);
        if let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or(app::error::AppError::Unauthenticated)?;
            let caller = tokens::authenticate(
                &state.app.pool,
                &secrecy::SecretString::from(token.trim().to_owned()),
            )
            .await?
            .ok_or(app::error::AppError::Unauthenticated)?;
            return Ok(Self::Token(caller));
        }
        let session = Session::from_request_parts(parts, &state)
            .await
            .map_err(|(_, message)| anyhow::anyhow!("session layer missing: {message}"))?;
        Ok(Self::Session(session))
    }
}

impl Caller {
    /// The admin acting on `tenant` with `scope`, or 401/403.
    pub async fn admin_of(
        &self,
        state: &ServerState,
        tenant: TenantId,
        scope: Scope,
    ) -> Result<Principal, ApiError> {
        match self {
            Self::Session(session) => Ok(guard::admin_of(&state.app, session, tenant).await?),
            Self::Token(token) if token.tenant == tenant && token.allows(scope) => {
                Ok(token.principal.clone())
            }
            Self::Token(_) => Err(app::error::AppError::Forbidden.into()),
        }
    }

    /// 401 for nobody, else 403: what an unknown object answers, so ids
    /// cannot be probed.
    async fn refuse(&self, state: &ServerState) -> ApiError {
        match self {
            Self::Session(session) => match guard::principal_of(&state.app, session).await {
                Ok(Some(_)) => app::error::AppError::Forbidden.into(),
                Ok(None) => app::error::AppError::Unauthenticated.into(),
                Err(error) => error.into(),
            },
            Self::Token(_) => app::error::AppError::Forbidden.into(),
        }
    }
}

/// The share and its admin, or 401/403/404.
async fn admin_of_share(
    state: &ServerState,
    caller: &Caller,
    share_id: &str,
    scope: Scope,
) -> Result<(Share, Principal), ApiError> {
    let share = shares::get(&state.app.pool, ShareId(parse_id(share_id)?)).await?;
    // Authorise before revealing whether the share exists.
    let Some(share) = share else {
        return Err(caller.refuse(state).await);
    };
    let admin = caller.admin_of(state, share.tenant(), scope).await?;
    Ok((share, admin))
}

pub async fn create_share(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Json<ShareInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let tenant = TenantId(
        parse_id(&tenant_id).map_err(|_| ApiError::from(app::error::AppError::Forbidden))?,
    );
    let admin = caller.admin_of(&state, tenant, Scope::Write).await?;
    let Json(input) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let new = NewShare::parse(input)?;
    let share = shares::create_share(&state.app.pool, tenant, admin.id, new).await?;
    Ok((StatusCode::CREATED, Json(share)))
}

#[derive(Deserialize)]
pub struct StatusBody {
    status: String,
}

pub async fn set_status(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    body: Result<Json<StatusBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) = admin_of_share(&state, &caller, &share_id, Scope::Write).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let status = ShareStatus::parse(&body.status)?;
    shares::set_status(
        &state.app.pool,
        share.tenant(),
        admin.id,
        ShareId(share.id),
        status,
    )
    .await?;
    Ok(Json(json!({ "id": share.id, "status": status.as_str() })))
}

pub async fn upload_resource(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    multipart: Multipart,
) -> Result<impl IntoResponse, ApiError> {
    let resource = upload(&state, &caller, &share_id, multipart).await?;
    Ok((StatusCode::CREATED, Json(resource)))
}

/// Stores an uploaded file as a new resource of the share (its admins
/// only); the bytes are removed again if anything fails.
pub async fn upload(
    state: &ServerState,
    caller: &Caller,
    share_id: &str,
    mut multipart: Multipart,
) -> Result<shares::Resource, ApiError> {
    let (share, admin) = admin_of_share(state, caller, share_id, Scope::Write).await?;
    let resource_id = Uuid::now_v7();
    let key = Storage::key_for(share.tenant_id, share.id, resource_id);
    let stored = store_upload(state, &key, &mut multipart).await;
    let result = match stored {
        Ok((title, size, content_type)) => shares::add_resource(
            &state.app.pool,
            share.tenant(),
            admin.id,
            ShareId(share.id),
            resource_id,
            &title,
            &content_type,
            i64::try_from(size).unwrap_or(i64::MAX),
            &key,
        )
        .await
        .map_err(ApiError::from),
        Err(error) => Err(error),
    };
    match result {
        Ok(resource) => Ok(resource),
        Err(error) => {
            // Nothing points at stored bytes of a failed upload: remove them.
            if let Err(cleanup) = state.app.storage.delete(&key).await {
                tracing::warn!(
                    error = format!("{cleanup:#}"),
                    "removing an orphaned upload failed"
                );
            }
            Err(error)
        }
    }
}

/// Longest accepted resource title field, in bytes.
const MAX_TITLE_BYTES: usize = 1_024;

/// Reads the multipart body: streams `file` into storage, reads a bounded
/// `title`. Returns (title, size, content type).
async fn store_upload(
    state: &ServerState,
    key: &str,
    multipart: &mut Multipart,
) -> Result<(String, u64, String), ApiError> {
    let mut title: Option<String> = None;
    let mut stored: Option<(String, u64, String)> = None;
    while let Some(mut field) = multipart
        .next_field()
        .await
        .map_err(|e| rejection(e, "invalid_multipart"))?
    {
        match field.name() {
            Some("title") => {
                let mut bytes = Vec::new();
                while let Some(chunk) = field
                    .chunk()
                    .await
                    .map_err(|e| rejection(e, "invalid_multipart"))?
                {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > MAX_TITLE_BYTES {
                        return Err(ApiError::invalid(
                            "title",
                            "a title needs 1 to 200 visible characters",
                        ));
                    }
                }
                title = Some(
                    String::from_utf8(bytes)
                        .map_err(|_| ApiError::invalid("title", "a title is text"))?,
                );
            }
            Some("file") if stored.is_none() => {
                let file_name = field.file_name().unwrap_or("file").to_owned();
                let content_type = field
                    .content_type()
                    .filter(|ct| !ct.is_empty())
                    .unwrap_or("application/octet-stream")
                    .to_owned();
                let size = state
                    .app
                    .storage
                    .put(key, field, state.app.max_upload_bytes)
                    .await?;
                stored = Some((file_name, size, content_type));
            }
            _ => {}
        }
    }
    let (file_name, size, content_type) = stored.ok_or_else(|| {
        ApiError::invalid(
            "file",
            "attach the file in a multipart field named \"file\"",
        )
    })?;
    let title = title.filter(|t| !t.trim().is_empty()).unwrap_or(file_name);
    Ok((title, size, content_type))
}

#[derive(Deserialize)]
pub struct IssueBody {
    count: i64,
    label: Option<String>,
}

pub async fn issue_codes(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: Result<Json<IssueBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) = admin_of_share(&state, &caller, &share_id, Scope::Write).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(value) => {
            let value = value.to_str().map_err(|_| {
                ApiError::from(engine::settlement::SettlementError::InvalidRequestId)
            })?;
            Some(engine::settlement::RequestId::parse(value)?)
        }
    };
    let request = shares::BatchRequest {
        share: ShareId(share.id),
        count: body.count,
        label: body.label.as_deref().unwrap_or(""),
        idempotency_key: key.as_ref().map(engine::settlement::RequestId::as_str),
    };
    let batch = shares::issue_codes(
        &state.app.pool,
        &state.app.keyring,
        share.tenant(),
        admin.id,
        &request,
    )
    .await?;
    let codes: Vec<_> = batch
        .codes
        .iter()
        .map(|(id, code)| json!({ "id": id, "code": code.display() }))
        .collect();
    Ok((
        StatusCode::CREATED,
        Json(json!({ "batch_id": batch.batch_id, "count": codes.len(), "codes": codes })),
    ))
}

#[derive(Deserialize)]
pub struct ListQuery {
    after: Option<Uuid>,
    limit: Option<i64>,
    /// `unused`, `bound` or `revoked`.
    state: Option<String>,
    batch: Option<Uuid>,
    /// Part of a hint or of a bound learner's email.
    q: Option<String>,
}

pub async fn list_codes(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = admin_of_share(&state, &caller, &share_id, Scope::Read).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1_000);
    let filter = shares::CodeFilter {
        state: query
            .state
            .as_deref()
            .map(shares::CodeState::parse)
            .transpose()?,
        batch: query.batch,
        search: query.q,
    };
    let codes = shares::list_codes(
        &state.app.pool,
        share.tenant(),
        ShareId(share.id),
        &filter,
        query.after,
        limit,
    )
    .await?;
    let next_after = (codes.len() as i64 == limit)
        .then(|| codes.last().map(|c| c.id))
        .flatten();
    Ok(Json(json!({ "codes": codes, "next_after": next_after })))
}

/// The tenant of a code and its admin, or 401/403/404.
async fn admin_of_code(
    state: &ServerState,
    caller: &Caller,
    code_id: &str,
) -> Result<(TenantId, Uuid, Principal), ApiError> {
    let code = parse_id(code_id)?;
    let Some((tenant, _share)) = shares::share_of_code(&state.app.pool, code).await? else {
        return Err(caller.refuse(state).await);
    };
    let admin = caller.admin_of(state, tenant, Scope::Write).await?;
    Ok((tenant, code, admin))
}

pub async fn revoke_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = admin_of_code(&state, &caller, &code_id).await?;
    shares::revoke_code(&state.app.pool, tenant, admin.id, code).await?;
    Ok(Json(json!({ "id": code, "state": "revoked" })))
}

#[derive(Deserialize)]
pub struct UnbindBody {
    reason: String,
    #[serde(default)]
    revoke: bool,
}

pub async fn unbind_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    body: Result<Json<UnbindBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = admin_of_code(&state, &caller, &code_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    shares::unbind_code(
        &state.app.pool,
        tenant,
        admin.id,
        code,
        &body.reason,
        body.revoke,
    )
    .await?;
    let state_name = if body.revoke { "revoked" } else { "unused" };
    Ok(Json(json!({ "id": code, "state": state_name })))
}
