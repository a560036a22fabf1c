//! Following the primary of a highly available PostgreSQL.
//!
//! Why here: sqlx connects to the one host of its options and has no
//! `target_session_attrs`, so after a failover its pool would keep
//! dialling the old primary (dead, or back as a standby). With
//! `database.failover_hosts` set, the pool follows the primary itself:
//!
//! - every new connection asks whether its node takes writes (not in
//!   recovery, and not read-only: a promoted standby is read-only for a
//!   few seconds while pg_auto_failover makes sure the old primary has
//!   stopped) and is refused when it does not ([`refuse_a_standby`]): a
//!   settlement, a code entry or an admin write never runs on a standby;
//! - a follower task asks the node in use every `probe_every` the same;
//!   after two failed probes in a row (one slow answer is not a failover),
//!   it asks every node and points the pool at the one that takes writes
//!   (`Pool::set_connect_options`), and the pool drops every connection
//!   opened before the switch as it comes back ([`Primary::opened_before_switch`]),
//!   so none lingers on a node that is alive but no longer primary.
//!
//! Until a primary answers, requests fail as a momentary outage (503 with
//! `Retry-After`, [`super::is_transient`]) and `/readyz` names PostgreSQL;
//! the instance recovers by itself, without a restart.
//!
//! pg_auto_failover decides which node is primary and fences the old one
//! (docs/operations/high-availability.md); this only finds it.
//!
//! The same follower keeps the pool of stale-tolerant reads
//! (`database.read_from_standby`, [`super::reads`]) on a standby: there
//! the role it looks for is [`Role::Standby`] (and each read checks its
//! node is still in recovery).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use sqlx::{Connection as _, PgConnection, PgPool, postgres::PgConnectOptions};

/// What a pool needs its node to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Takes writes: not in recovery and not read-only.
    Primary,
    /// In recovery: a standby replaying the primary's WAL.
    Standby,
}

/// The nodes of the formation, and which one the pool uses now.
#[derive(Debug)]
pub struct Primary {
    nodes: Vec<PgConnectOptions>,
    current: AtomicUsize,
    /// When the pool last moved, in milliseconds since `born` (0: never).
    switched_ms: AtomicU64,
    born: Instant,
}

impl Primary {
    /// `first` is the URL's node; `others` the rest of the formation.
    pub fn new(first: PgConnectOptions, others: &[(String, u16)]) -> Self {
        Self::starting_at(first, others, 0)
    }

    /// Like [`Primary::new`], the pool starting on node `start` (0: the
    /// URL's; a standby pool starts on the first of `others`, where a
    /// fresh formation's standby usually is).
    pub fn starting_at(first: PgConnectOptions, others: &[(String, u16)], start: usize) -> Self {
        let mut nodes = vec![first.clone()];
        nodes.extend(
            others
                .iter()
                .map(|(host, port)| first.clone().host(host).port(*port)),
        );
        let start = if start < nodes.len() { start } else { 0 };
        Self {
            nodes,
            current: AtomicUsize::new(start),
            switched_ms: AtomicU64::new(0),
            born: Instant::now(),
        }
    }

    /// Whether a pooled connection of this `age` was opened before the
    /// pool last moved to another node (the pool's `before_acquire` then
    /// closes it instead of handing it out).
    pub fn opened_before_switch(&self, age: Duration) -> bool {
        let switched = self.switched_ms.load(Ordering::Relaxed);
        if switched == 0 {
            return false;
        }
        let since_switch = self
            .born
            .elapsed()
            .saturating_sub(Duration::from_millis(switched));
        age > since_switch
    }

    fn switch_to(&self, index: usize) {
        self.current.store(index, Ordering::Relaxed);
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.switched_ms.store(now.max(1), Ordering::Relaxed);
    }

    /// `host:port` of the node the pool connects to now.
    pub fn current(&self) -> String {
        let node = &self.nodes[self.current.load(Ordering::Relaxed)];
        format!("{}:{}", node.get_host(), node.get_port())
    }

    fn options(&self, index: usize) -> &PgConnectOptions {
        &self.nodes[index]
    }

    /// The options of the node the pool connects to now.
    pub fn current_options(&self) -> &PgConnectOptions {
        self.options(self.current.load(Ordering::Relaxed))
    }
}

