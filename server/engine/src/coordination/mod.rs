//! Redis: short-lived coordination only.
//!
//! PostgreSQL decides; Redis turns away losers of a race early, throttles
//! attempts and holds sessions. This module owns the one [`Redis`] handle
//! type (standalone or cluster behind the same API), [`script`], the one
//! door every Lua script is made through, and [`Keys`], the only
//! place a Redis key is spelled, so that every multi-key script keeps its
//! keys in one cluster slot and every deployment (or test) can use its own
//! key prefix.

mod cluster;
mod keys;
mod scripts;

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use redis::{
    Cmd, Pipeline, RedisFuture, Value,
    aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig},
    cluster::ClusterClient,
    cluster_async::ClusterConnection,
    cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr},
};

use cluster::HealingCluster;
pub use keys::{Keys, ThrottleScope};
pub use scripts::script;

/// Connection attempts to one cluster node before the client drops it and
/// finds the slots' new owner at the next topology refresh.
const CLUSTER_NODE_CONNECT_ATTEMPTS: std::num::NonZeroUsize =
    std::num::NonZeroUsize::new(3).expect("3 is not zero");

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
    Cluster(Arc<HealingCluster>),
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
                // A node that refuses connections this many times in a row
                // is dropped until the next topology refresh. Without a
                // limit the client keeps reconnecting to a killed primary
                // forever and never learns that its replica took over:
                // every request for its slots timed out until a restart
                // (`make faults`, cluster failover under 300 learners).
                .max_connection_attempts(CLUSTER_NODE_CONNECT_ATTEMPTS)
                .build()
                .context("building the Redis cluster client")?;
            let conn = client
                .get_async_connection()
                .await
                .context("connecting to the Redis cluster")?;
            Conn::Cluster(Arc::new(HealingCluster::new(client, conn)))
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
        RedisConn(match &self.conn {
            Conn::Single(manager) => Live::Single(manager.clone()),
            Conn::Cluster(cluster) => Live::Cluster(cluster.clone(), cluster.conn()),
        })
    }

    /// Every key matching `pattern`, by `SCAN` (never `KEYS`, which blocks
    /// the server). On a cluster, every primary is scanned in turn (a key
    /// lives on the primary of its slot); `Some` always, kept an `Option`
    /// for callers that may one day meet a Redis that cannot be scanned.
    pub async fn scan(&self, pattern: &str) -> anyhow::Result<Option<Vec<String>>> {
        let mut keys = Vec::new();
        match &self.conn {
            Conn::Single(manager) => {
                let mut conn = manager.clone();
                let mut cursor: u64 = 0;
                loop {
                    let (next, batch): (u64, Vec<String>) = scan_command(cursor, pattern)
                        .query_async(&mut conn)
                        .await
                        .context("SCAN")?;
                    keys.extend(batch);
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
            }
            Conn::Cluster(cluster) => {
                let mut conn = cluster.conn();
                let nodes: String = redis::from_redis_value(
                    conn.route_command(
                        redis::cmd("CLUSTER").arg("NODES").clone(),
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
                    )
                    .await
                    .context("CLUSTER NODES")?,
                )
                .context("reading CLUSTER NODES")?;
                // One slot of each primary: SCAN is routed by it, so the
                // client's own map of the cluster picks the node.
                for slot in primary_slots(&nodes)? {
                    let mut cursor: u64 = 0;
                    loop {
                        let (next, batch): (u64, Vec<String>) = redis::from_redis_value(
                            conn.route_command(
                                scan_command(cursor, pattern),
                                RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                                    Route::new(slot, SlotAddr::Master),
                                )),
                            )
                            .await
                            .with_context(|| format!("SCAN on the primary of slot {slot}"))?,
                        )
                        .context("reading SCAN")?;
                        keys.extend(batch);
                        if next == 0 {
                            break;
                        }
                        cursor = next;
                    }
                }
            }
        }
        Ok(Some(keys))
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
pub struct RedisConn(Live);

