//! Redis: short-lived coordination only.
//!
//! PostgreSQL decides; Redis turns away losers of a race early, throttles
//! attempts and holds sessions. This module owns the one [`Redis`] handle
//! type (standalone or cluster behind the same API) and [`Keys`], the only
//! place a Redis key is spelled, so that every multi-key script keeps its
//! keys in one cluster slot and every deployment (or test) can use its own
//! key prefix.

mod keys;

use std::time::Duration;

use anyhow::Context as _;
use redis::{
    Cmd, Pipeline, RedisFuture, Value,
    aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig},
    cluster::ClusterClient,
    cluster_async::ClusterConnection,
};

pub use keys::{Keys, ThrottleScope};

/// How to reach Redis.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// One URL for a standalone server, several for a cluster's seed nodes.
    pub urls: Vec<String>,
    /// Use Redis Cluster (also implied by more than one URL).
    pub cluster: bool,
    /// Prefix of every key this process writes (a uuid per test).
    pub key_prefix: String,
    /// Bound on each Redis round trip; past it the call fails (and the
    /// configured failure policy applies), it never "assumes reserved".
    pub response_timeout: Duration,
}

/// A cheap-to-clone Redis handle: a reconnecting multiplexed connection to
/// a standalone server, or a cluster connection that follows MOVED/ASK.
#[derive(Clone)]
pub struct Redis {
    conn: Conn,
    keys: Keys,
}

#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.conn {
            Conn::Single(_) => "standalone",
            Conn::Cluster(_) => "cluster",
        };
        f.debug_struct("Redis")
            .field("kind", &kind)
            .field("keys", &self.keys)
            .finish()
    }
}

impl Redis {
    /// Builds the handle. A standalone connection is made lazily, so the
    /// server starts while Redis is down; `/readyz` reports it.
    pub async fn connect(options: &RedisOptions) -> anyhow::Result<Self> {
        let keys = Keys::new(&options.key_prefix);
        let urls = &options.urls;
        anyhow::ensure!(!urls.is_empty(), "no Redis URL configured");
        let conn = if options.cluster || urls.len() > 1 {
            let client = ClusterClient::builder(urls.iter().map(String::as_str))
                .response_timeout(options.response_timeout)
                .connection_timeout(options.response_timeout)
                .retries(3)
                .build()
                .context("building the Redis cluster client")?;
            Conn::Cluster(
                client
                    .get_async_connection()
                    .await
                    .context("connecting to the Redis cluster")?,
            )
        } else {
            let client = redis::Client::open(urls[0].as_str()).context("parsing the Redis URL")?;
            let config = ConnectionManagerConfig::new()
                .set_response_timeout(Some(options.response_timeout))
                .set_connection_timeout(Some(options.response_timeout))
                .set_number_of_retries(1)
                .set_max_delay(Duration::from_millis(200));
            Conn::Single(
                ConnectionManager::new_lazy_with_config(client, config)
                    .context("creating the Redis connection manager")?,
            )
        };
        Ok(Self { conn, keys })
    }

    /// The key builder for this handle's prefix.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A connection to run commands and scripts on (a clone of the shared,
    /// multiplexed one: cheap).
    pub fn conn(&self) -> RedisConn {
        RedisConn(self.conn.clone())
    }

    /// Every key matching `pattern`, by `SCAN` (never `KEYS`, which blocks
    /// the server). `None` against a cluster: its keys live on several
    /// nodes, and the reservation audit that uses this is standalone only.
    pub async fn scan(&self, pattern: &str) -> anyhow::Result<Option<Vec<String>>> {
        let Conn::Single(manager) = &self.conn else {
            return Ok(None);
        };
        let mut conn = manager.clone();
        let mut cursor: u64 = 0;
        let mut keys = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1_000)
                .query_async(&mut conn)
                .await
                .context("SCAN")?;
            keys.extend(batch);
            if next == 0 {
                return Ok(Some(keys));
            }
            cursor = next;
        }
    }

    /// `PING`, for readiness.
    pub async fn ping(&self) -> anyhow::Result<()> {
        let pong: String = redis::cmd("PING")
            .query_async(&mut self.conn())
            .await
            .context("PING to Redis")?;
        anyhow::ensure!(pong == "PONG", "unexpected PING reply {pong:?}");
        Ok(())
    }
}

/// A connection usable with `redis::cmd(..).query_async` and `Script`.
pub struct RedisConn(Conn);

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.0 {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.0 {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}
