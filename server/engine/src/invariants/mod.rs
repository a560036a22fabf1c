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
//! The checks themselves are in `checks.rs`, one function per invariant;
//! the reconciler's lock ([`Exclusive`]) and its repair of drifted
//! counters ([`repair_counters`]) each have a file of their own.

use std::{future::Future, pin::Pin};

use anyhow::Context as _;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

mod checks;
mod lock;
mod repair;

use checks::{INVARIANTS, Plan, Walk};
pub use lock::{Exclusive, RECONCILE_LOCK};
pub use repair::repair_counters;

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
    let mut checks = Vec::with_capacity(INVARIANTS.len());
    let mut tx = pool.begin().await.context("starting the checks")?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await
        .context("taking the checks' snapshot")?;
    let hook = |name: &'static str, walk: usize| options.hook.map(|hook| hook(name, walk));
    for &(name, plan) in INVARIANTS {
        let violations = match &plan() {
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

/// The checks that found violations.
pub async fn violations(pool: &PgPool) -> anyhow::Result<Vec<Check>> {
    Ok(check_all(pool)
        .await?
        .into_iter()
        .filter(|c| c.violations != 0)
        .collect())
}
