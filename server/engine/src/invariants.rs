//! The invariants of DESIGN.md, checked in SQL over the whole database.
//!
//! Constraints make most of them impossible to break; these queries prove
//! it after the fact (the concurrency suite runs them after every round, and
//! the reconciler can run them in production). Each check returns the
//! number of rows that violate it.

use anyhow::Context as _;
use sqlx::PgPool;

/// One invariant and how many rows break it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub violations: i64,
}

const CHECKS: &[(&str, &str)] = &[
    (
        "an account holds at most one code per share",
        "SELECT count(*) FROM (
             SELECT 1 FROM auth_codes WHERE bound_principal IS NOT NULL
             GROUP BY tenant_id, share_id, bound_principal HAVING count(*) > 1) v",
    ),
    (
        "a bound code has its first-use time, an unbound one has none",
        "SELECT count(*) FROM auth_codes WHERE (bound_principal IS NULL) <> (first_used_at IS NULL)",
    ),
    (
        "a share's used quota equals its counted accesses",
        "SELECT count(*) FROM shares s
         WHERE s.quota_used <> (SELECT count(*) FROM access_records a
                                WHERE a.tenant_id = s.tenant_id AND a.share_id = s.id)",
    ),
    (
        "a share never uses more than its quota",
        "SELECT count(*) FROM shares WHERE quota IS NOT NULL AND quota_used > quota",
    ),
    (
        "a code never counts more accesses than the share's per-learner limit",
        "SELECT count(*) FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
         WHERE s.per_learner_limit IS NOT NULL AND c.access_count > s.per_learner_limit",
    ),
    (
        "every access record was announced in the outbox, once",
        // One grouped pass over each table (a hash join), not a count per row.
        "SELECT count(*) FROM access_records a
         LEFT JOIN (SELECT tenant_id, payload->>'access_id' AS access_id, count(*) AS n
                    FROM outbox WHERE event_type = 'access.recorded'
                    GROUP BY tenant_id, payload->>'access_id') o
           ON o.tenant_id = a.tenant_id AND o.access_id = a.id::text
         WHERE coalesce(o.n, 0) <> 1",
    ),
    (
        "every first binding was announced in the outbox",
        "SELECT abs((SELECT count(*) FROM access_records WHERE bound_now)
                  - (SELECT count(*) FROM outbox WHERE event_type = 'code.bound'))",
    ),
    (
        "an access record names the learner its code was bound to, unless an audited unbind moved it",
        "SELECT count(*) FROM access_records a JOIN auth_codes c ON c.tenant_id = a.tenant_id AND c.id = a.code_id
         WHERE c.bound_principal IS DISTINCT FROM a.principal_id
           AND NOT EXISTS (SELECT 1 FROM audit_log l WHERE l.tenant_id = a.tenant_id
                             AND l.action = 'code.unbound' AND l.target_id = a.code_id)",
    ),
];

/// Runs every check.
pub async fn check_all(pool: &PgPool) -> anyhow::Result<Vec<Check>> {
    let mut checks = Vec::with_capacity(CHECKS.len());
    for (name, sql) in CHECKS {
        let violations: i64 = sqlx::query_scalar(sql)
            .fetch_one(pool)
            .await
            .with_context(|| format!("checking: {name}"))?;
        checks.push(Check { name, violations });
    }
    Ok(checks)
}

/// The checks that found violations.
pub async fn violations(pool: &PgPool) -> anyhow::Result<Vec<Check>> {
    Ok(check_all(pool)
        .await?
        .into_iter()
        .filter(|c| c.violations != 0)
        .collect())
}

/// Repairs what is safely repairable: a share's used quota drifted from
/// its counted access records (the records are the truth). One share at a
/// time, its row locked while it is counted, so a settlement committing
/// meanwhile is never overwritten; a share whose records exceed its quota
/// is left alone (that is a violation for a person, not drift). Bindings
/// are never touched. Returns the shares fixed.
pub async fn repair_counters(pool: &PgPool) -> anyhow::Result<u64> {
    let drifted: Vec<(uuid::Uuid, uuid::Uuid)> = sqlx::query_as(
        "SELECT s.tenant_id, s.id FROM shares s
         WHERE s.quota_used <> (SELECT count(*) FROM access_records a
                                WHERE a.tenant_id = s.tenant_id AND a.share_id = s.id)",
    )
    .fetch_all(pool)
    .await
    .context("finding drifted quotas")?;
    let mut fixed = 0;
    for (tenant, share) in drifted {
        let mut tx = pool.begin().await.context("starting a repair")?;
        let quota: Option<Option<i32>> = sqlx::query_scalar(
            "SELECT quota FROM shares WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        )
        .bind(tenant)
        .bind(share)
        .fetch_optional(&mut *tx)
        .await
        .context("locking a drifted share")?;
        let Some(quota) = quota else { continue };
        let counted: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM access_records WHERE tenant_id = $1 AND share_id = $2",
        )
        .bind(tenant)
        .bind(share)
        .fetch_one(&mut *tx)
        .await
        .context("counting a share's records")?;
        if quota.is_some_and(|q| counted > i64::from(q)) {
            continue;
        }
        let updated = sqlx::query(
            "UPDATE shares SET quota_used = $3 WHERE tenant_id = $1 AND id = $2 AND quota_used <> $3",
        )
        .bind(tenant)
        .bind(share)
        .bind(i32::try_from(counted).context("more records than fit a quota")?)
        .execute(&mut *tx)
        .await
        .context("repairing a used quota")?
        .rows_affected();
        tx.commit().await.context("committing a repair")?;
        fixed += updated;
    }
    Ok(fixed)
}
