//! Admin endpoints on what happened: a share's learners and its access
//! records, and the tenant's audit log. All read-only, keyset-paged: a page
//! hands back the cursor of the next one and `has_more`.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::QueryRejection},
    response::{IntoResponse, Response},
};
use engine::tenants::Permission;
use serde::Deserialize;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Caller, member_of_share, member_of_tenant};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{
        AuditBody, AuditPage, ErrorBody, LearnerBody, LearnersPage, RecordBody, RecordsPage,
    },
    state::ServerState,
};

/// The opaque cursor of a time-and-id keyset: `<unix nanos>.<uuid>`.
fn cursor(at: OffsetDateTime, id: Uuid) -> String {
    format!("{}.{id}", at.unix_timestamp_nanos())
}

fn parse_cursor(raw: &str) -> Result<(OffsetDateTime, Uuid), ApiError> {
    let bad = || ApiError::invalid("before", "`before` is a `next_before` from a previous page");
    let (nanos, id) = raw.split_once('.').ok_or_else(bad)?;
    let at = nanos
        .parse::<i128>()
        .ok()
        .and_then(|n| OffsetDateTime::from_unix_timestamp_nanos(n).ok())
        .ok_or_else(bad)?;
    Ok((at, Uuid::parse_str(id).map_err(|_| bad())?))
}

/// `limit` rows of a page asked for as `limit + 1`: whether more follow.
fn split_page<T>(rows: &mut Vec<T>, limit: i64) -> bool {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let more = rows.len() > limit;
    rows.truncate(limit);
    more
}

/// Every learner bound in a share as CSV (UTF-8 with a byte-order mark,
/// formula-safe fields):
/// `email,code_hint,bound_at,accesses,last_access,suspended,access_ends`
/// (`access_ends` empty: for good).
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/learners.csv", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    responses(
        (status = 200, description = "The learners, streamed", content_type = "text/csv", body = String),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn learners_csv(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
) -> Result<Response, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    crate::exports::learners(&state.services.reads, &share)
}

/// Every access record of a share as CSV (UTF-8 with a byte-order mark,
/// formula-safe fields): `granted_at,email,code_hint,resource,bound_now`.
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/records.csv", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    responses(
        (status = 200, description = "The records, streamed", content_type = "text/csv", body = String),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn records_csv(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
) -> Result<Response, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    crate::exports::records(&state.services.reads, &share)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LearnersQuery {
    /// The `next_after` of the previous page.
    after: Option<Uuid>,
    /// 1 to 500 (default 100).
    limit: Option<i64>,
}

/// Lists the learners bound in a share, with their use of it.
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/learners", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share"), LearnersQuery),
    responses(
        (status = 200, description = "A page", body = LearnersPage),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_learners(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    query: Result<Query<LearnersQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let limit = query.limit.unwrap_or(100).clamp(1, 500);
    let mut rows = engine::read_models::learners(
        &state.services.reads,
        share.tenant(),
        share.id,
        query.after,
        limit + 1,
    )
    .await?;
    let has_more = split_page(&mut rows, limit);
    Ok(Json(LearnersPage {
        next_after: if has_more {
            rows.last().map(|r| r.code_id)
        } else {
            None
        },
        has_more,
        learners: rows
            .into_iter()
            .map(|r| LearnerBody {
                code_id: r.code_id,
                account_id: r.principal,
                email: r.email,
                hint: r.hint,
                bound_at: r.bound_at,
                accesses: r.accesses,
                last_access: r.last_access,
                suspended: r.suspended,
                access_ends: r.access_ends,
            })
            .collect(),
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecordsQuery {
    /// Only this learner's accesses (their account id).
    learner: Option<Uuid>,
    /// The `next_before` of the previous page.
    before: Option<String>,
    /// 1 to 1,000 (default 100).
    limit: Option<i64>,
}

/// Lists a share's counted accesses, newest first.
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/records", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share"), RecordsQuery),
    responses(
        (status = 200, description = "A page", body = RecordsPage),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 422, description = "A `before` that is not a cursor", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_records(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    query: Result<Query<RecordsQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let before = query.before.as_deref().map(parse_cursor).transpose()?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1_000);
    let mut rows = engine::read_models::records(
        &state.services.reads,
        share.tenant(),
        share.id,
        query.learner,
        before,
        limit + 1,
    )
    .await?;
    let has_more = split_page(&mut rows, limit);
    Ok(Json(RecordsPage {
        next_before: if has_more {
            rows.last().map(|r| cursor(r.granted_at, r.id))
        } else {
            None
        },
        has_more,
        records: rows
            .into_iter()
            .map(|r| RecordBody {
                id: r.id,
                granted_at: r.granted_at,
                email: r.email,
                hint: r.hint,
                resource: r.resource,
                bound_now: r.bound_now,
            })
            .collect(),
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Actions starting with this (`code.` or `code.unbound`).
    action: Option<String>,
    /// Entries about this object (a share, a code, a batch).
    target: Option<Uuid>,
    /// The `next_before` of the previous page.
    before: Option<String>,
    /// 1 to 500 (default 100).
    limit: Option<i64>,
}

/// Reads the tenant's audit log, newest first: who did what to which
/// object, and why.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/audit", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant"), AuditQuery),
    responses(
        (status = 200, description = "A page", body = AuditPage),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 422, description = "A `before` that is not a cursor", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn audit_log(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ViewConsole).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let filter = engine::read_models::AuditFilter {
        action: query.action.filter(|a| !a.trim().is_empty()),
        target: query.target,
        before: query.before.as_deref().map(parse_cursor).transpose()?,
    };
    let limit = query.limit.unwrap_or(100).clamp(1, 500);
    let mut rows =
        engine::read_models::audit(&state.services.reads, tenant, &filter, limit + 1).await?;
    let has_more = split_page(&mut rows, limit);
    Ok(Json(AuditPage {
        next_before: if has_more {
            rows.last().map(|r| cursor(r.created_at, r.id))
        } else {
            None
        },
        has_more,
        entries: rows
            .into_iter()
            .map(|r| AuditBody {
                id: r.id,
                created_at: r.created_at,
                actor_email: r.actor_email,
                action: r.action,
                target_type: r.target_type,
                target_id: r.target_id,
                reason: r.reason,
                details: serde_json::from_str(&r.details).unwrap_or(serde_json::Value::Null),
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_anything_else_is_refused() {
        let at =
            OffsetDateTime::from_unix_timestamp_nanos(1_764_000_000_123_456_789).expect("time");
        let id = Uuid::new_v4();
        assert_eq!(parse_cursor(&cursor(at, id)).expect("cursor"), (at, id));
        for bad in ["", "12", "x.y", "12.not-a-uuid", &format!("1e400.{id}")] {
            let error = parse_cursor(bad).expect_err(bad);
            assert_eq!(error.field.as_deref(), Some("before"), "{bad}");
        }
    }
}
