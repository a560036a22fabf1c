//! The console's CSV downloads (`/admin/t/{tenant}/s/{share}/…csv`): each
//! authorises a member who may view the console, then answers with the
//! export built in `crate::exports`.

use axum::{
    extract::{Path, Query, State, rejection::QueryRejection},
    response::Response,
};
use engine::{
    code_actions::CodeError,
    code_table::{CodeFilter, CodeState},
    shares::{self, Share, ShareId},
    tenants::{Permission, TenantId},
};
use serde::Deserialize;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{
    exports,
    problem::{ApiError, rejection},
    state::ServerState,
};

/// `GET /admin/t/{tenant}/s/{share}/records.csv`: every access record of a
/// share, streamed from PostgreSQL row by row (never all in memory).
pub async fn records_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    let share = viewed_share(&state, &session, tenant, share).await?;
    exports::records(&state.services.reads, &share)
}

/// `GET /admin/t/{tenant}/s/{share}/learners.csv`: the learners bound in a
/// share with their use of it, as the learners page lists them.
pub async fn learners_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    let share = viewed_share(&state, &session, tenant, share).await?;
    exports::learners(&state.services.reads, &share)
}

/// The share `share` of `tenant`, for a signed-in member who may view the
/// console: 401/403, or 404 for a share of another tenant.
async fn viewed_share(
    state: &ServerState,
    session: &Session,
    tenant: Uuid,
    share: Uuid,
) -> Result<Share, ApiError> {
    service::session::member_of(
        &state.services,
        session,
        TenantId(tenant),
        Permission::ViewConsole,
    )
    .await?;
    shares::get_in(&state.services.pool, TenantId(tenant), ShareId(share))
        .await?
        .ok_or_else(ApiError::not_found)
}

/// The filters of the code table, as its page puts them in the URL.
#[derive(Debug, Default, Deserialize)]
pub struct CodeTableQuery {
    state: Option<String>,
    batch: Option<Uuid>,
    q: Option<String>,
    code: Option<Uuid>,
}

/// `GET /admin/t/{tenant}/s/{share}/codes.csv?state=&batch=&q=&code=`: the
/// code table with the filters the admin chose (hints, never plain codes).
pub async fn code_table_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
    query: Result<Query<CodeTableQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let share = viewed_share(&state, &session, tenant, share).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let filter = CodeFilter {
        state: query
            .state
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(CodeState::parse)
            .transpose()
            .map_err(CodeError::from)?,
        batch: query.batch,
        search: query.q,
        code: query.code,
    };
    exports::code_table(&state.services, &share, filter).await
}
