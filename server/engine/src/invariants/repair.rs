//! The reconciler's `--repair`: the one drift it mends by itself, a
//! share's quota slots against its counted access records and its quota,
//! share by share under the share's quota lock. What else the checks find
//! (a share past its quota, a binding) is left to a person.

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use super::Options;

/// The drift of one share's quota slots, as SQL over `s` (a `shares`
/// row): with a quota, slots whose used differ from the access records or
/// whose caps differ from the quota; without one, any slot at all.
const DRIFT: &str = "CASE WHEN s.quota IS NULL
         THEN EXISTS (SELECT 1 FROM share_quota_slots q WHERE q.tenant_id = s.tenant_id AND q.share_id = s.id)
         ELSE (SELECT coalesce(sum(q.used), -1) FROM share_quota_slots q
                WHERE q.tenant_id = s.tenant_id AND q.share_id = s.id)
              <> (SELECT count(*) FROM access_records a WHERE a.tenant_id = s.tenant_id AND a.share_id = s.id)
           OR (SELECT sum(q.cap)::integer FROM share_quota_slots q
                WHERE q.tenant_id = s.tenant_id AND q.share_id = s.id) IS DISTINCT FROM s.quota
    END";

/// Repairs what is safely repairable: a share's quota slots drifted from
/// its counted access records (the records are the truth) or from its
/// quota. One share at a time, under the share's quota lock
/// (`share_quota_rebalance`: settlements in flight finish first, new ones
/// wait), so a settlement committing meanwhile is never overwritten; a
/// share whose records exceed its quota is left alone (that is a
/// violation for a person, not drift). Bindings are never touched. Returns
/// the shares fixed.
pub async fn repair_counters(pool: &PgPool, options: &Options<'_>) -> anyhow::Result<u64> {
    // Found a batch of shares at a time, like the checks.
    let mut drifted: Vec<(Uuid, Uuid)> = Vec::new();
    let mut cursor = (Uuid::nil(), Uuid::nil());
    loop {
        let batch: Vec<(Uuid, Uuid, bool)> = sqlx::query_as(&format!(
            "SELECT s.tenant_id, s.id, {DRIFT}
             FROM shares s WHERE (s.tenant_id, s.id) > ($1, $2)
             ORDER BY s.tenant_id, s.id LIMIT $3"
        ))
        .bind(cursor.0)
        .bind(cursor.1)
        .bind(options.shares_batch)
        .fetch_all(pool)
        .await
        .context("finding drifted quotas")?;
        let full = batch.len() as i64 >= options.shares_batch;
        if let Some((tenant, id, _)) = batch.last() {
            cursor = (*tenant, *id);
        }
        drifted.extend(batch.into_iter().filter(|b| b.2).map(|(t, s, _)| (t, s)));
        if !full {
            break;
        }
    }
    let mut fixed = 0;
    for (tenant, share) in drifted {
        let mut tx = pool.begin().await.context("starting a repair")?;
        // The lock first (as `shares::update_share` takes it), then the
        // share as it is now.
        sqlx::query("SELECT pg_advisory_xact_lock(share_quota_lock_key($1))")
            .bind(share)
            .execute(&mut *tx)
            .await
            .context("waiting for the share's settlements")?;
        let still: Option<(Option<i32>, bool)> = sqlx::query_as(&format!(
            "SELECT s.quota, {DRIFT} FROM shares s WHERE s.tenant_id = $1 AND s.id = $2"
        ))
        .bind(tenant)
        .bind(share)
        .fetch_optional(&mut *tx)
        .await
        .context("re-reading a drifted share")?;
        let Some((quota, true)) = still else { continue };
        let counted: i64 = sqlx::query_scalar("SELECT share_quota_rebalance($1, $2, $3)")
            .bind(tenant)
            .bind(share)
            .bind(quota)
            .fetch_one(&mut *tx)
            .await
            .context("repairing a share's quota slots")?;
        if quota.is_some_and(|q| counted > i64::from(q)) {
            continue;
        }
        tx.commit().await.context("committing a repair")?;
        fixed += 1;
    }
    Ok(fixed)
}
