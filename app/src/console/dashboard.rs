//! The tenant list (`/admin`) and a tenant's dashboard (`/admin/t/{tenant}`,
//! the page in `pages/console/dashboard.rs`): the tenant, its figures, its
//! daily activity, its shares and the codes other accounts keep trying.

use leptos::prelude::*;
use model::{Role, ShareStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// A tenant as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantView {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    /// How many members its team has.
    pub members: i64,
    /// The signed-in account's role in it (pages show what it allows).
    pub role: Role,
}

#[cfg(feature = "ssr")]
impl From<engine::tenants::TenantSummary> for TenantView {
    fn from(t: engine::tenants::TenantSummary) -> Self {
        Self {
            id: t.id.0,
            slug: t.slug,
            name: t.name,
            members: t.members,
            role: t.role,
        }
    }
}

/// The tenants the signed-in account is a member of (empty for learners).
#[server(endpoint = "console/tenants", input = server_fn::codec::GetUrl)]
pub async fn my_tenants() -> Result<Vec<TenantView>, AppError> {
    let state = crate::state::services()?;
    let principal = crate::auth::guard::require_learner().await?;
    let tenants = engine::tenants::memberships_of(&state.pool, principal.id)
        .await
        .map_err(|e| AppError::internal(&e))?;
    Ok(tenants.into_iter().map(TenantView::from).collect())
}

/// One tenant's overview (its members only).
#[server(prefix = "/api/admin", endpoint = "tenant/overview")]
pub async fn tenant_overview(tenant_id: Uuid) -> Result<TenantView, AppError> {
    let (state, tenant, me) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ViewConsole).await?;
    engine::tenants::summary(&state.pool, tenant, me.id)
        .await
        .map_err(|e| AppError::internal(&e))?
        .map(TenantView::from)
        .ok_or(AppError::NotFound)
}

/// A tenant's dashboard: figures, daily activity and its shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardView {
    pub tenant: TenantView,
    pub shares_count: i64,
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
    pub accesses_7d: i64,
    pub days: Vec<DayView>,
    pub shares: Vec<ShareSummary>,
    /// Bound codes other accounts keep trying.
    pub leaks: Vec<LeakView>,
}

/// A probably leaked code on the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakView {
    pub code_id: Uuid,
    pub share_id: Uuid,
    pub share_title: String,
    pub hint: String,
    pub attempts: i32,
    pub last_attempt: String,
}

/// One day of the activity chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayView {
    /// `29 Nov`.
    pub label: String,
    pub bindings: i64,
    pub accesses: i64,
}

/// A share in the dashboard's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareSummary {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub status: ShareStatus,
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
}

/// A tenant's dashboard.
#[server(prefix = "/api/admin", endpoint = "dashboard", input = server_fn::codec::GetUrl)]
pub async fn dashboard(tenant_id: Uuid) -> Result<DashboardView, AppError> {
    use support::internal;
    let (state, tenant, me) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ViewConsole).await?;
    let zone = support::zone(&state, tenant).await?;
    let summary = engine::tenants::summary(&state.pool, tenant, me.id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let totals = engine::read_models::totals(&state.reads, tenant)
        .await
        .map_err(internal)?;
    let days = engine::read_models::activity(&state.reads, tenant, &zone, 14)
        .await
        .map_err(internal)?;
    let shares = engine::read_models::shares(&state.reads, tenant, None, 500)
        .await
        .map_err(internal)?;
    let leaks = engine::read_models::leaks(&state.reads, tenant)
        .await
        .map_err(internal)?;
    let label = match crate::i18n::lang() {
        crate::i18n::Lang::En => {
            time::macros::format_description!("[day padding:none] [month repr:short]")
        }
        crate::i18n::Lang::ZhCn | crate::i18n::Lang::ZhTw => {
            time::macros::format_description!("[month padding:none]月[day padding:none]日")
        }
    };
    Ok(DashboardView {
        tenant: summary.into(),
        shares_count: totals.shares,
        issued: totals.codes_issued,
        bound: totals.codes_bound,
        revoked: totals.codes_revoked,
        accesses_7d: totals.accesses_7d,
        days: days
            .into_iter()
            .map(|d| DayView {
                label: d.day.format(&label).unwrap_or_default(),
                bindings: d.bindings,
                accesses: d.accesses,
            })
            .collect(),
        shares: shares
            .into_iter()
            .map(|s| ShareSummary {
                id: s.id,
                slug: s.slug,
                title: s.title,
                status: s.status,
                issued: s.issued,
                bound: s.bound,
                revoked: s.revoked,
            })
            .collect(),
        leaks: leaks
            .into_iter()
            .map(|l| LeakView {
                code_id: l.code_id,
                share_id: l.share_id,
                share_title: l.share_title,
                hint: l.hint,
                attempts: l.attempts,
                last_attempt: zone.when(l.last_attempt),
            })
            .collect(),
    })
}
