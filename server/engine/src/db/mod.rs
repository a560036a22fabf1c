//! The PostgreSQL pool.
//!
//! PostgreSQL is the authority for every invariant, so each connection is
//! opened with server-side timeouts: a stuck statement or an abandoned
//! transaction must release its locks quickly, and the Redis reservation TTL
//! is derived from the same transaction bound.

mod address;
pub mod primary;
pub mod reads;
pub mod tenant_keys;
pub mod turns;

use std::time::Duration;

pub use address::{DatabaseUrlError, parse as parse_url};
use anyhow::Context as _;
pub use reads::Reads;
/// The PostgreSQL pool adapters hold and pass back in: the one sqlx type
/// outside the engine, re-exported so nothing else depends on sqlx.
pub use sqlx::PgPool;
use sqlx::{
    ConnectOptions as _,
    postgres::{PgConnectOptions, PgPoolOptions},
};

/// How the pool connects and how long PostgreSQL lets work run.
#[derive(Debug, Clone)]
pub struct DbOptions {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
    /// `statement_timeout` for every statement.
    pub statement_timeout: Duration,
    /// `lock_timeout` for every lock wait.
    pub lock_timeout: Duration,
    /// `idle_in_transaction_session_timeout`: a transaction left open by a
    /// crashed or stalled handler is killed after this long.
    pub idle_in_transaction_timeout: Duration,
    /// A connection idle longer than this is pinged before it is handed
    /// out ([`PING_IF_IDLE_FOR`]).
    pub ping_if_idle_for: Duration,
    /// The other nodes of a highly available PostgreSQL (`host`, `port`;
    /// same user, password and database as the URL): when set, the pool
    /// follows whichever node is the primary ([`primary`]).
    pub failover_hosts: Vec<(String, u16)>,
    /// How often the pool asks its node whether it is still the primary
    /// (with `failover_hosts` only).
    pub primary_probe_every: Duration,
    /// Stale-tolerant reads ([`reads`]) on a standby of the formation
    /// (with `failover_hosts` only).
    pub read_from_standby: bool,
    /// How long a read waits for the standby to replay the primary's
    /// WAL before it runs on the primary instead.
    pub standby_wait: Duration,
    /// Connections of the standby's pool.
    pub standby_max_connections: u32,
}

impl Default for DbOptions {
    fn default() -> Self {
        Self {
            max_connections: 20,
            acquire_timeout: Duration::from_secs(3),
            statement_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(10),
            ping_if_idle_for: PING_IF_IDLE_FOR,
            failover_hosts: Vec::new(),
            primary_probe_every: Duration::from_millis(500),
            read_from_standby: false,
            standby_wait: Duration::from_millis(250),
            standby_max_connections: 5,
        }
    }
}

fn with_timeouts(connect: PgConnectOptions, options: &DbOptions) -> PgConnectOptions {
    connect
        .options([
            (
                "statement_timeout",
                format!("{}", options.statement_timeout.as_millis()),
            ),
            (
                "lock_timeout",
                format!("{}", options.lock_timeout.as_millis()),
            ),
            (
                "idle_in_transaction_session_timeout",
                format!("{}", options.idle_in_transaction_timeout.as_millis()),
            ),
        ])
        .log_statements(tracing::log::LevelFilter::Debug)
}

/// A pool that connects lazily: the server starts (and `/readyz` reports the
/// database as down) even when PostgreSQL is not reachable yet.
pub fn connect_lazy(url: &str, options: &DbOptions) -> anyhow::Result<PgPool> {
    let connect = parse_url(url).context("database.url")?;
    Ok(pool_with_timeouts(connect, options))
}

/// The one pool constructor: `serve` (through [`connect_lazy`]) and the
/// test harness (with options from `#[sqlx::test]`) both build their pools
/// here, so tests run under production's timeouts.
///
/// With `failover_hosts`, the pool refuses connections to a standby and a
/// task follows the primary ([`primary`]); it must then be built inside a
/// Tokio runtime.
pub fn pool_with_timeouts(connect: PgConnectOptions, options: &DbOptions) -> PgPool {
    if options.failover_hosts.is_empty() {
        return pool_options(options).connect_lazy_with(with_timeouts(connect, options));
    }
    let nodes = std::sync::Arc::new(primary::Primary::new(
        connect.clone(),
        &options.failover_hosts,
    ));
    let pool = pool_options_with(options, Some(nodes.clone()))
        .after_connect(|connection, _| Box::pin(primary::refuse_a_standby(connection)))
        .connect_lazy_with(with_timeouts(connect, options));
    let timeouts = options.clone();
    primary::follow(
        pool.clone(),
        nodes,
        primary::Role::Primary,
        options.primary_probe_every,
        move |node| with_timeouts(node, &timeouts),
    );
    pool
}

