//! Admin endpoints on a share's access codes: issue a batch, list them,
//! read one, find one by its full text, revoke one, unbind one, replace a
//! lost one.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    code_actions::{self, CodeError},
    code_table, idempotency,
    tenants::Permission,
    tenants::TenantId,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Caller, member_of_code, member_of_share, member_of_tenant, parse_id};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency::{batch_key, create_once, key_of},
        schema::{
            CodeChanged, CodePage, ErrorBody, ExpiryBody, FoundCode, IssuedBatch, IssuedCode,
        },
    },
    state::ServerState,
};

#[derive(Deserialize, utoipa::ToSchema)]
pub struct IssueBody {
    /// 1 to 100,000.
    count: i64,
    label: Option<String>,
    /// When the batch's unused codes stop working (RFC 3339, in the
    /// future); absent or `null`: never. Codes bound before it keep working.
    #[schema(value_type = Option<String>, format = DateTime)]
    expires_at: Option<String>,
    /// Codes to be mailed (`POST /api/v1/batches/{id}/send`): derived from
    /// their ids, so the server writes each into its mail; this answer then
    /// carries none of them (`codes` is empty), so no code is in two hands
    /// (default `false`: drawn at random, shown once, here).
    mailable: Option<bool>,
}

/// Issues a batch of codes; the plain codes are in this answer only.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/codes", tag = "admin",
    params(
        ("share_id" = Uuid, Path, description = "The share"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key from the same login (token or session) issues nothing new and answers the original batch, codes included, for 15 minutes")
    ),
    request_body = IssueBody,
    responses(
        (status = 201, description = "Issued", body = IssuedBatch),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "This Idempotency-Key issued a batch whose answer is no longer held (15 minutes passed)", body = ErrorBody),
        (status = 422, description = "Invalid count, label or expiry date", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn issue_codes(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: Result<Json<IssueBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let expires_at = super::batches::parse_expiry(body.expires_at.as_deref())?;
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(value) => {
            let value = value.to_str().map_err(|_| {
                ApiError::from(engine::settlement::SettlementError::InvalidRequestId)
            })?;
            Some(engine::settlement::RequestId::parse(value)?)
        }
    };
    // A key is one login's (`idempotency::batch_key`).
    let key = key.map(|key| batch_key(&caller.login(), key.as_str()));
    let mailable = body.mailable.unwrap_or(false);
    let batch = service::issuing::issue_for_api(
        &state.services,
        &admin,
        &share,
        body.count,
        body.label.as_deref().unwrap_or(""),
        expires_at,
        key.as_deref(),
        mailable,
    )
    .await?;
    let codes: Vec<_> = batch
        .codes
        .into_iter()
        .map(|(id, code)| IssuedCode { id, code })
        .collect();
    Ok((
        StatusCode::CREATED,
        Json(IssuedBatch {
            batch_id: batch.batch_id,
            // A mailable batch answers its size and no code.
            count: if mailable {
                usize::try_from(body.count).unwrap_or_default()
            } else {
                codes.len()
            },
            codes,
        }),
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    after: Option<Uuid>,
    limit: Option<i64>,
    /// `unused`, `bound`, `revoked` or `expired`.
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
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1_000);
    let filter = code_table::CodeFilter {
        state: query
            .state
            .as_deref()
            .map(code_table::CodeState::parse)
            .transpose()
            .map_err(CodeError::from)?,
        batch: query.batch,
        search: query.q,
        code: None,
    };
    let page = code_table::list_codes(
        &state.services.pool,
        share.tenant(),
        share.id,
        &filter,
        query
            .after
            .map_or(code_table::Cursor::First, code_table::Cursor::After),
        limit,
    )
    .await?;
    Ok(Json(CodePage {
        codes: page.codes,
        has_more: page.next_after.is_some(),
        next_after: page.next_after,
    }))
}

/// The code with id `code` of a share, as the code table shows it.
async fn code_view(
    state: &ServerState,
    tenant: TenantId,
    share: engine::shares::ShareId,
    code: Uuid,
) -> Result<code_table::CodeView, ApiError> {
    let filter = code_table::CodeFilter {
        code: Some(code),
        ..Default::default()
    };
    code_table::list_codes(
        &state.services.pool,
        tenant,
        share,
        &filter,
        code_table::Cursor::First,
        1,
    )
    .await?
    .codes
    .pop()
    .ok_or_else(ApiError::not_found)
}

/// Reads one code: its state, batch and, once bound, its learner.
#[utoipa::path(get, path = "/api/v1/codes/{code_id}", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code")),
    responses(
        (status = 200, description = "The code", body = FoundCode),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let code = parse_id(&code_id)?;
    let among = caller.tenants(&state).await?;
    let Some((tenant, share)) =
        code_table::share_of_code(&state.services.pool, &among, code).await?
    else {
        return Err(caller.refuse(&state).await);
    };
    caller
        .member_of(&state, tenant, Permission::ViewConsole)
        .await?;
    Ok(Json(FoundCode {
        share_id: share.0,
        code: code_view(&state, tenant, share, code).await?,
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct FindBody {
    /// The full code as the learner has it (`XXXX-XXXX-XXXX`; case,
    /// spaces and dashes do not matter).
    code: String,
}

/// Finds a code of the tenant by its full text, whichever share it is of
/// (support: "my code doesn't work"). Sent in the body, so the code never
/// reaches a URL or a log; it is only hashed.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/codes/find", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    request_body = FindBody,
    responses(
        (status = 200, description = "The code", body = FoundCode),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No code of this tenant matches", body = ErrorBody),
        (status = 422, description = "Not a code's format (`field`: `code`)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn find_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Json<FindBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ViewConsole).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let plain = code_table::read_pasted(&state.services.pool, tenant, &body.code).await??;
    let Some((share, code)) = code_table::find_code(
        &state.services.pool,
        &state.services.keyring,
        tenant,
        &plain,
    )
    .await?
    else {
        return Err(ApiError::new(
            engine::outcome::ErrorKind::NotFound,
            "code_not_found",
            "no code of this tenant matches: it may belong to another course creator, or be mistyped",
        ));
    };
    Ok(Json(FoundCode {
        share_id: share.0,
        code: code_view(&state, tenant, share, code).await?,
    }))
}

/// Sets one unused code's own expiry date, overriding its batch's, or
/// (`null`) lets its batch's date apply again; an expired unused code
/// given a later date is usable again. Audited.
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/expiry", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code")),
    request_body = ExpiryBody,
    responses(
        (status = 200, description = "The code with its new date", body = FoundCode),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 409, description = "The code is bound or revoked: its date no longer applies", body = ErrorBody),
        (status = 422, description = "Not an RFC 3339 date, or not in the future", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn set_code_expiry(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    body: Result<Json<ExpiryBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let expires_at = super::batches::parse_expiry(body.expires_at.as_deref())?;
    let pool = &state.services.pool;
    code_actions::set_code_expiry(pool, tenant, admin.id, code, expires_at).await?;
    let share = code_table::share_of_code(pool, &[tenant], code)
        .await?
        .map(|(_, share)| share)
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(FoundCode {
        share_id: share.0,
        code: code_view(&state, tenant, share, code).await?,
    }))
}

/// Revokes a code; a learner bound to it loses access.
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/revoke", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code")),
    responses(
        (status = 200, description = "Revoked", body = CodeChanged),
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
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    code_actions::revoke_code(&state.services.pool, tenant, admin.id, code).await?;
    Ok(Json(CodeChanged {
        id: code,
        state: code_actions::CodeState::Revoked,
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
        (status = 200, description = "Unbound", body = CodeChanged),
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
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    // The state the code is in afterwards, not the one asked for: a code
    // revoked while bound stays revoked when it is unbound.
    let state = code_actions::unbind_code(
        &state.services.pool,
        tenant,
        admin.id,
        code,
        &body.reason,
        body.revoke,
    )
    .await?;
    Ok(Json(CodeChanged { id: code, state }))
}

/// A replacement code: the only answer that carries it in full.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReplacedCode {
    /// The new code's id.
    pub id: Uuid,
    /// `XXXX-XXXX-XXXX`, shown in this answer only (and to a retry with
    /// the same `Idempotency-Key` for 15 minutes).
    pub code: String,
    /// The code it replaces, revoked now.
    pub replaced_id: Uuid,
    pub batch_id: Uuid,
}

/// Never the plain code (logs, error chains).
impl std::fmt::Debug for ReplacedCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplacedCode")
            .field("id", &self.id)
            .field("replaced_id", &self.replaced_id)
            .finish_non_exhaustive()
    }
}

/// Replaces a lost unused code: in one transaction the old code is revoked
/// and a new one issued in the same batch (audited `code.replaced`). The
/// new plain code is in this answer only; send an `Idempotency-Key` so a
/// retry of a lost answer gets it instead of replacing it again (which
/// would refuse: the old code is revoked by then).
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/replace", tag = "admin",
    params(
        ("code_id" = Uuid, Path, description = "The unused code to replace"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key replaces nothing new and answers the original 201, code included (for 15 minutes)"),
    ),
    responses(
        (status = 201, description = "Replaced", body = ReplacedCode),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 409, description = "The code is bound or revoked (`code_not_replaceable`), past its date (`code_expired`: give it a later date first), or the Idempotency-Key's first attempt still runs or its answer is no longer held", body = ErrorBody),
        (status = 422, description = "The Idempotency-Key is malformed, or was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn replace_code(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let key = key_of(&headers)?;
    let (pool, keyring) = (state.services.pool.clone(), state.services.keyring.clone());
    let answer = create_once(
        &state,
        key,
        &caller.login(),
        idempotency::Scope {
            tenant,
            actor: admin.id,
        },
        "replace_code",
        code.as_bytes(),
        |replaced: &ReplacedCode| replaced.id,
        async move {
            let new = code_actions::replace_code(&pool, &keyring, tenant, admin.id, code).await?;
            Ok(ReplacedCode {
                id: new.id,
                code: new.plain.display(),
                replaced_id: code,
                batch_id: new.batch,
            })
        },
    )
    .await?;
    still_unused_if_replayed(&state, tenant, answer).await
}

/// A replayed answer hands its code out again only while that code is
/// still unused: once it was replaced in turn, bound or revoked, the retry
/// hears `idempotent_answer_gone` naming it instead.
async fn still_unused_if_replayed(
    state: &ServerState,
    tenant: TenantId,
    answer: axum::response::Response,
) -> Result<axum::response::Response, ApiError> {
    if !answer.headers().contains_key("idempotent-replayed") {
        return Ok(answer);
    }
    let (parts, body) = answer.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map_err(|e| anyhow::anyhow!("reading a held answer: {e}"))?;
    let id = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["id"].as_str().and_then(|id| Uuid::parse_str(id).ok()))
        .ok_or_else(|| anyhow::anyhow!("a held replacement answer has no id"))?;
    if !code_table::is_unused(&state.services.pool, tenant, id).await? {
        return Err(ApiError::new(
            engine::outcome::ErrorKind::Conflict,
            "idempotent_answer_gone",
            format!(
                "this Idempotency-Key replaced the code with {id}, which is no longer unused; its code is not handed out again"
            ),
        ));
    }
    Ok(axum::response::Response::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
}
