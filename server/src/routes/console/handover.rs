//! `…/batches/{batch}/codes.csv`: the one-time CSV of a freshly issued
//! batch, for the admin who issued it (`crate::exports::handover`).

use axum::{
    extract::{Path, State},
    response::Response,
};
use engine::{
    shares::{self, ShareId},
    tenants::{Permission, TenantId},
};
use tower_sessions::Session;
use uuid::Uuid;

use crate::{exports, problem::ApiError, state::ServerState};

/// `GET /admin/t/{tenant}/s/{share}/batches/{batch}/codes.csv`: the batch's
/// plain codes as CSV, once (a download that breaks before its whole body
/// was sent can be retried), for the admin who issued them; `409
/// download_in_progress` while another download of them is in flight.
pub async fn codes_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share, batch)): Path<(Uuid, Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    // Plain codes: for those who may issue them.
    let admin = service::session::member_of(
        &state.services,
        &session,
        TenantId(tenant),
        Permission::ManageCourses,
    )
    .await?;
    let share = shares::get_in(&state.services.pool, TenantId(tenant), ShareId(share))
        .await?
        .ok_or_else(ApiError::not_found)?;
    exports::handover::download(&state.services, admin.id, "session", &share, batch).await
}