/// Where stale-tolerant reads run ([`reads`]): on a standby of the
/// formation (a second, smaller pool following a node in recovery, each
/// connection named `admitone reads` in `pg_stat_activity`; a read checks
/// its node is still in recovery, so a connection is not refused for it,
/// which would have the pool retry connecting until its timeout) when
/// `read_from_standby` and `failover_hosts` are set, else on `primary`.
/// `url` is `database.url`, the formation's first node; it must be called
/// inside a Tokio runtime when a standby is used.
pub fn reads(primary: PgPool, url: &str, options: &DbOptions) -> anyhow::Result<Reads> {
    if !options.read_from_standby || options.failover_hosts.is_empty() {
        return Ok(Reads::primary_only(primary));
    }
    let connect = parse_url(url).context("database.url")?;
    let nodes = std::sync::Arc::new(primary::Primary::starting_at(
        connect.application_name("admitone reads"),
        &options.failover_hosts,
        1,
    ));
    // A read never waits for a standby connection longer than it would
    // wait for the standby to catch up: it runs on the primary instead.
    let acquire = options.standby_wait.max(Duration::from_millis(50));
    let standby_options = DbOptions {
        max_connections: options.standby_max_connections.max(1),
        acquire_timeout: acquire,
        ..options.clone()
    };
    let standby = pool_options_with(&standby_options, Some(nodes.clone()))
        .connect_lazy_with(with_timeouts(nodes.current_options().clone(), options));
    let timeouts = options.clone();
    primary::follow(
        standby.clone(),
        nodes,
        primary::Role::Standby,
        options.primary_probe_every,
        move |node| with_timeouts(node, &timeouts),
    );
    Ok(Reads::with_standby(primary, standby, options.standby_wait))
}

/// A pooled connection idle for longer than this is pinged before it is
/// handed out (one round trip), so one that PostgreSQL dropped while it
/// sat in the pool (a restart, an idle timeout) is replaced, not used.
///
/// A busier connection is handed out as it is: pinging it too would add a
/// round trip to every query under load, and sqlx already pings each one
/// as it comes back to the pool, closing it if it broke. So when
/// PostgreSQL restarts under load, each connection used in the second
/// before fails one query (a 503 with `Retry-After`, see
/// [`is_transient`]; up to the pool's size of them per instance, where
/// pinging on every hand-out cost only the queries in flight), then is
/// replaced. Never a wrong answer: a query on a dropped connection fails,
/// it does not run.
pub const PING_IF_IDLE_FOR: Duration = Duration::from_secs(1);

fn pool_options(options: &DbOptions) -> PgPoolOptions {
    pool_options_with(options, None)
}