/// Whether the node behind `connection` cannot take writes: in recovery
/// (a standby), or read-only (what libpq's `read-write` check asks too;
/// a just-promoted pg_auto_failover standby stays read-only until the
/// old primary must have stopped).
async fn is_standby(connection: &mut PgConnection) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool",
    )
    .fetch_one(connection)
    .await
}

/// The pool's `after_connect`: a connection that reached a standby is
/// refused (the pool retries, by then pointed at the primary).
pub async fn refuse_a_standby(connection: &mut PgConnection) -> Result<(), sqlx::Error> {
    if is_standby(connection).await? {
        return Err(sqlx::Error::Protocol(
            "connected to a standby, not the primary (the follower looks for the primary)".into(),
        ));
    }
    Ok(())
}

/// Whether `node` answers, within `timeout`, in `role`.
async fn answers_as(node: &PgConnectOptions, role: Role, timeout: Duration) -> bool {
    let probe = async {
        let mut connection = PgConnection::connect_with(node).await?;
        let fits = match role {
            Role::Primary => !is_standby(&mut connection).await?,
            Role::Standby => {
                sqlx::query_scalar("SELECT pg_is_in_recovery()")
                    .fetch_one(&mut connection)
                    .await?
            }
        };
        let _ = connection.close().await;
        Ok::<bool, sqlx::Error>(fits)
    };
    matches!(tokio::time::timeout(timeout, probe).await, Ok(Ok(true)))
}

async fn answers_as_primary(node: &PgConnectOptions, timeout: Duration) -> bool {
    answers_as(node, Role::Primary, timeout).await
}

/// Follows the node in `role` until `pool` closes: asks the node in use
/// every `every`, and on a change points `pool` at a node that answers in
/// that role. `configure` gives a node's options the pool's own settings
/// (its timeouts).
pub fn follow(
    pool: PgPool,
    primary: Arc<Primary>,
    role: Role,
    every: Duration,
    configure: impl Fn(PgConnectOptions) -> PgConnectOptions + Send + 'static,
) {
    let probe_timeout = every.max(Duration::from_secs(1));
    tokio::spawn(async move {
        let mut failed_probes = 0;
        loop {
            if pool.is_closed() {
                return;
            }
            let current = primary.current.load(Ordering::Relaxed);
            if answers_as(primary.options(current), role, probe_timeout).await {
                failed_probes = 0;
            } else {
                failed_probes += 1;
            }
            if failed_probes >= 2 {
                for index in (0..primary.nodes.len()).filter(|i| *i != current) {
                    if answers_as(primary.options(index), role, probe_timeout).await {
                        pool.set_connect_options(configure(primary.options(index).clone()));
                        primary.switch_to(index);
                        failed_probes = 0;
                        match role {
                            Role::Primary => {
                                tracing::warn!(
                                    primary = primary.current(),
                                    "PostgreSQL primary changed: the pool follows it"
                                );
                                crate::metrics::primary_changed();
                            }
                            Role::Standby => tracing::info!(
                                standby = primary.current(),
                                "stale-tolerant reads moved to another PostgreSQL standby"
                            ),
                        }
                        break;
                    }
                }
            }
            tokio::time::sleep(every).await;
        }
    });
}

/// `url` pointed at whichever node answers as the primary (itself when
/// there are no `others`), waiting up to 30 s for one: for the commands
/// that connect once (`server migrate`).
pub async fn primary_url(
    first: PgConnectOptions,
    url: &str,
    others: &[(String, u16)],
) -> anyhow::Result<String> {
    if others.is_empty() {
        return Ok(url.to_owned());
    }
    let formation = Primary::new(first, others);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        for (index, node) in formation.nodes.iter().enumerate() {
            if answers_as_primary(node, Duration::from_secs(2)).await {
                if index == 0 {
                    return Ok(url.to_owned());
                }
                let (host, port) = &others[index - 1];
                let mut moved = url::Url::parse(url)?;
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                moved
                    .set_host(Some(&host))
                    .map_err(|e| anyhow::anyhow!("database.failover_hosts: {host}: {e}"))?;
                moved
                    .set_port(Some(*port))
                    .map_err(|()| anyhow::anyhow!("database.failover_hosts: {host}: no port"))?;
                return Ok(moved.into());
            }
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no node answered as the primary within 30 s ({} nodes)",
            formation.nodes.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
