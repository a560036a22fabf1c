//! The reconciler: every invariant of the design checked in SQL over the
//! whole database (`engine::invariants`), run by `server reconcile` and
//! periodically inside `server serve`. Violations are logged as errors (one
//! line each, with the invariant's name) so alerting can key on them; with
//! repair on, counter drift is fixed. Bindings are never changed here.
//!
//! Every instance runs the periodic reconciler, but one run at a time is
//! enough and several would only multiply the load: a run first takes
//! PostgreSQL's advisory lock ([`invariants::Exclusive`]); when another
//! instance (or a `server reconcile`) holds it, the run is skipped and says
//! so. The checks themselves walk the tables in bounded batches, so a run
//! over millions of codes stays within the statement timeout.

use std::time::Duration;

use engine::db::PgPool;
use engine::{
    coordination::Redis,
    invariants::{self, Check},
};

/// What one reconciliation found and did.
#[derive(Debug)]
pub struct Report {
    /// Another reconciler was running: nothing was checked.
    pub skipped: bool,
    pub checks: Vec<Check>,
    /// Shares whose used quota was corrected.
    pub repaired: u64,
    /// Stale Redis reservations removed.
    pub reservations_removed: u64,
    /// Why the Redis reservation audit did not run (Redis unreachable, a
    /// failed scan): not a pass, and said so.
    pub reservations_not_checked: Option<String>,
}

/// Redis to audit: its reservation keys may live at most `ttl`.
#[derive(Debug, Clone)]
pub struct Reservations {
    pub redis: Redis,
    pub ttl: Duration,
}

/// The Redis reservation audit, as the report names it.
pub const RESERVATIONS_CHECK: &str = "every Redis reservation expires within its TTL";

impl Report {
    pub fn violations(&self) -> i64 {
        self.checks.iter().map(|c| c.violations).sum()
    }
}

/// Checks every invariant; with `repair`, fixes counter drift first, then
/// checks. Skipped (and reported so) while another reconciler runs.
pub async fn reconcile(
    pool: &PgPool,
    reservations: Option<&Reservations>,
    repair: bool,
) -> anyhow::Result<Report> {
    reconcile_with(pool, reservations, repair, &invariants::Options::default()).await
}

/// [`reconcile`] with the checks' batch sizes given (tests make them small).
pub async fn reconcile_with(
    pool: &PgPool,
    reservations: Option<&Reservations>,
    repair: bool,
    options: &invariants::Options<'_>,
) -> anyhow::Result<Report> {
    let Some(lock) = invariants::Exclusive::try_acquire(pool).await? else {
        tracing::info!("reconciliation skipped: another reconciler is running");
        return Ok(Report {
            skipped: true,
            checks: Vec::new(),
            repaired: 0,
            reservations_removed: 0,
            reservations_not_checked: None,
        });
    };
    let report = reconcile_exclusively(pool, reservations, repair, options).await;
    if let Err(error) = lock.release().await {
        tracing::warn!(
            error = format!("{error:#}"),
            "releasing the reconciler's lock failed (its connection is closed)"
        );
    }
    report
}

async fn reconcile_exclusively(
    pool: &PgPool,
    reservations: Option<&Reservations>,
    repair: bool,
    options: &invariants::Options<'_>,
) -> anyhow::Result<Report> {
    let repaired = if repair {
        invariants::repair_counters(pool, options).await?
    } else {
        0
    };
    let mut checks = invariants::check_all_with(pool, options).await?;
    let mut reservations_removed = 0;
    let mut reservations_not_checked = None;
    if reservations.is_none() {
        reservations_not_checked = Some("Redis unreachable".to_owned());
    }
    if let Some(audit) = reservations {
        // Redis trouble is logged, not a violation: the database checks
        // above stand on their own.
        match engine::reservation::stale(&audit.redis, audit.ttl).await {
            Ok(Some(mut stale)) => {
                if repair && !stale.is_empty() {
                    match engine::reservation::remove(&audit.redis, &stale, audit.ttl).await {
                        Ok(removed) => reservations_removed = removed,
                        Err(error) => tracing::warn!(
                            error = format!("{error:#}"),
                            "removing stale reservations failed"
                        ),
                    }
                    match engine::reservation::stale(&audit.redis, audit.ttl).await {
                        Ok(left) => stale = left.unwrap_or_default(),
                        Err(error) => tracing::warn!(
                            error = format!("{error:#}"),
                            "re-auditing reservations failed"
                        ),
                    }
                }
                checks.push(Check {
                    name: RESERVATIONS_CHECK,
                    violations: i64::try_from(stale.len()).unwrap_or(i64::MAX),
                });
            }
            Ok(None) => {
                tracing::warn!("reservation audit skipped: this Redis cannot be scanned");
                reservations_not_checked = Some("this Redis cannot be scanned".to_owned());
            }
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "reservation audit failed");
                reservations_not_checked = Some(format!("{error:#}"));
            }
        }
    }
    for check in &checks {
        engine::metrics::invariant_violations(
            check.name,
            usize::try_from(check.violations).unwrap_or(usize::MAX),
        );
    }
    engine::metrics::counter_drift_repaired(repaired);
    for check in checks.iter().filter(|c| c.violations != 0) {
        tracing::error!(
            invariant = check.name,
            violations = check.violations,
            "invariant violated"
        );
    }
    if repaired > 0 {
        tracing::warn!(shares = repaired, "repaired used quotas that drifted");
    }
    if reservations_removed > 0 {
        tracing::warn!(
            keys = reservations_removed,
            "removed stale Redis reservations"
        );
    }
    Ok(Report {
        skipped: false,
        checks,
        repaired,
        reservations_removed,
        reservations_not_checked,
    })
}

/// Runs [`reconcile`] every `every` (repairing counters) until the
/// process ends; a failed run is logged and retried next time.
pub fn spawn_periodic(
    pool: PgPool,
    reservations: Option<Reservations>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick fires at once: let the server settle first.
        ticker.tick().await;
        loop {
            ticker.tick().await;
            match reconcile(&pool, reservations.as_ref(), true).await {
                Ok(report) if report.skipped => {}
                Ok(report) => tracing::info!(
                    violations = report.violations(),
                    repaired = report.repaired,
                    "reconciled"
                ),
                Err(error) => {
                    tracing::error!(error = format!("{error:#}"), "reconciliation failed");
                }
            }
        }
    })
}
