//! Admin endpoint for a leaked code: revoke it and bind a new one to its
//! learner (see `engine::leaks`). The alert itself is a webhook event,
//! `code.leak_suspected`, and a mail to the tenant's owners.

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
};
use engine::{idempotency, leaks};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Caller, member_of_code};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency::{create_once, key_of},
        schema::ErrorBody,
    },
    state::ServerState,
};

#[derive(Deserialize, utoipa::ToSchema)]
pub struct ReissueBody {
    /// Why (1 to 500 characters): kept in the audit log and quoted in the
    /// learner's mail.
    reason: String,
}

/// The code that replaced a leaked one. It is bound to the learner
/// already, so its text is never handed out: nobody needs to type it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Reissued {
    /// The new code's id.
    pub id: Uuid,
    /// Its last characters, as the learner's mail names it.
    pub hint: String,
    /// The leaked code, revoked now.
    pub replaced_id: Uuid,
    /// The learner both codes were bound to.
    pub principal: Uuid,
}

/// Revokes a bound code whose text leaked and binds a new code to its
/// learner in the same transaction: whoever holds the leaked text is
/// refused from now on, the learner keeps their access (first use,
/// accesses and extension carry over) and gets a mail. Audited
/// (`code.unbound`, `code.replaced`); webhook events `code.unbound` and
/// `code.replaced`.
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/revoke-and-replace", tag = "admin",
    params(
        ("code_id" = Uuid, Path, description = "The bound code whose text leaked"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key replaces nothing new and answers the original 201 (for 15 minutes)"),
    ),
    request_body = ReissueBody,
    responses(
        (status = 201, description = "Revoked and replaced", body = Reissued),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 409, description = "The code is not bound, or is revoked (`code_not_bound`), or the Idempotency-Key's first attempt still runs or its answer is no longer held", body = ErrorBody),
        (status = 422, description = "Missing reason, or the Idempotency-Key was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn revoke_and_replace(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: Result<Json<ReissueBody>, JsonRejection>,
) -> Result<axum::response::Response, ApiError> {
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let key = key_of(&headers)?;
    let (pool, keyring) = (state.services.pool.clone(), state.services.keyring.clone());
    let mut request = code.as_bytes().to_vec();
    request.extend_from_slice(body.reason.trim().as_bytes());
    create_once(
        &state,
        key,
        &caller.login(),
        idempotency::Scope {
            tenant,
            actor: admin.id,
        },
        "revoke_and_replace",
        &request,
        |reissued: &Reissued| reissued.id,
        async move {
            let new =
                leaks::revoke_and_replace(&pool, &keyring, tenant, admin.id, code, &body.reason)
                    .await?;
            Ok(Reissued {
                id: new.id,
                hint: new.hint,
                replaced_id: code,
                principal: new.principal.0,
            })
        },
    )
    .await
}
