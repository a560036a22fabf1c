//! The invariants (`docs/design/overview.md`), checked in SQL over the whole database.
//!
//! Constraints make most of them impossible to break; these queries prove
//! it after the fact (the concurrency suite runs them after every round, and
//! the reconciler runs them in production). Each check returns the number
//! of rows that violate it.
//!
//! A production database holds millions of codes and every statement runs
//! under the pool's statement timeout, so no check reads a whole table in
//! one statement: each walks its table in keyset batches of
//! [`Options::batch`] rows (or groups) along an index, and adds up the
//! violations. Every statement of every check runs in one
//! `REPEATABLE READ READ ONLY` transaction, so all of them see the same
//! snapshot: the findings are those of one query over the database as it
//! was at the run's first check statement (after `--repair`'s repairs),
//! however long the walk takes and whatever commits meanwhile. The cost:
//! while that snapshot is open, PostgreSQL cannot prune row versions newer
//! than it (a busy share's counter row grows a chain of versions); running
//! it on one instance and in bounded batches keeps the run short, and a
//! per-record form of the comparison below would remove the need. That matters for the checks that compare two walks
//! (first bindings against their announcements): a binding committed
//! between the two walks would otherwise be counted by one and not the
//! other. The walk never sits idle inside that transaction, so the
//! pool's idle-in-transaction timeout does not end it; each statement
//! still runs under the statement timeout.
//! A share's own counters are still compared with all of that share's
//! access records in one statement (an index range per share).
//!
//! Only one reconciler runs at a time across all instances: [`Exclusive`]
//! is a PostgreSQL advisory lock held on a connection of its own.

use std::{future::Future, pin::Pin};

use anyhow::Context as _;
use sqlx::{Connection as _, PgConnection, PgPool};
use uuid::Uuid;

/// One invariant and how many rows break it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub violations: i64,
}

/// Rows (or groups) one statement of a check reads.
pub const BATCH: i64 = 10_000;

/// Shares one statement of the per-share checks reads (each share's
/// records are counted through an index).
pub const SHARES_BATCH: i64 = 200;

/// Called before each walk of a check with the check's name and the walk's
/// number (0, or 1 for the second walk of a comparison): lets a test commit
/// something mid-run.
pub type Hook<'a> =
    dyn Fn(&'static str, usize) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> + Send + Sync + 'a;

/// How a run reads: batch sizes ([`BATCH`] and [`SHARES_BATCH`] by
/// default; tests make them small to cross batch boundaries).
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Rows (or groups) one statement reads.
    pub batch: i64,
    /// Shares one statement of the per-share checks and the repair reads.
    pub shares_batch: i64,
    /// Tests only.
    pub hook: Option<&'a Hook<'a>>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Self {
            batch: BATCH,
            shares_batch: SHARES_BATCH,
            hook: None,
        }
    }
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("batch", &self.batch)
            .field("shares_batch", &self.shares_batch)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// The advisory lock key of the reconciler ("AdmitOne" in ASCII).
pub const RECONCILE_LOCK: i64 = 0x4164_6d69_744f_6e65;

/// One batched walk. `sql` reads the batch after the cursor `$1` (a
/// `uuid[]` of the key columns) of at most `$2` rows, and answers
/// `(hits bigint, rows bigint, last uuid[])`: the batch's violations (or
/// counted rows), its size (counted in the batch itself, never after a
/// join) and its last key.
struct Walk {
    sql: &'static str,
    key_len: usize,
    shares: bool,
}

/// A check: violations summed over one walk, or (for an equality of two
/// counts) the difference of two walks' sums.
enum Plan {
    Sum(Walk),
    Difference(Walk, Walk),
}

/// `(tenant_id, id)`-keyed batch of `table` after the cursor.
macro_rules! batch2 {
    ($cols:literal, $table:literal) => {
        concat!(
            "WITH batch AS (SELECT ",
            $cols,
            " FROM ",
            $table,
            " t
                 WHERE (t.tenant_id, t.id) > ($1[1], $1[2])
                 ORDER BY t.tenant_id, t.id LIMIT $2)"
        )
    };
}

