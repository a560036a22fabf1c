//! A Redis Cluster connection that heals itself after a failover.
//!
//! Why: redis-rs's cluster connection learns a new topology from a MOVED
//! answer or a refresh that a lost connection starts. When a primary is
//! killed under load, the refresh can run before its replica has taken
//! over, and what follows are only timeouts, which start nothing: every
//! request for the dead primary's slots timed out until the process was
//! restarted (`make faults`, a cluster primary killed under 300 learners;
//! all of this app's keys share one hash tag, so that was every request).
//!
//! So each request's result is watched: when requests have done nothing
//! but fail to reach Redis for [`REBUILD_AFTER`], a fresh connection is
//! built from the seed nodes in the background (a new topology, asked
//! anew) and replaces the old one. Any answer from Redis, an error reply
//! included, resets the watch.

use std::{
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use redis::{RedisError, RedisResult, cluster::ClusterClient, cluster_async::ClusterConnection};

/// How long requests must have only failed to reach Redis before the
/// connection is rebuilt: past a blip, within a failover's own seconds.
pub(super) const REBUILD_AFTER: Duration = Duration::from_secs(2);

/// The shared cluster connection and what heals it.
pub(super) struct HealingCluster {
    client: ClusterClient,
    current: RwLock<ClusterConnection>,
    /// Since when every request has failed to reach Redis (`None`: the
    /// last one reached it).
    failing_since: Mutex<Option<Instant>>,
    rebuilding: AtomicBool,
}

impl HealingCluster {
    pub(super) fn new(client: ClusterClient, conn: ClusterConnection) -> Self {
        Self {
            client,
            current: RwLock::new(conn),
            failing_since: Mutex::new(None),
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

    /// Takes note of a request's result, and starts a rebuild when
    /// requests have failed to reach Redis for long enough.
    pub(super) fn observe<T>(self: &Arc<Self>, result: &RedisResult<T>) {
        let unreachable = result.as_ref().err().is_some_and(unreachable);
        let due = {
            let mut since = self
                .failing_since
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if unreachable {
                let started = *since.get_or_insert_with(Instant::now);
                started.elapsed() >= REBUILD_AFTER
            } else {
                *since = None;
                false
            }
        };
        if due && !self.rebuilding.swap(true, Ordering::AcqRel) {
            let this = Arc::clone(self);
            tokio::spawn(async move {
                match this.client.get_async_connection().await {
                    Ok(fresh) => {
                        *this
                            .current
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh;
                        // The new connection gets a full window of its own.
                        *this
                            .failing_since
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                        tracing::warn!("Redis Cluster connection rebuilt after failing requests");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "rebuilding the Redis Cluster connection failed");
                    }
                }
                this.rebuilding.store(false, Ordering::Release);
            });
        }
    }
}

/// Whether `error` says Redis was not reached (rather than answering with
/// an error of its own).
fn unreachable(error: &RedisError) -> bool {
    error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_io_error()
        || error.is_unrecoverable_error()
}
