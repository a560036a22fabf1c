//! `/api/v1/auth/*`: the same sign-in use cases as the pages
//! (`service::accounts`).

use std::net::SocketAddr;

use axum::{
    Json,
    extract::{ConnectInfo, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
};
use serde::{Deserialize, Serialize};
use service::{accounts, session::client_ip};
use tower_sessions::Session;

use super::schema::{AccountBody, ErrorBody};
use crate::problem::{ApiError, rejection};
use crate::state::ServerState;

#[derive(Deserialize, utoipa::ToSchema)]
pub struct RegisterBody {
    email: String,
    /// Where the pages take the person after the account is made (a path
    /// on this site; anything else is ignored).
    #[serde(default)]
    next: Option<String>,
}

/// The answer to every well-formed registration.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RegistrationSent {
    /// The address the mail went to, as the account will have it.
    email: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct FinishRegistrationBody {
    /// The `token` of the mailed link (`/register/finish?token=…`).
    token: String,
    display_name: String,
    password: String,
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

/// Starts a registration: the address is mailed a link that makes the
/// account (`/auth/register/finish`), or, if it has an account, a note to
/// its owner. The answer is the same for every address.
#[utoipa::path(post, path = "/api/v1/auth/register", tag = "accounts",
    request_body = RegisterBody,
    responses(
        (status = 202, description = "A mail went to the address", body = RegistrationSent),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 422, description = "Not an address the mailer can send to", body = ErrorBody),
        (status = 429, description = "Too many registrations", body = ErrorBody),
    ))]
pub async fn register(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Json<RegisterBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    accounts::register(
        &state.services,
        // An API caller follows `next` itself: it is kept with the link
        // only (a bare path), never in a session.
        None,
        client_ip(&state.services, &peer, &headers),
        &body.email,
        body.next.as_deref(),
        // Mails are written in the caller's language (answers stay English).
        model::Lang::from_headers(&headers),
    )
    .await?;
    let email = body.email.trim().to_lowercase();
    Ok((StatusCode::ACCEPTED, Json(RegistrationSent { email })))
}

/// Finishes a registration with its mailed link: the account is made and
/// signed in (session cookie).
#[utoipa::path(post, path = "/api/v1/auth/register/finish", tag = "accounts",
    request_body = FinishRegistrationBody,
    responses(
        (status = 201, description = "Account made and signed in", body = AccountBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 409, description = "The address has an account by now", body = ErrorBody),
        (status = 410, description = "The link has expired or was used", body = ErrorBody),
        (status = 422, description = "Invalid name or password", body = ErrorBody),
        (status = 429, description = "Too many requests", body = ErrorBody),
    ))]
pub async fn finish_registration(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    body: Result<Json<FinishRegistrationBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let form = accounts::FinishRegistration {
        token: body.token,
        display_name: body.display_name,
        password: body.password,
        password_confirm: None,
    };
    let (principal, _next) = accounts::finish_registration(
        &state.services,
        &session,
        client_ip(&state.services, &peer, &headers),
        form,
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
