//! What a tenant decides about one of its learners: suspending an account
//! keeps it out of every course of the tenant (the settlement transaction
//! refuses it, for a first access and a returning one alike, so the next
//! request of a learner watching a video is refused), and re-enabling lets
//! it back in. Its bindings stay: a suspension is not an unbind.
//!
//! Accounts are platform-wide (one person holds courses of several
//! tenants), so a tenant never disables an account itself: that would
//! reach into other tenants. The operator can (`server admin
//! disable-account`).

use anyhow::Context as _;
use model::{AccountId, TenantId};
use serde_json::json;
use sqlx::PgPool;

use crate::audit;

#[derive(Debug, thiserror::Error)]
pub enum SuspensionError {
    /// Not a learner of this tenant (no code of its courses is bound to
    /// them, and they never opened one).
    #[error("no such learner")]
    NotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Suspends (or, with `suspended = false`, re-enables) `learner` in
/// `tenant`. Audited; doing it twice changes nothing the second time.
pub async fn set_suspended(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    learner: AccountId,
    suspended: bool,
) -> Result<(), SuspensionError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let known = sqlx::query_scalar!(
        r#"SELECT EXISTS (
             SELECT 1 FROM auth_codes WHERE tenant_id = $1 AND bound_principal = $2
           ) OR EXISTS (
             SELECT 1 FROM access_records WHERE tenant_id = $1 AND principal_id = $2
           ) OR EXISTS (
             SELECT 1 FROM suspended_learners WHERE tenant_id = $1 AND account_id = $2
           ) AS "known!""#,
        tenant.0,
        learner.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("finding the learner")?;
    if !known {
        return Err(SuspensionError::NotFound);
    }
    let changed = if suspended {
        sqlx::query!(
            "INSERT INTO suspended_learners (tenant_id, account_id, suspended_by) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            tenant.0,
            learner.0,
            actor.0,
        )
        .execute(&mut *tx)
        .await
        .context("suspending a learner")?
    } else {
        sqlx::query!(
            "DELETE FROM suspended_learners WHERE tenant_id = $1 AND account_id = $2",
            tenant.0,
            learner.0,
        )
        .execute(&mut *tx)
        .await
        .context("re-enabling a learner")?
    };
    if changed.rows_affected() > 0 {
        audit::admin_action(
            &mut tx,
            tenant,
            actor,
            if suspended {
                "learner.suspended"
            } else {
                "learner.reinstated"
            },
            ("account", learner.0),
            json!({}),
        )
        .await?;
    }
    tx.commit().await.context("committing a suspension")?;
    Ok(())
}
