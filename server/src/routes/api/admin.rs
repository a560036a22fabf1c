//! Admin endpoints. Each resolves the tenant that owns its target first and
//! authorises against it (`admin_of`), so a path naming another tenant's
//! share or code is refused before anything is read or written.

use axum::{
    Json,
    extract::{Multipart, Path, Query, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    accounts::Principal,
    batches, code_admin, resources,
    shares::{self, NewShare, Share, ShareId, ShareInput, ShareStatus},
    storage::Storage,
    tenants::TenantId,
    tokens::{self, Scope, TokenCaller},
};
use serde::Deserialize;
use service::ServiceError;
use tower_sessions::Session;
use uuid::Uuid;

use super::{
    error::{ApiError, rejection},
    schema::{CodePage, CodeState, ErrorBody, IssuedBatch, IssuedCode, StatusChanged, UploadForm},
};
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
                .ok_or(ServiceError::Unauthenticated)?;
            let caller = tokens::authenticate(
                &state.services.pool,
                &secrecy::SecretString::from(token.trim().to_owned()),
            )
            .await?
            .ok_or(ServiceError::Unauthenticated)?;
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
            Self::Session(session) => {
                Ok(service::session::admin_of(&state.services, session, tenant).await?)
            }
            Self::Token(token) if token.tenant == tenant && token.allows(scope) => {
                Ok(token.principal.clone())
            }
            Self::Token(_) => Err(ServiceError::Forbidden.into()),
        }
    }

    /// 401 for nobody, else 403: what an unknown object answers, so ids
    /// cannot be probed.
    async fn refuse(&self, state: &ServerState) -> ApiError {
        match self {
            Self::Session(session) => {
                match service::session::principal_of(&state.services, session).await {
                    Ok(Some(_)) => ServiceError::Forbidden.into(),
                    Ok(None) => ServiceError::Unauthenticated.into(),
                    Err(error) => error.into(),
                }
            }
            Self::Token(_) => ServiceError::Forbidden.into(),
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
    let share = shares::get(&state.services.pool, ShareId(parse_id(share_id)?)).await?;
    // Authorise before revealing whether the share exists.
    let Some(share) = share else {
        return Err(caller.refuse(state).await);
    };
    let admin = caller.admin_of(state, share.tenant(), scope).await?;
    Ok((share, admin))
}

/// Creates a share in a tenant.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/shares", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    request_body = ShareInput,
    responses(
        (status = 201, description = "Created", body = Share),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 422, description = "Invalid field, or the link name is taken (`slug_taken`)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn create_share(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Json<ShareInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let tenant =
        TenantId(parse_id(&tenant_id).map_err(|_| ApiError::from(ServiceError::Forbidden))?);
    let admin = caller.admin_of(&state, tenant, Scope::Write).await?;
    let Json(input) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let new = NewShare::parse(input)?;
    let share = shares::create_share(&state.services.pool, tenant, admin.id, new).await?;
    Ok((StatusCode::CREATED, Json(share)))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct StatusBody {
    /// `draft`, `active`, `paused` or `archived`.
    status: String,
}

/// Sets a share's status.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/status", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    request_body = StatusBody,
    responses(
        (status = 200, description = "Changed", body = StatusChanged),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 422, description = "Invalid status", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
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
        &state.services.pool,
        share.tenant(),
        admin.id,
        ShareId(share.id),
        status,
    )
    .await?;
    Ok(Json(StatusChanged {
        id: share.id,
        status: status.as_str().to_owned(),
    }))
}

/// Uploads a file as a new resource of a share (streamed; size limited).
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/resources", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Stored", body = engine::resources::Resource),
        (status = 400, description = "Not a multipart body", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 413, description = "Larger than the configured limit", body = ErrorBody),
        (status = 422, description = "Missing file or bad title", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn upload_resource(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let multipart = multipart.map_err(|e| rejection(e, "invalid_multipart"))?;
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
) -> Result<resources::Resource, ApiError> {
    let (share, admin) = admin_of_share(state, caller, share_id, Scope::Write).await?;
    let resource_id = Uuid::now_v7();
    let key = Storage::key_for(share.tenant_id, share.id, resource_id);
    let stored = store_upload(state, &key, &mut multipart).await;
    let result = match stored {
        Ok((title, size, content_type)) => resources::add_resource(
            &state.services.pool,
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
            if let Err(cleanup) = state.services.storage.delete(&key).await {
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
                    .services
                    .storage
                    .put(key, field, state.services.max_upload_bytes)
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

#[derive(Deserialize, utoipa::ToSchema)]
pub struct IssueBody {
    /// 1 to 100,000.
    count: i64,
    label: Option<String>,
}

/// Issues a batch of codes; the plain codes are in this answer only.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/codes", tag = "admin",
    params(
        ("share_id" = Uuid, Path, description = "The share"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key issues nothing new")
    ),
    request_body = IssueBody,
    responses(
        (status = 201, description = "Issued", body = IssuedBatch),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "This Idempotency-Key already issued a batch", body = ErrorBody),
        (status = 422, description = "Invalid count or label", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
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
    let request = batches::BatchRequest {
        share: ShareId(share.id),
        count: body.count,
        label: body.label.as_deref().unwrap_or(""),
        idempotency_key: key.as_ref().map(engine::settlement::RequestId::as_str),
        progress: None,
    };
    let batch = batches::issue_codes(
        &state.services.pool,
        &state.services.keyring,
        share.tenant(),
        admin.id,
        &request,
    )
    .await?;
    let codes: Vec<_> = batch
        .codes
        .iter()
        .map(|(id, code)| IssuedCode {
            id: *id,
            code: code.display(),
        })
        .collect();
    Ok((
        StatusCode::CREATED,
        Json(IssuedBatch {
            batch_id: batch.batch_id,
            count: codes.len(),
            codes,
        }),
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    after: Option<Uuid>,
    limit: Option<i64>,
    /// `unused`, `bound` or `revoked`.
    state: Option<String>,
    batch: Option<Uuid>,
    /// Part of a hint or of a bound learner's email.
    q: Option<String>,
}

/// Lists a share's codes (keyset pages, filters).
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/codes", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share"), ListQuery),
    responses(
        (status = 200, description = "A page", body = CodePage),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 422, description = "Invalid filter", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_codes(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = admin_of_share(&state, &caller, &share_id, Scope::Read).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1_000);
    let filter = code_admin::CodeFilter {
        state: query
            .state
            .as_deref()
            .map(code_admin::CodeState::parse)
            .transpose()?,
        batch: query.batch,
        search: query.q,
    };
    let codes = code_admin::list_codes(
        &state.services.pool,
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
    Ok(Json(CodePage { codes, next_after }))
}

/// The tenant of a code and its admin, or 401/403/404.
async fn admin_of_code(
    state: &ServerState,
    caller: &Caller,
    code_id: &str,
) -> Result<(TenantId, Uuid, Principal), ApiError> {
    let code = parse_id(code_id)?;
    let Some((tenant, _share)) = code_admin::share_of_code(&state.services.pool, code).await?
    else {
        return Err(caller.refuse(state).await);
    };
    let admin = caller.admin_of(state, tenant, Scope::Write).await?;
    Ok((tenant, code, admin))
}

/// Revokes a code; a learner bound to it loses access.
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/revoke", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code")),
    responses(
        (status = 200, description = "Revoked", body = CodeState),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn revoke_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = admin_of_code(&state, &caller, &code_id).await?;
    code_admin::revoke_code(&state.services.pool, tenant, admin.id, code).await?;
    Ok(Json(CodeState {
        id: code,
        state: "revoked".into(),
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct UnbindBody {
    reason: String,
    #[serde(default)]
    revoke: bool,
}

/// Unbinds a bound code (reason required, audited).
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/unbind", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code")),
    request_body = UnbindBody,
    responses(
        (status = 200, description = "Unbound", body = CodeState),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 409, description = "The code is not bound", body = ErrorBody),
        (status = 422, description = "Missing reason", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn unbind_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    body: Result<Json<UnbindBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = admin_of_code(&state, &caller, &code_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    code_admin::unbind_code(
        &state.services.pool,
        tenant,
        admin.id,
        code,
        &body.reason,
        body.revoke,
    )
    .await?;
    let state_name = if body.revoke { "revoked" } else { "unused" };
    Ok(Json(CodeState {
        id: code,
        state: state_name.into(),
    }))
}