fn checks() -> Vec<(&'static str, Plan)> {
    let walk2 = |sql: &'static str| Walk {
        sql,
        key_len: 2,
        shares: false,
    };
    let shares = |sql: &'static str| Walk {
        sql,
        key_len: 2,
        shares: true,
    };
    vec![
        (
            "an account holds at most one code per share",
            // Grouped along auth_codes_one_per_learner: a batch is whole
            // groups, so a double binding is never split between batches.
            Plan::Sum(Walk {
                sql: "WITH batch AS (
                          SELECT tenant_id, share_id, bound_principal, count(*) AS n FROM auth_codes
                          WHERE bound_principal IS NOT NULL
                            AND (tenant_id, share_id, bound_principal) > ($1[1], $1[2], $1[3])
                          GROUP BY tenant_id, share_id, bound_principal
                          ORDER BY tenant_id, share_id, bound_principal LIMIT $2)
                      SELECT count(*) FILTER (WHERE n > 1), (SELECT count(*) FROM batch),
                             (SELECT ARRAY[tenant_id, share_id, bound_principal] FROM batch
                              ORDER BY tenant_id DESC, share_id DESC, bound_principal DESC LIMIT 1)
                      FROM batch",
                key_len: 3,
                shares: false,
            }),
        ),
        (
            "a bound code has its first-use time, an unbound one has none",
            Plan::Sum(walk2(concat!(
                batch2!("tenant_id, id, bound_principal, first_used_at", "auth_codes"),
                " SELECT count(*) FILTER (WHERE (bound_principal IS NULL) <> (first_used_at IS NULL)),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch"
            ))),
        ),
        (
            // With a quota, its slots' used sum to the access records; without
            // one, no slots at all.
            "a share's used quota equals its counted accesses",
            Plan::Sum(shares(concat!(
                batch2!("tenant_id, id, quota", "shares"),
                ", slots AS (SELECT q.tenant_id, q.share_id, sum(q.used) AS used FROM share_quota_slots q
                             JOIN batch ON q.tenant_id = batch.tenant_id AND q.share_id = batch.id
                             GROUP BY q.tenant_id, q.share_id)",
                " SELECT count(*) FILTER (WHERE CASE WHEN batch.quota IS NULL THEN slots.used IS NOT NULL
                         ELSE coalesce(slots.used, -1) <> (SELECT count(*) FROM access_records a
                                  WHERE a.tenant_id = batch.tenant_id AND a.share_id = batch.id) END),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch LEFT JOIN slots ON slots.tenant_id = batch.tenant_id AND slots.share_id = batch.id"
            ))),
        ),
        (
            "a share never uses more than its quota",
            Plan::Sum(shares(concat!(
                batch2!("tenant_id, id, quota", "shares"),
                " SELECT count(*) FILTER (WHERE quota IS NOT NULL AND quota < (SELECT count(*) FROM access_records a
                                          WHERE a.tenant_id = batch.tenant_id AND a.share_id = batch.id)),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch"
            ))),
        ),
        (
            // The slots' caps are the quota, split: none can spend past it.
            "a share's quota slots add up to its quota",
            Plan::Sum(shares(concat!(
                batch2!("tenant_id, id, quota", "shares"),
                " SELECT count(*) FILTER (WHERE quota IS NOT NULL AND quota IS DISTINCT FROM
                         (SELECT sum(q.cap)::integer FROM share_quota_slots q
                          WHERE q.tenant_id = batch.tenant_id AND q.share_id = batch.id)),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch"
            ))),
        ),
        (
            // The trigger auth_codes_refuse_expired. A date is only ever
            // set in the future, so moving it later cannot put an earlier
            // binding past it.
            "no code was bound after its expiry date",
            Plan::Sum(walk2(concat!(
                batch2!("tenant_id, id, batch_id, first_used_at, expires_at", "auth_codes"),
                " SELECT count(*) FILTER (WHERE first_used_at IS NOT NULL
                           AND first_used_at >= code_expires_at(tenant_id, batch_id, expires_at)),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch"
            ))),
        ),
        (
            "a code never counts more accesses than the share's per-learner limit",
            Plan::Sum(walk2(concat!(
                batch2!("tenant_id, id, share_id, access_count", "auth_codes"),
                " SELECT count(*) FILTER (WHERE s.per_learner_limit IS NOT NULL
                                            AND batch.access_count > s.per_learner_limit),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch JOIN shares s ON s.tenant_id = batch.tenant_id AND s.id = batch.share_id"
            ))),
        ),
        (
            "every access record was announced in the outbox, once",
            // Each record's announcements through outbox_access_announcements.
            Plan::Sum(walk2(concat!(
                batch2!("tenant_id, id", "access_records"),
                " SELECT count(*) FILTER (WHERE (SELECT count(*) FROM outbox o
                                                 WHERE o.event_type = 'access.recorded'
                                                   AND o.tenant_id = batch.tenant_id
                                                   AND o.payload->>'access_id' = batch.id::text) <> 1),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch"
            ))),
        ),
        (
            "every first binding was announced in the outbox",
            Plan::Difference(
                walk2(concat!(
                    batch2!("tenant_id, id, bound_now", "access_records"),
                    " SELECT count(*) FILTER (WHERE bound_now), (SELECT count(*) FROM batch), ",
                    "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                    " FROM batch"
                )),
                walk2(concat!(
                    batch2!("tenant_id, id, event_type", "outbox"),
                    " SELECT count(*) FILTER (WHERE event_type = 'code.bound'), (SELECT count(*) FROM batch), ",
                    "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                    " FROM batch"
                )),
            ),
        ),
        (
            "an access record names the learner its code was bound to, unless an audited unbind or transfer moved it",
            Plan::Sum(walk2(concat!(
                batch2!("tenant_id, id, code_id, principal_id", "access_records"),
                " SELECT count(*) FILTER (WHERE c.bound_principal IS DISTINCT FROM batch.principal_id
                           AND NOT EXISTS (SELECT 1 FROM audit_log l WHERE l.tenant_id = batch.tenant_id
                                             AND l.action IN ('code.unbound', 'code.transferred')
                                             AND l.target_id = batch.code_id)),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch JOIN auth_codes c ON c.tenant_id = batch.tenant_id AND c.id = batch.code_id"
            ))),
        ),
        (
            // No binding moved outside the audited path: a bound code's
            // learner bound it themselves (its `bound_now` record), or an
            // approved transfer moved it to them (engine::transfers), or it
            // is the replacement that carried their binding over
            // (`code.replaced`). The unbind path's switch
            // (`admitone.unbind`) set by hand, or the trigger dropped,
            // shows here.
            "a binding is its learner's own, an approved transfer's or a replacement's",
            Plan::Sum(walk2(concat!(
                batch2!("tenant_id, id, share_id, bound_principal", "auth_codes"),
                " SELECT count(*) FILTER (WHERE bound_principal IS NOT NULL
                           AND NOT EXISTS (SELECT 1 FROM access_records a
                                 WHERE a.tenant_id = batch.tenant_id AND a.share_id = batch.share_id
                                   AND a.principal_id = batch.bound_principal
                                   AND a.code_id = batch.id AND a.bound_now)
                           AND NOT EXISTS (SELECT 1 FROM transfer_requests r
                                 WHERE r.tenant_id = batch.tenant_id AND r.code_id = batch.id
                                   AND r.to_account = batch.bound_principal AND r.status = 'approved')
                           AND NOT EXISTS (SELECT 1 FROM audit_log l
                                 WHERE l.tenant_id = batch.tenant_id AND l.action = 'code.replaced'
                                   AND l.details->>'replacement' = batch.id::text
                                   AND l.details->>'principal' = batch.bound_principal::text)),
                         (SELECT count(*) FROM batch), ",
                "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
                " FROM batch"
            ))),
        ),
        (
            // `tenants.transfers_per_code` when each transfer was approved
            // (a limit lowered later does not make old transfers wrong).
            "no code was transferred more often than its limit allowed",
            Plan::Sum(Walk {
                sql: "WITH batch AS (
                          SELECT tenant_id, code_id, count(*) AS n, max(code_limit) AS most
                          FROM transfer_requests
                          WHERE status = 'approved' AND (tenant_id, code_id) > ($1[1], $1[2])
                          GROUP BY tenant_id, code_id
                          ORDER BY tenant_id, code_id LIMIT $2)
                      SELECT count(*) FILTER (WHERE n > most), (SELECT count(*) FROM batch),
                             (SELECT ARRAY[tenant_id, code_id] FROM batch
                              ORDER BY tenant_id DESC, code_id DESC LIMIT 1)
                      FROM batch",
                key_len: 2,
                shares: false,
            }),
        ),
    ]
}