/// What a [`RedisConn`] talks through: on a cluster, the connection of the
/// moment and the handle that watches each result (and heals it).
enum Live {
    Single(ConnectionManager),
    Cluster(Arc<HealingCluster>, ClusterConnection),
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.0 {
            Live::Single(c) => c.req_packed_command(cmd),
            Live::Cluster(cluster, c) => Box::pin(async move {
                let result = c.req_packed_command(cmd).await;
                cluster.observe(&result);
                result
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.0 {
            Live::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Live::Cluster(cluster, c) => Box::pin(async move {
                let result = c.req_packed_commands(pipeline, offset, count).await;
                cluster.observe(&result);
                result
            }),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Live::Single(c) => c.get_db(),
            Live::Cluster(_, c) => c.get_db(),
        }
    }
}

/// One `SCAN` step.
fn scan_command(cursor: u64, pattern: &str) -> Cmd {
    let mut cmd = redis::cmd("SCAN");
    cmd.arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(1_000);
    cmd
}

/// The first slot of each primary in a `CLUSTER NODES` answer (`<id>
/// <address> <flags> <primary> <ping> <pong> <epoch> <link> <slot or
/// range>...`), after checking that together they serve all 16,384 slots:
/// an audit that skipped a primary (one this node sees failing, say)
/// would say "ok" about keys it never saw.
fn primary_slots(nodes: &str) -> anyhow::Result<Vec<u16>> {
    const SLOTS: usize = 16_384;
    let mut served = vec![false; SLOTS];
    let mut firsts = Vec::new();
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(flags) = fields.get(2) else {
            continue;
        };
        if !flags.split(',').any(|f| f == "master") {
            continue;
        }
        let mut first = None;
        // Slots being migrated (`[slot->-id]`, `[slot-<-id]`) are not listed
        // as ranges: skip them.
        for range in fields.iter().skip(8).filter(|r| !r.starts_with('[')) {
            let (from, to) = range.split_once('-').unwrap_or((range, range));
            let (from, to): (usize, usize) = (
                from.parse()
                    .with_context(|| format!("a slot in {line:?}"))?,
                to.parse().with_context(|| format!("a slot in {line:?}"))?,
            );
            anyhow::ensure!(from <= to && to < SLOTS, "slots {range} in {line:?}");
            served[from..=to].iter_mut().for_each(|s| *s = true);
            first.get_or_insert(u16::try_from(from).context("a slot")?);
        }
        firsts.extend(first);
    }
    let missing = served.iter().filter(|s| !**s).count();
    anyhow::ensure!(
        missing == 0,
        "the cluster's primaries serve {} of {SLOTS} slots: not every key can be scanned",
        SLOTS - missing
    );
    Ok(firsts)
}

#[cfg(test)]
mod tests {
    use super::primary_slots;

    #[test]
    fn each_primary_is_named_by_a_slot_it_serves() {
        let nodes = "\
a1 127.0.0.1:17001@27001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:17002@27002,redis-b master - 0 1 2 connected 5461-10921 10922 [10923->-c3]
c3 ::1:17003@27003 master,fail? - 0 1 3 disconnected 10923-16383
d4 127.0.0.1:17004@27004 slave a1 0 1 1 connected
f6 127.0.0.1:17006@27006 master - 0 1 6 connected
";
        // A primary this node sees failing is still scanned (routed by its
        // slot, the client finds whoever serves it, or the SCAN fails).
        assert_eq!(
            primary_slots(nodes).expect("all slots"),
            vec![0, 5461, 10923]
        );
    }

    #[test]
    fn a_cluster_that_does_not_serve_every_slot_cannot_be_audited() {
        let nodes = "\
a1 127.0.0.1:17001@27001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:17002@27002 master - 0 1 2 connected 5461-10922
";
        let error = primary_slots(nodes).expect_err("a third of the slots missing");
        assert!(error.to_string().contains("10923 of 16384"), "{error}");
        assert!(primary_slots("a1 :7000@17000 myself,master - 0 0 1 connected").is_err());
    }
}
