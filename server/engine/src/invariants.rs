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
        "SELECT count(*) FROM access_records a
         WHERE (SELECT count(*) FROM outbox o WHERE o.tenant_id = a.tenant_id
                  AND o.event_type = 'access.recorded' AND o.payload->>'access_id' = a.id::text) <> 1",
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
/// its counted access records (the records are the truth). Bindings are
/// never touched: a binding problem needs a person. Returns the shares
/// fixed.
pub async fn repair_counters(pool: &PgPool) -> anyhow::Result<u64> {
    let fixed = sqlx::query(
        "UPDATE shares s SET quota_used = r.counted
         FROM (SELECT s2.tenant_id, s2.id,
                      (SELECT count(*) FROM access_records a
                        WHERE a.tenant_id = s2.tenant_id AND a.share_id = s2.id)::int AS counted
               FROM shares s2) r
         WHERE s.tenant_id = r.tenant_id AND s.id = r.id AND s.quota_used <> r.counted",
    )
    .execute(pool)
    .await
    .context("repairing used quotas")?
    .rows_affected();
    Ok(fixed)
}
