//! Learners' transfer requests (`/admin/t/{tenant}/transfers`, the page in
//! `pages/console/transfers.rs`): the tenant's requests, and approving or
//! refusing one its receiving account confirmed (`engine::transfers`).

use leptos::prelude::*;
use model::TransferStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// One request as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferRow {
    pub id: Uuid,
    pub share: Uuid,
    pub course: String,
    pub code_hint: String,
    pub from_email: String,
    pub to_email: String,
    pub note: String,
    pub status: TransferStatus,
    pub asked: String,
    pub confirmed: Option<String>,
    pub decided: Option<String>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
}

/// The tenant's requests: the ones to decide, then the latest others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransfersView {
    /// Whether the caller may approve and refuse.
    pub may_decide: bool,
    pub waiting: Vec<TransferRow>,
    pub others: Vec<TransferRow>,
}

#[cfg(feature = "ssr")]
fn transfer_error(error: engine::transfers::TransferError) -> AppError {
    AppError::outcome(error)
}

/// The tenant's transfer requests.
#[server(prefix = "/api/admin", endpoint = "transfers", input = server_fn::codec::GetUrl)]
pub async fn transfers(tenant_id: Uuid) -> Result<TransfersView, AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ViewConsole).await?;
    let zone = support::zone(&state, tenant).await?;
    let role = engine::tenants::role_of(&state.pool, tenant, admin.id)
        .await
        .map_err(support::internal)?;
    // Every request waiting for a decision, however old; then the
    // latest others.
    let waiting = engine::transfers::list(
        &state.pool,
        tenant,
        Some(TransferStatus::AwaitingAdmin),
        1_000,
    )
    .await
    .map_err(support::internal)?;
    let latest = engine::transfers::list(&state.pool, tenant, None, 100)
        .await
        .map_err(support::internal)?;
    let row = |t: engine::transfers::Transfer| TransferRow {
        id: t.id,
        share: t.share,
        course: t.course,
        code_hint: t.code_hint,
        from_email: t.from_email,
        to_email: t.to_email,
        note: t.note,
        status: t.status,
        asked: zone.when(t.created_at),
        confirmed: t.confirmed_at.map(|at| zone.when(at)),
        decided: t.decided_at.map(|at| zone.when(at)),
        decided_by: t.decided_by_email,
        reason: t.decision_reason,
    };
    let others = latest
        .into_iter()
        .filter(|t| t.status != TransferStatus::AwaitingAdmin);
    Ok(TransfersView {
        may_decide: role.is_some_and(|r| r.allows(engine::tenants::Permission::ManageCourses)),
        waiting: waiting.into_iter().map(row).collect(),
        others: others.take(50).map(row).collect(),
    })
}

/// Approves a confirmed request (`reason` optional, kept in the audit
/// log): the code moves now.
#[server(prefix = "/api/admin", endpoint = "transfers/approve")]
pub async fn approve_transfer(
    tenant_id: Uuid,
    transfer_id: Uuid,
    reason: Option<String>,
) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    engine::transfers::approve(
        &state.pool,
        tenant,
        admin.id,
        transfer_id,
        reason.as_deref(),
        service::transfers::per_code_limit(&state),
    )
    .await
    .map_err(transfer_error)?;
    Ok(())
}

/// Refuses a confirmed request with a reason both accounts read.
#[server(prefix = "/api/admin", endpoint = "transfers/refuse")]
pub async fn refuse_transfer(
    tenant_id: Uuid,
    transfer_id: Uuid,
    reason: String,
) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    engine::transfers::refuse(&state.pool, tenant, admin.id, transfer_id, &reason)
        .await
        .map_err(transfer_error)?;
    Ok(())
}
