//! The JSON API's side of `Idempotency-Key` on creates (the claim and the
//! held answer are `engine::idempotency`): a retry with the same key gets
//! the original `201` and body, marked `Idempotent-Replayed: true`,
//! creating nothing; the same key on a different request is 422
//! `idempotency_key_reused`; a retry while the first attempt still runs is
//! 409 `idempotency_key_in_flight` with `Retry-After`; once the answer is
//! no longer held (15 minutes), 409 `idempotent_answer_gone` names the
//! object that was created.
//!
//! The attempt runs in a task of its own: a client that goes away
//! mid-request (the usual way an answer gets lost) cannot cut the creation
//! from its claim's completion. (Issuing codes has its own, older
//! mechanism in `service::issuing::issue_for_api`.)

use std::future::Future;

use axum::{
    Json,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use engine::{
    idempotency::{self, Claim, Scope},
    outcome::ErrorKind,
};
use serde::Serialize;
use uuid::Uuid;

use crate::problem::ApiError;
use crate::state::ServerState;

/// The header, and the field its errors name.
pub const HEADER: &str = "Idempotency-Key";

/// The request's key, if it sent one: 1 to 255 visible ASCII characters.
pub fn key_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()))
        .map(|k| Some(k.to_owned()))
        .ok_or_else(|| {
            ApiError::invalid(
                HEADER,
                "an Idempotency-Key is 1 to 255 visible ASCII characters",
            )
        })
}

fn created_response(body: String, replayed: bool) -> Response {
    let mut response = (
        StatusCode::CREATED,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// The key a batch of codes is issued under: the caller's key within its
/// login (`session`, `token:<id>`), so that two logins of one member (two
/// tokens given to two shops) sending the same key are two requests, and
/// neither ever hears the other's plain codes. Digested, so that it fits
/// the 200 characters a batch's key may have whatever the login.
pub fn batch_key(login: &str, key: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{login}:{hex}")
}

/// Runs `create` once per key: `201` with its answer, the first time and
/// on every retry while the answer is held. `login` names who sent it (an
/// API token, or the session: keys of different logins never meet);
/// `request` is what the caller asked (its canonical bytes), compared
/// across retries; `id_of` names what was created.
#[expect(clippy::too_many_arguments, reason = "one use case's inputs")]
pub async fn create_once<T, F>(
    state: &ServerState,
    key: Option<String>,
    login: &str,
    scope: Scope,
    operation: &'static str,
    request: &[u8],
    id_of: fn(&T) -> Uuid,
    create: F,
) -> Result<Response, ApiError>
where
    T: Serialize + Send + 'static,
    F: Future<Output = Result<T, ApiError>> + Send + 'static,
{
    let Some(key) = key else {
        return Ok((StatusCode::CREATED, Json(create.await?)).into_response());
    };
    let key = format!("{login}:{key}");
    let services = &state.services;
    let digest = idempotency::digest(operation, request);
    let attempt = match idempotency::claim(&services.pool, scope, &key, &digest).await? {
        Claim::Run(attempt) => attempt,
        Claim::InFlight => {
            return Err(ApiError::new(
                ErrorKind::Busy,
                "idempotency_key_in_flight",
                "a request with this Idempotency-Key is still running; retry in a moment",
            ));
        }
        Claim::Mismatch => {
            return Err(ApiError::new(
                ErrorKind::Invalid,
                "idempotency_key_reused",
                "this Idempotency-Key was used for a different request",
            )
            .field(HEADER));
        }
        Claim::Done(id) => {
            return match idempotency::held(&services.redis, scope, &key).await? {
                Some(answer) => Ok(created_response(answer, true)),
                None => Err(ApiError::new(
                    ErrorKind::Conflict,
                    "idempotent_answer_gone",
                    format!(
                        "this Idempotency-Key already created {id}; its answer is no longer held (15 minutes)"
                    ),
                )),
            };
        }
    };
    // A claim taken over from an attempt that died after holding its
    // answer: that answer is the original result.
    if let Some(answer) = idempotency::held(&services.redis, scope, &key).await? {
        idempotency::release(&services.pool, scope, &key, attempt).await?;
        return Ok(created_response(answer, true));
    }
    let services = services.clone();
    let task_services = services.clone();
    let task_key = key.clone();
    let running = tokio::spawn(async move {
        let (services, key) = (task_services, task_key);
        // Cut off well before the claim could be taken over.
        let outcome = tokio::time::timeout(idempotency::RUN_LIMIT, create)
            .await
            .unwrap_or_else(|_| {
                Err(anyhow::anyhow!("a create ran past its idempotency claim's limit").into())
            });
        match outcome {
            Ok(value) => {
                let body = serde_json::to_string(&value)
                    .map_err(|e| anyhow::anyhow!("encoding an answer: {e}"))?;
                // Held before the claim completes, so a retry that finds
                // the key done finds its answer while it is held. (If
                // holding fails, retries hear `idempotent_answer_gone`.)
                if let Err(error) = idempotency::hold(&services.redis, scope, &key, &body).await {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "holding an answer for retries failed"
                    );
                }
                idempotency::complete(&services.pool, scope, &key, attempt, id_of(&value)).await?;
                Ok(body)
            }
            Err(error) => {
                if let Err(release) =
                    idempotency::release(&services.pool, scope, &key, attempt).await
                {
                    tracing::error!(
                        error = format!("{release:#}"),
                        "releasing an idempotency key failed; a retry waits until it is stale"
                    );
                }
                Err(error)
            }
        }
    });
    let body = match running.await {
        Ok(outcome) => outcome?,
        Err(panicked) => {
            // Nothing was created by a task that panicked before
            // completing (its transaction rolled back): free the key.
            idempotency::release(&services.pool, scope, &key, attempt).await?;
            return Err(anyhow::anyhow!("the creating task failed: {panicked}").into());
        }
    };
    Ok(created_response(body, false))
}
