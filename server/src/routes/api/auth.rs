//! `/api/v1/auth/*`: the same sign-in use cases as the pages
//! (`service::accounts`).

use std::net::SocketAddr;

use axum::{
    Json,
    extract::{ConnectInfo, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
};
use serde::Deserialize;
use service::{accounts, session::client_ip};
use tower_sessions::Session;

use super::schema::{AccountBody, ErrorBody};
use crate::problem::{ApiError, rejection};
use crate::state::ServerState;

#[derive(Deserialize, utoipa::ToSchema)]
pub struct RegisterBody {
    email: String,
    password: String,
    display_name: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct LoginBody {
    email: String,
    password: String,
}

fn principal_json(p: &engine::accounts::Principal) -> AccountBody {
    AccountBody {
        id: p.id.0,
        email: p.email.clone(),
        display_name: p.display_name.clone(),
        email_verified: p.email_verified,
    }
}

/// Creates an account and signs it in (session cookie).
#[utoipa::path(post, path = "/api/v1/auth/register", tag = "accounts",
    request_body = RegisterBody,
    responses(
        (status = 201, description = "Signed in", body = AccountBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 422, description = "Invalid field or email taken", body = ErrorBody),
        (status = 429, description = "Too many registrations", body = ErrorBody),
    ))]
pub async fn register(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    body: Result<Json<RegisterBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let form = accounts::Registration {
        email: body.email,
        display_name: body.display_name,
        password: body.password,
        password_confirm: None,
    };
    let principal = accounts::register(
        &state.services,
        &session,
        client_ip(&state.services, &peer, &headers),
        form,
        // Mails are written in the caller's language (answers stay English).
        model::Lang::from_headers(&headers),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(principal_json(&principal))))
}

/// Signs in (session cookie).
#[utoipa::path(post, path = "/api/v1/auth/login", tag = "accounts",
    request_body = LoginBody,
    responses(
        (status = 200, description = "Signed in", body = AccountBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Wrong email or password", body = ErrorBody),
        (status = 403, description = "Account disabled", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    body: Result<Json<LoginBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let principal = accounts::login(
        &state.services,
        &session,
        client_ip(&state.services, &peer, &headers),
        &body.email,
        body.password,
        model::Lang::from_headers(&headers),
    )
    .await?;
    Ok(Json(principal_json(&principal)))
}

/// Signs this session out.
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "accounts",
    responses((status = 204, description = "Signed out")))]
pub async fn logout(session: Session) -> Result<StatusCode, ApiError> {
    service::session::sign_out(&session).await?;
    Ok(StatusCode::NO_CONTENT)
}