/// Sums a walk's hits, one bounded statement per batch, in the run's
/// transaction.
async fn walk(
    conn: &mut PgConnection,
    options: &Options<'_>,
    name: &str,
    walk: &Walk,
) -> anyhow::Result<i64> {
    let limit = if walk.shares {
        options.shares_batch
    } else {
        options.batch
    };
    anyhow::ensure!(limit > 0, "a batch holds at least one row");
    let mut cursor = vec![Uuid::nil(); walk.key_len];
    let mut total = 0_i64;
    loop {
        let (hits, rows, last): (Option<i64>, Option<i64>, Option<Vec<Uuid>>) =
            sqlx::query_as(walk.sql)
                .bind(&cursor)
                .bind(limit)
                .fetch_one(&mut *conn)
                .await
                .with_context(|| format!("checking: {name}"))?;
        total += hits.unwrap_or(0);
        match last {
            Some(last) if rows.unwrap_or(0) >= limit => cursor = last,
            _ => return Ok(total),
        }
    }
}

/// Runs every check with the default batch sizes.
pub async fn check_all(pool: &PgPool) -> anyhow::Result<Vec<Check>> {
    check_all_with(pool, &Options::default()).await
}

/// Runs every check, all in one `REPEATABLE READ READ ONLY` transaction
/// (one snapshot for every statement).
pub async fn check_all_with(pool: &PgPool, options: &Options<'_>) -> anyhow::Result<Vec<Check>> {
    let plans = checks();
    let mut checks = Vec::with_capacity(plans.len());
    let mut tx = pool.begin().await.context("starting the checks")?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await
        .context("taking the checks' snapshot")?;
    let hook = |name: &'static str, walk: usize| options.hook.map(|hook| hook(name, walk));
    for (name, plan) in &plans {
        let violations = match plan {
            Plan::Sum(w) => {
                if let Some(run) = hook(name, 0) {
                    run.await;
                }
                walk(&mut tx, options, name, w).await?
            }
            Plan::Difference(a, b) => {
                if let Some(run) = hook(name, 0) {
                    run.await;
                }
                let a = walk(&mut tx, options, name, a).await?;
                if let Some(run) = hook(name, 1) {
                    run.await;
                }
                let b = walk(&mut tx, options, name, b).await?;
                // Both sums are of the same snapshot: every first binding
                // is announced in the same transaction, so they are equal.
                (a - b).abs()
            }
        };
        checks.push(Check { name, violations });
    }
    tx.rollback().await.context("ending the checks")?;
    Ok(checks)
}