/// The pool's options; with `primary`, a connection opened before the
/// pool last moved to another node is closed instead of handed out.
fn pool_options_with(
    options: &DbOptions,
    primary: Option<std::sync::Arc<primary::Primary>>,
) -> PgPoolOptions {
    let ping_if_idle_for = options.ping_if_idle_for;
    let released = primary.clone();
    let release_ping = options.primary_probe_every.max(Duration::from_secs(1));
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .test_before_acquire(false)
        .before_acquire(move |conn, meta| {
            let primary = primary.clone();
            Box::pin(async move {
                if primary.is_some_and(|p| p.opened_before_switch(meta.age)) {
                    return Ok(false);
                }
                if meta.idle_for <= ping_if_idle_for {
                    return Ok(true);
                }
                // A dropped connection is expected here (that is what the
                // ping is for): replace it quietly rather than as an error.
                match sqlx::Connection::ping(conn).await {
                    Ok(()) => Ok(true),
                    Err(error) => {
                        tracing::debug!(%error, "replacing a pooled connection PostgreSQL dropped");
                        Ok(false)
                    }
                }
            })
        });
    if released.is_none() {
        return pool;
    }
    // With a formation, a node may freeze (a stuck machine or disk, a
    // silent partition): its connections stay open and nothing answers.
    // sqlx pings a connection as it comes back to the pool, without a time
    // limit, and holds its slot meanwhile: a frozen node would keep every
    // connection that was in use on it, until the pool had none left. So a
    // returning connection is closed without a word when it was opened
    // before the pool moved, and is pinged here first, within the probe's
    // time limit, and closed if the node does not answer (one more round
    // trip per release, with `failover_hosts` only).
    pool.after_release(move |conn, meta| {
        let primary = released.clone();
        Box::pin(async move {
            if primary.is_some_and(|p| p.opened_before_switch(meta.age)) {
                return Ok(false);
            }
            match tokio::time::timeout(release_ping, sqlx::Connection::ping(conn)).await {
                Ok(Ok(())) => Ok(true),
                Ok(Err(error)) => Err(error),
                Err(_) => Err(sqlx::Error::Protocol(
                    "the node did not answer a ping within the probe's limit".into(),
                )),
            }
        })
    })
}

/// The migrations of `migrations/`, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Creates the database if it does not exist, then applies every pending
/// migration; with `failover_hosts`, on whichever node is the primary
/// (waiting up to 30 s for one to answer).
pub async fn migrate(url: &str, failover_hosts: &[(String, u16)]) -> anyhow::Result<()> {
    use sqlx::migrate::MigrateDatabase as _;
    let url = &primary::primary_url(parse_url(url).context("database.url")?, url, failover_hosts)
        .await
        .context("finding the PostgreSQL primary to migrate")?;
    if !sqlx::Postgres::database_exists(url)
        .await
        .context("checking whether the database exists")?
    {
        sqlx::Postgres::create_database(url)
            .await
            .context("creating the database")?;
        tracing::info!("created database");
    }
    let connect = parse_url(url).context("database.url")?;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(connect)
        .await
        .context("connecting to PostgreSQL to migrate")?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    pool.close().await;
    Ok(())
}

