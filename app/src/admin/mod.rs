//! The admin console's server functions, all under `/api/admin/`.
//!
//! Every function here takes the tenant it acts on and starts with
//! `guard::require_admin(tenant)`: learners and admins of other tenants get
//! 403 before anything is read or written. The integration test
//! `authorisation::every_admin_server_function_refuses_outsiders` enumerates
//! the registered `/api/admin/` endpoints, so a new function cannot be
//! added without being covered.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// A tenant as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantView {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub admins: i64,
}

#[cfg(feature = "ssr")]
impl From<engine::tenants::TenantSummary> for TenantView {
    fn from(t: engine::tenants::TenantSummary) -> Self {
        Self {
            id: t.id.0,
            slug: t.slug,
            name: t.name,
            admins: t.admins,
        }
    }
}

/// The tenants the signed-in account administers (empty for learners).
#[server(endpoint = "console/tenants", input = server_fn::codec::GetUrl)]
pub async fn my_tenants() -> Result<Vec<TenantView>, AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let principal = crate::auth::guard::require_learner().await?;
        let tenants = engine::tenants::administered_by(&state.pool, principal.id)
            .await
            .map_err(|e| AppError::internal(&e))?;
        Ok(tenants.into_iter().map(TenantView::from).collect())
    };
    run.await.map_err(AppError::respond)
}

/// One tenant's overview (admins of that tenant only).
#[server(prefix = "/api/admin", endpoint = "tenant/overview")]
pub async fn tenant_overview(tenant_id: Uuid) -> Result<TenantView, AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let tenant = engine::tenants::TenantId(tenant_id);
        crate::auth::guard::require_admin(tenant).await?;
        engine::tenants::summary(&state.pool, tenant)
            .await
            .map_err(|e| AppError::internal(&e))?
            .map(TenantView::from)
            .ok_or(AppError::NotFound)
    };
    run.await.map_err(AppError::respond)
}
