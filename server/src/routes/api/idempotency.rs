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
//! mechanism in `service::console::issue_for_api`.)

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

use super::error::ApiError;
use crate::startup::ServerState;

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

/// Runs `create` once per key: `201` with its answer, the first time and
/// on every retry while the answer is held. `request` is what the caller
/// asked (its canonical bytes), compared across retries; `id_of` names what
/// was created.
pub async fn create_once<T, F>(
    state: &ServerState,
    key: Option<String>,
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
    let services = &state.services;
    let digest = idempotency::digest(operation, request);
    match idempotency::claim(&services.pool, scope, &key, &digest).await? {
        Claim::Run => {}
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
    }
    let services = services.clone();
    let attempt = tokio::spawn(async move {
        match create.await {
            Ok(value) => {
                let body = serde_json::to_string(&value)
                    .map_err(|e| anyhow::anyhow!("encoding an answer: {e}"))?;
                // Held before the claim completes: a retry that finds the
                // key done always finds its answer (for 15 minutes).
                if let Err(error) = idempotency::hold(&services.redis, scope, &key, &body).await {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "holding an answer for retries failed"
                    );
                }
                idempotency::complete(&services.pool, scope, &key, id_of(&value)).await?;
                Ok(body)
            }
            Err(error) => {
                if let Err(release) = idempotency::release(&services.pool, scope, &key).await {
                    tracing::error!(
                        error = format!("{release:#}"),
                        "releasing an idempotency key failed; a retry waits until it is stale"
                    );
                }
                Err(error)
            }
        }
    });
    let body = attempt
        .await
        .map_err(|e| anyhow::anyhow!("the creating task failed: {e}"))??;
    Ok(created_response(body, false))
}