/// Whether `error` is a momentary outage rather than a bug: PostgreSQL
/// unreachable, restarting or shedding load (connection lost, pool timed
/// out, admin or crash shutdown, statement or lock timeout, serialisation
/// failure), or Redis unreachable or timing out. Callers answer these with
/// 503 and `Retry-After`; everything else is an internal error.
pub fn is_transient(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        if let Some(db) = cause.downcast_ref::<sqlx::Error>() {
            return match db {
                sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => true,
                sqlx::Error::Database(e) => e.code().is_some_and(|code| {
                    // 08: connection exceptions; 57P0x: shutdown / cannot
                    // connect now; 57014 statement timeout; 55P03 lock
                    // timeout; 40001 / 40P01 serialisation / deadlock.
                    // 25006: a read-only transaction, i.e. a node that
                    // became a standby under a pooled connection.
                    code.starts_with("08")
                        || code.starts_with("57P0")
                        || matches!(
                            code.as_ref(),
                            "57014" | "55P03" | "40001" | "40P01" | "25006"
                        )
                }),
                _ => false,
            };
        }
        cause.downcast_ref::<redis::RedisError>().is_some_and(|e| {
            e.is_io_error()
                || e.is_timeout()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_cluster_error()
                // A failover or a restart in progress: READONLY replica,
                // MASTERDOWN, LOADING its data, TRYAGAIN.
                || matches!(
                    e.kind(),
                    redis::ErrorKind::Server(
                        redis::ServerErrorKind::ReadOnly
                            | redis::ServerErrorKind::MasterDown
                            | redis::ServerErrorKind::BusyLoading
                            | redis::ServerErrorKind::TryAgain
                            | redis::ServerErrorKind::ClusterDown
                    )
                )
        })
    })
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection as _, PgConnection, postgres::PgConnectOptions};

    /// A migration a database has applied never changes (sqlx refuses to
    /// start on it): `migrations/checksums` records each file's SHA-256 as
    /// it landed (`sha256sum` output), and every migration, read through a
    /// link (`20261209000002_settle_access.sql`), must still match it. An
    /// edit to `settle_access.sql` without freezing the migration that
    /// links to it first (`migrations/README.md`) fails here, not in a
    /// deploy.
    #[test]
    fn an_applied_migration_never_changes() {
        use sha2::{Digest as _, Sha256};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
        let recorded =
            std::fs::read_to_string(dir.join("checksums")).expect("migrations/checksums");
        let recorded: std::collections::BTreeMap<&str, &str> = recorded
            .lines()
            .filter_map(|line| line.split_once("  "))
            .map(|(digest, name)| (name, digest))
            .collect();
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("the migrations")
            .map(|entry| {
                entry
                    .expect("a migration")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".sql"))
            .collect();
        files.sort();
        assert_eq!(
            files,
            recorded
                .keys()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>(),
            "every migration is recorded in migrations/checksums, and only those: \
             append a new one with `cd migrations && sha256sum <file> >> checksums`"
        );
        for name in files {
            let text = std::fs::read(dir.join(&name)).expect("a migration");
            let digest: String = Sha256::digest(&text)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(
                digest,
                recorded[name.as_str()],
                "{name} changed after it was recorded: a database that applied it refuses \
                 to start. Put it back; change the schema with a new migration \
                 (migrations/README.md)"
            );
        }
    }

    use super::*;

    /// One pooled connection; returns the pool and its backend's pid.
    async fn pool_of_one(connect: &PgConnectOptions, ping_if_idle_for: Duration) -> (PgPool, i32) {
        let pool = pool_with_timeouts(
            connect.clone(),
            &DbOptions {
                max_connections: 1,
                ping_if_idle_for,
                ..DbOptions::default()
            },
        );
        let pid = backend(&pool).await.expect("first query");
        // Back in the pool (its return, with sqlx's ping, is a task of
        // its own) before anything is done to it.
        for _ in 0..500 {
            if pool.num_idle() == 1 {
                return (pool, pid);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the connection never came back to the pool");
    }

    async fn backend(pool: &PgPool) -> Result<i32, sqlx::Error> {
        sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(pool)
            .await
    }

    /// Terminates the backend `pid` (as a restart would) and waits until
    /// it is gone.
    async fn drop_backend(connect: &PgConnectOptions, pid: i32) {
        let mut other = PgConnection::connect_with(connect)
            .await
            .expect("a second connection");
        let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .fetch_one(&mut other)
            .await
            .expect("terminating the pooled backend");
        assert!(killed, "the pooled backend was found and terminated");
        for _ in 0..500 {
            let alive: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)")
                    .bind(pid)
                    .fetch_one(&mut other)
                    .await
                    .expect("pg_stat_activity");
            if !alive {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("backend {pid} still there after 5 s");
    }

    /// A connection PostgreSQL dropped while it sat idle in the pool (a
    /// restart, `pg_terminate_backend`) is pinged, found dead and replaced
    /// before a query gets it: the query succeeds on a new backend.
    #[sqlx::test(migrations = false)]
    async fn a_connection_dropped_while_idle_is_replaced_before_use(
        _: PgPoolOptions,
        connect: PgConnectOptions,
    ) {
        let (pool, first) = pool_of_one(&connect, Duration::from_millis(100)).await;
        drop_backend(&connect, first).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let second = backend(&pool)
            .await
            .expect("the query after the drop gets a live connection");
        assert_ne!(second, first, "a new backend, not the dropped one");
    }

    /// A connection used within the last [`DbOptions::ping_if_idle_for`]
    /// is not pinged: dropped under it, it fails one query with an error
    /// callers answer as a momentary outage (503), never a wrong answer;
    /// then it is replaced.
    #[sqlx::test(migrations = false)]
    async fn a_connection_dropped_while_busy_fails_one_query_as_an_outage(
        _: PgPoolOptions,
        connect: PgConnectOptions,
    ) {
        let (pool, first) = pool_of_one(&connect, Duration::from_secs(3_600)).await;
        drop_backend(&connect, first).await;
        let error = backend(&pool)
            .await
            .expect_err("the dropped connection is handed out unpinged");
        assert!(
            is_transient(&anyhow::Error::new(error)),
            "an outage, answered 503"
        );
        let second = backend(&pool).await.expect("then a new connection");
        assert_ne!(second, first, "a new backend, not the dropped one");
    }
}
