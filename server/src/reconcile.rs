//! The reconciler: every invariant of the design checked in SQL over the
//! whole database (`engine::invariants`), run by `server reconcile` and
//! periodically inside `server serve`. Violations are logged as errors (one
//! line each, with the invariant's name) so alerting can key on them; with
//! repair on, counter drift is fixed. Bindings are never changed here.

use std::time::Duration;

use engine::invariants::{self, Check};
use sqlx::PgPool;

/// What one reconciliation found and did.
#[derive(Debug)]
pub struct Report {
    pub checks: Vec<Check>,
    /// Shares whose used quota was corrected.
    pub repaired: u64,
}

impl Report {
    pub fn violations(&self) -> i64 {
        self.checks.iter().map(|c| c.violations).sum()
    }
}

/// Checks every invariant; with `repair`, fixes counter drift first and
/// checks again.
pub async fn reconcile(pool: &PgPool, repair: bool) -> anyhow::Result<Report> {
    let repaired = if repair {
        invariants::repair_counters(pool).await?
    } else {
        0
    };
    let checks = invariants::check_all(pool).await?;
    for check in &checks {
        engine::measures::invariant_violations(
            check.name,
            usize::try_from(check.violations).unwrap_or(usize::MAX),
        );
    }
    engine::measures::counter_drift_repaired(repaired);
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
    Ok(Report { checks, repaired })
}

/// Runs [`reconcile`] every `every` (repairing counters) until the
/// process ends; a failed run is logged and retried next time.
pub fn spawn_periodic(pool: PgPool, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick fires at once: let the server settle first.
        ticker.tick().await;
        loop {
            ticker.tick().await;
            match reconcile(&pool, true).await {
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
