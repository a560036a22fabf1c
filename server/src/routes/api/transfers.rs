//! The learner's side of transfer requests (`service::transfers`): ask to
//! move the code of a course to another account, see where the request
//! stands, withdraw it; and the receiving account's confirmation of the
//! mailed link.

use std::net::SocketAddr;

use axum::{
    Json,
    extract::{ConnectInfo, Path, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
};
use serde::Deserialize;
use service::{
    session::{self, client_ip},
    transfers::{self, TransferForm},
};
use tower_sessions::Session;

use super::schema::{ErrorBody, TransferView};
use crate::problem::{ApiError, rejection};
use crate::state::ServerState;

#[derive(Deserialize, utoipa::ToSchema)]
pub struct TransferRequestBody {
    /// The address of the account the course should move to (it confirms
    /// from a link mailed there).
    email: String,
    /// A word for the course's team (at most 500 characters).
    #[serde(default)]
    note: String,
}

/// Asks to move the caller's code of this course to the account with
/// `email`: a link goes to that address (7 days); once that account
/// confirms, the course's team approves or refuses. A newer request
/// replaces the open one.
#[utoipa::path(post, path = "/api/v1/s/{slug}/transfer", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    request_body = TransferRequestBody,
    responses(
        (status = 201, description = "Asked; the link is on its way", body = TransferView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "You hold no code of this course (`no_code_held`), the organisation suspended you (`learner_suspended`), or this server lets no code move (`transfers_closed`)", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "The code moved as often as allowed (`transfer_limit_reached`)", body = ErrorBody),
        (status = 422, description = "Not an address, your own address (`same_account`), or a note over 500 characters", body = ErrorBody),
        (status = 429, description = "Too many mails asked for", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn request_transfer(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Result<Json<TransferRequestBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let ip = client_ip(&state.services, &peer, &headers);
    let services = &state.services;
    transfers::request(
        services,
        &session,
        ip,
        &slug,
        TransferForm {
            email: body.email,
            note: body.note,
        },
        // The mail to a new address is written in the caller's language.
        model::Lang::from_headers(&headers),
    )
    .await?;
    let latest = transfers::latest(services, &session, &slug)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok((StatusCode::CREATED, Json(TransferView::for_learner(latest))))
}

/// The caller's latest transfer request for this course, whatever its
/// state.
#[utoipa::path(get, path = "/api/v1/s/{slug}/transfer", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    responses(
        (status = 200, description = "The latest request", body = TransferView),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such share, or no request", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn latest_transfer(
    State(state): State<ServerState>,
    session: Session,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let latest = transfers::latest(&state.services, &session, &slug)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(TransferView::for_learner(latest)))
}

/// Withdraws the caller's open request for this course (its link stops
/// working).
#[utoipa::path(delete, path = "/api/v1/s/{slug}/transfer", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    responses(
        (status = 204, description = "Withdrawn"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such share, or no open request", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn cancel_transfer(
    State(state): State<ServerState>,
    session: Session,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    transfers::cancel(&state.services, &session, &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct ConfirmBody {
    /// The `token` of the mailed link.
    token: String,
}

/// The receiving account confirms a request, signed in with the address
/// the link went to (which counts as verified from now on). The request
/// then waits for the course's team.
#[utoipa::path(post, path = "/api/v1/transfers/confirm", tag = "learner",
    request_body = ConfirmBody,
    responses(
        (status = 200, description = "Confirmed: waiting for the course's team", body = TransferView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Signed in with another address (`transfer_for_another_address`)", body = ErrorBody),
        (status = 409, description = "This account already holds a code of the course (`target_has_code`)", body = ErrorBody),
        (status = 410, description = "The link expired, was replaced or was used (`link_invalid`)", body = ErrorBody),
        (status = 422, description = "That is the account that asked (`same_account`)", body = ErrorBody),
        (status = 429, description = "Too many links tried", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn confirm_transfer(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    headers: HeaderMap,
    body: Result<Json<ConfirmBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let principal = session::learner_of(&state.services, &session).await?;
    let ip = client_ip(&state.services, &peer, &headers);
    let transfer = transfers::confirm(&state.services, &principal, ip, &body.token).await?;
    Ok(Json(TransferView::for_learner(transfer)))
}
