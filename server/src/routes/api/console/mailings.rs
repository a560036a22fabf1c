//! A mailable batch's codes sent by mail (`engine::mailings`): `POST
//! /api/v1/batches/{batch_id}/send` mails one free code to each new
//! address of a list (or, with `dry_run`, says what it would do), and
//! `GET /api/v1/batches/{batch_id}/recipients` lists who got one and where
//! each stands (queued, sent, failed, redeemed, revoked). One recipient,
//! named by the code it was mailed: `POST /api/v1/codes/{code_id}/resend`
//! mails the same code again, and `…/revoke-and-resend` revokes it and
//! mails another of the batch.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection},
    response::IntoResponse,
};
use engine::{
    idempotency,
    mailings::{self, SendRequest},
    tenants::Permission,
};
use model::Lang;
use serde::Deserialize;

use super::{Caller, batches::batch_of, member_of_code};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency::{create_once, key_of},
        schema::{ErrorBody, RecipientBody, RecipientsPage, RedoneBody, SendBody},
    },
    state::ServerState,
};

/// A list to send a batch's codes to.
#[derive(Deserialize, utoipa::ToSchema)]
pub struct SendInput {
    /// The addresses, one per entry (blank entries are skipped, repeated
    /// ones folded); at most 10,000.
    addresses: Vec<String>,
    /// Address each code to its recipient: it then binds only to the
    /// account whose verified address it is (default `true`).
    addressed: Option<bool>,
    /// The mails' language (`en`, `zh-CN`, `zh-TW`); absent: each
    /// recipient's account's, else English.
    lang: Option<String>,
    /// Say what would be sent, and send nothing.
    dry_run: Option<bool>,
}

/// Mails one free code of a mailable batch to each address of a list
/// that has none of this batch yet.
#[utoipa::path(post, path = "/api/v1/batches/{batch_id}/send", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch (issued with `mailable`)")),
    request_body = SendInput,
    responses(
        (status = 200, description = "Sent (the mails are queued), or what would be sent (`dry_run`)", body = SendBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
        (status = 409, description = "The batch was not issued `mailable` (`batch_not_mailable`); or a code was bound, revoked or replaced during the send (`busy_retry`, with `Retry-After`): nothing was sent, send again", body = ErrorBody),
        (status = 413, description = "A list of more than 4 MiB", body = ErrorBody),
        (status = 422, description = "An address cannot be mailed (the lines named), the list is empty or too long, or the batch has fewer codes left than the list has new addresses (`not_enough_codes`): nothing was sent", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn send_codes(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
    body: Result<Json<SendInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (batch, admin, tenant) =
        batch_of(&state, &caller, &batch_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let lang = body
        .lang
        .as_deref()
        .map(|tag| Lang::parse(tag.trim()).ok_or(mailings::MailingError::InvalidLang))
        .transpose()?;
    let report = mailings::send(
        &state.services.pool,
        tenant,
        admin.id,
        &SendRequest {
            batch: batch.id,
            addresses: &body.addresses,
            addressed: body.addressed.unwrap_or(true),
            lang,
            dry_run: body.dry_run.unwrap_or(false),
        },
    )
    .await?;
    Ok(Json(SendBody {
        batch_id: batch.id,
        sent: report.sent,
        to_send: report.to_send,
        duplicates: report.duplicates,
        already_sent: report.already_sent,
        free: report.free,
    }))
}

/// A page of recipients.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecipientsQuery {
    /// The last address of the previous page.
    after: Option<String>,
    /// 1 to 1,000 (default 200).
    limit: Option<i64>,
}

/// Lists who a batch mailed codes to, by address, and where each stands.
#[utoipa::path(get, path = "/api/v1/batches/{batch_id}/recipients", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch"), RecipientsQuery),
    responses(
        (status = 200, description = "A page of recipients", body = RecipientsPage),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_recipients(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
    Query(query): Query<RecipientsQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (batch, _, tenant) = batch_of(&state, &caller, &batch_id, Permission::ViewConsole).await?;
    let limit = query.limit.unwrap_or(200).clamp(1, 1000);
    let rows = mailings::recipients(
        &state.services.pool,
        tenant,
        batch.id,
        query.after.as_deref(),
        limit + 1,
    )
    .await?;
    let has_more = rows.len() as i64 > limit;
    let recipients: Vec<RecipientBody> = rows
        .into_iter()
        .take(usize::try_from(limit).unwrap_or(200))
        .map(recipient_body)
        .collect();
    let next_after = has_more
        .then(|| recipients.last().map(|r| r.email.clone()))
        .flatten();
    Ok(Json(RecipientsPage {
        recipients,
        next_after,
        has_more,
    }))
}

fn recipient_body(r: mailings::Recipient) -> RecipientBody {
    RecipientBody {
        email: r.email,
        code_id: r.code_id,
        hint: r.hint,
        state: r.state.as_str().to_owned(),
        error: r.error,
        mailed_at: r.mailed_at,
        sent_at: r.sent_at,
    }
}

/// Mails the recipient of a mailed code that same code again (its mail
/// bounced, or was lost), in the first mail's language. While the last
/// mail still waits to go, nothing more is queued (`queued: false`).
/// Audited (`batch.recipient_resent`).
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/resend", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code a recipient was mailed")),
    responses(
        (status = 200, description = "Queued again, or still waiting to go", body = RedoneBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown code answers 403, as another tenant's does)", body = ErrorBody),
        (status = 409, description = "Not a code a recipient holds now (`code_not_mailed`), or it was redeemed (`code_redeemed`), revoked (`code_revoked`) or is past its date (`code_expired`): nothing was queued", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn resend(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let done = mailings::resend(&state.services.pool, tenant, admin.id, code).await?;
    Ok(Json(RedoneBody {
        recipient: recipient_body(done.recipient),
        queued: done.queued,
        revoked_id: None,
    }))
}

/// Revokes a code a recipient was mailed (its text went astray, or its
/// date passed) and mails them another free code of the batch, addressed
/// to them if the first was. Audited (`code.revoked`,
/// `batch.recipient_code_replaced`); webhook event `code.revoked`.
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/revoke-and-resend", tag = "admin",
    params(
        ("code_id" = Uuid, Path, description = "The code a recipient was mailed"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key does nothing new and answers the original 201 (for 15 minutes); without one, a repeat answers 409 `code_not_mailed`"),
    ),
    responses(
        (status = 201, description = "Revoked, and another code mailed", body = RedoneBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown code answers 403, as another tenant's does)", body = ErrorBody),
        (status = 409, description = "Not a code a recipient holds now (`code_not_mailed`: never mailed, or replaced already), or redeemed (`code_redeemed`: it is a learner's; see revoke-and-replace); or the Idempotency-Key's first attempt still runs: nothing changed", body = ErrorBody),
        (status = 422, description = "The batch has no code left to send (`not_enough_codes`), or the Idempotency-Key was used for another request: nothing changed", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn revoke_and_resend(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let key = key_of(&headers)?;
    let pool = state.services.pool.clone();
    create_once(
        &state,
        key,
        &caller.login(),
        idempotency::Scope {
            tenant,
            actor: admin.id,
        },
        "revoke_and_resend",
        code.as_bytes(),
        |done: &RedoneBody| done.recipient.code_id,
        async move {
            let done = mailings::revoke_and_resend(&pool, tenant, admin.id, code).await?;
            Ok(RedoneBody {
                recipient: recipient_body(done.recipient),
                queued: done.queued,
                revoked_id: done.revoked,
            })
        },
    )
    .await
}
