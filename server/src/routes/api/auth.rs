//! `/api/v1/auth/*`: the same sign-in flows as the pages.

use std::net::SocketAddr;

use app::auth::{flows, guard};
use axum::{
    Json,
    extract::{ConnectInfo, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;

use super::error::{ApiError, rejection};
use crate::startup::ServerState;

#[derive(Deserialize)]
pub struct RegisterBody {
    email: String,
    password: String,
    display_name: String,
}

#[derive(Deserialize)]
pub struct LoginBody {
    email: String,
    password: String,
}

fn principal_json(p: &engine::accounts::Principal) -> serde_json::Value {
    json!({ "id": p.id.0, "email": p.email, "display_name": p.display_name })
}

pub async fn register(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    body: Result<Json<RegisterBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let form = flows::Registration {
        email: body.email,
        display_name: body.display_name,
        password: body.password,
        password_confirm: None,
    };
    let principal = flows::register(
        &state.app,
        &session,
        guard::client_ip_of(&state.app, &peer, &headers),
        form,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(principal_json(&principal))))
}

pub async fn login(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    body: Result<Json<LoginBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let principal = flows::login(
        &state.app,
        &session,
        guard::client_ip_of(&state.app, &peer, &headers),
        &body.email,
        body.password,
    )
    .await?;
    Ok(Json(principal_json(&principal)))
}

pub async fn logout(session: Session) -> Result<StatusCode, ApiError> {
    guard::sign_out_session(&session).await?;
    Ok(StatusCode::NO_CONTENT)
}