/// The reconciler's lock, held until [`Exclusive::release`] (or until its
/// connection ends, should the process die). A connection of its own, not
/// the pool's: a session lock on a pooled connection would outlive the run.
pub struct Exclusive {
    conn: PgConnection,
}

impl Exclusive {
    /// The lock, or `None` when another reconciler holds it.
    pub async fn try_acquire(pool: &PgPool) -> anyhow::Result<Option<Self>> {
        let mut conn = PgConnection::connect_with(&pool.connect_options())
            .await
            .context("connecting for the reconciler's lock")?;
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(RECONCILE_LOCK)
            .fetch_one(&mut conn)
            .await
            .context("taking the reconciler's lock")?;
        if locked {
            Ok(Some(Self { conn }))
        } else {
            conn.close().await.context("closing the lock connection")?;
            Ok(None)
        }
    }

    /// Releases the lock (ending its session releases it too).
    pub async fn release(mut self) -> anyhow::Result<()> {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(RECONCILE_LOCK)
            .execute(&mut self.conn)
            .await
            .context("releasing the reconciler's lock")?;
        self.conn
            .close()
            .await
            .context("closing the lock connection")
    }
}

/// The checks that found violations.
pub async fn violations(pool: &PgPool) -> anyhow::Result<Vec<Check>> {
    Ok(check_all(pool)
        .await?
        .into_iter()
        .filter(|c| c.violations != 0)
        .collect())
}

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
