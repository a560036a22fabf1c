//! A Redis Cluster connection that heals itself after a failover.
//!
//! Why: redis-rs's cluster connection learns a new topology from a MOVED
//! answer or from a refresh that a lost connection starts. When a primary
//! was killed under load, the refresh ran before its replica had taken
//! over, and what followed were only timeouts, which start nothing: every
//! request was answered 503 for the whole minute after the failover, until
//! the process was restarted (`make faults`, a cluster primary killed under
//! the contended mix of 300 learners, twice in a row).
//!
//! So each request's result is counted, in windows of [`REBUILD_AFTER`]:
//! when at least [`MIN_FAILURES`] requests of a window could not reach
//! Redis and they are at least a fifth of it (one dead primary of three
//! fails about a third; a healthy cluster about none), a fresh connection
//! is built from the seed nodes in the background (the topology asked
//! anew) and replaces the old one. An error Redis answered (a script's
//! own error, say) is not a failure to reach it.

use std::{
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use redis::{
    ErrorKind, RedisError, RedisResult, cluster::ClusterClient, cluster_async::ClusterConnection,
};

/// The window over which requests are counted: past a blip, within a
/// failover's own seconds.
const REBUILD_AFTER: Duration = Duration::from_secs(2);

/// Failures a window needs before it can call for a rebuild.
const MIN_FAILURES: u32 = 5;

/// The shared cluster connection and what heals it.
pub(super) struct HealingCluster {
    client: ClusterClient,
    current: RwLock<ClusterConnection>,
    window: Mutex<FailureWindow>,
    rebuilding: AtomicBool,
}

impl HealingCluster {
    pub(super) fn new(client: ClusterClient, conn: ClusterConnection) -> Self {
        Self {
            client,
            current: RwLock::new(conn),
            window: Mutex::new(FailureWindow::new(Instant::now())),
            rebuilding: AtomicBool::new(false),
        }
    }

    /// The connection to use now (a clone of the shared one: cheap).
    pub(super) fn conn(&self) -> ClusterConnection {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Counts a request's result, and starts a rebuild when its window
    /// calls for one (one at a time).
    pub(super) fn observe<T>(self: &Arc<Self>, result: &RedisResult<T>) {
        let unreachable = result.as_ref().err().is_some_and(unreachable);
        let due = self
            .window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .record(unreachable, Instant::now());
        if due && !self.rebuilding.swap(true, Ordering::AcqRel) {
            let this = Arc::clone(self);
            tokio::spawn(async move {
                match this.client.get_async_connection().await {
                    Ok(fresh) => {
                        *this
                            .current
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh;
                        tracing::warn!("Redis Cluster connection rebuilt after failing requests");
                    }
                    Err(error) => {
                        // The next window decides again (never at once).
                        tracing::warn!(%error, "rebuilding the Redis Cluster connection failed");
                    }
                }
                this.rebuilding.store(false, Ordering::Release);
            });
        }
    }
}

/// Requests that reached Redis and requests that did not, since `started`.
#[derive(Debug)]
struct FailureWindow {
    started: Instant,
    reached: u32,
    failed: u32,
}

impl FailureWindow {
    fn new(now: Instant) -> Self {
        Self {
            started: now,
            reached: 0,
            failed: 0,
        }
    }

    /// Counts one result; once the window is [`REBUILD_AFTER`] old, says
    /// whether it calls for a rebuild and starts the next one.
    fn record(&mut self, unreachable: bool, now: Instant) -> bool {
        if unreachable {
            self.failed = self.failed.saturating_add(1);
        } else {
            self.reached = self.reached.saturating_add(1);
        }
        if now.saturating_duration_since(self.started) < REBUILD_AFTER {
            return false;
        }
        let total = u64::from(self.failed) + u64::from(self.reached);
        let due = self.failed >= MIN_FAILURES && u64::from(self.failed) * 5 >= total;
        *self = Self::new(now);
        due
    }
}

/// Whether `error` says Redis was not reached (a timeout, a refused or
/// dropped connection, a node the client has no connection to), rather
/// than Redis answering with an error of its own.
fn unreachable(error: &RedisError) -> bool {
    error.is_io_error() || error.kind() == ErrorKind::ClusterConnectionNotFound
}

#[cfg(test)]
mod tests {
    use super::{FailureWindow, MIN_FAILURES, REBUILD_AFTER};
    use std::time::{Duration, Instant};

    /// Records `failed` failures and `reached` successes spread over a
    /// window, then one more result at its end; the verdict.
    fn verdict(failed: u32, reached: u32) -> bool {
        let start = Instant::now();
        let mut window = FailureWindow::new(start);
        let step = Duration::from_millis(1);
        let mut due = false;
        for i in 0..failed {
            due |= window.record(true, start + step * i);
        }
        for i in 0..reached {
            due |= window.record(false, start + step * (failed + i));
        }
        due | window.record(false, start + REBUILD_AFTER)
    }

    #[test]
    fn a_window_of_failures_calls_for_a_rebuild() {
        assert!(verdict(100, 0));
        // One dead primary of three: about a third fail.
        assert!(verdict(100, 200));
        // Exactly a fifth.
        assert!(verdict(25, 99));
    }

    #[test]
    fn a_healthy_or_quiet_window_does_not() {
        assert!(!verdict(0, 1_000));
        assert!(!verdict(3, 1_000));
        // Below a fifth.
        assert!(!verdict(24, 101));
        // Too few failures to tell, however high their share.
        assert!(!verdict(MIN_FAILURES - 1, 0));
    }

    #[test]
    fn nothing_is_decided_before_the_window_ends_and_each_window_starts_afresh() {
        let start = Instant::now();
        let mut window = FailureWindow::new(start);
        for i in 0..50 {
            assert!(!window.record(true, start + Duration::from_millis(i)));
        }
        assert!(window.record(true, start + REBUILD_AFTER));
        // The next window counts from zero: one failure does not carry it.
        let next = start + REBUILD_AFTER;
        assert!(!window.record(true, next + REBUILD_AFTER));
    }
}
