//! One fault's run, start to finish: its Redis setup, a fresh database,
//! its instances and learners, the fault itself mid-load, and the checks
//! afterwards (the invariants, successes that did not commit). Split out
//! of `main.rs` to keep each file short.

use std::{
    process::Command,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use harness::drive;
use sqlx::Connection as _;
use uuid::Uuid;

use crate::{
    Args, Outcome,
    load::{Log, drive_load},
    mix::{self, Mix},
    processes::{
        App, Database, OwnRedis, RedisSetup, cluster_primary, restart_cluster_node, run, start_app,
        wait_failed_over, wait_healthy,
    },
};

/// The invariants, in the scenario's database.
async fn violations(pool: &sqlx::PgPool) -> anyhow::Result<i64> {
    Ok(engine::invariants::check_all(pool)
        .await?
        .iter()
        .map(|c| c.violations)
        .sum())
}

/// Waits (up to 20 s) for settlements running in PostgreSQL that hold a
/// transaction id and wait on the holder's row locks (`holder`: its
/// backend's pid), and returns their full transaction ids (epoch
/// included).
async fn in_flight_settlements(
    watcher: &mut sqlx::PgConnection,
    holder: i32,
) -> anyhow::Result<Vec<i64>> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        let xids: Vec<i64> = sqlx::query_scalar(
            "SELECT ((txid_snapshot_xmax(txid_current_snapshot()) >> 32) << 32)
                    + backend_xid::text::bigint
             FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND state = 'active' AND $1 = ANY (pg_blocking_pids(pid))
               -- Fresh: far from its lock timeout (seconds), so the restart
               -- that follows is what ends it.
               AND clock_timestamp() - query_start < interval '500 milliseconds'
               AND backend_xid IS NOT NULL AND query ILIKE '%settle_access%'",
        )
        .bind(holder)
        .fetch_all(&mut *watcher)
        .await
        .context("watching for settlements in flight")?;
        if !xids.is_empty() {
            return Ok(xids);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(Vec::new())
}

/// How many of `xids` PostgreSQL reports aborted (asked again until it
/// answers after its restart).
async fn aborted(pool: &sqlx::PgPool, xids: &[i64]) -> anyhow::Result<usize> {
    let mut tries = 0;
    loop {
        let statuses: Result<Vec<Option<String>>, _> =
            sqlx::query_scalar("SELECT txid_status(x) FROM unnest($1::bigint[]) AS x")
                .bind(xids)
                .fetch_all(pool)
                .await;
        match statuses {
            Ok(statuses) => {
                return Ok(statuses
                    .iter()
                    .filter(|s| s.as_deref() == Some("aborted"))
                    .count());
            }
            Err(_) if tries < 40 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(error) => return Err(error).context("asking what became of the transactions"),
        }
    }
}

/// An admin's write through the app (a share's status set to what it is:
/// an UPDATE and its audit row, so only a primary can take it), every
/// 50 ms, alternating instances, until `until`: (sent, answered, ok).
async fn probe_writes(
    bases: Vec<String>,
    admin: reqwest::Client,
    share: Uuid,
    until: Arc<Mutex<Option<Instant>>>,
) -> Vec<(Instant, Instant, bool)> {
    let mut writes = Vec::new();
    for attempt in 0usize.. {
        if until
            .lock()
            .expect("lock")
            .is_some_and(|t| Instant::now() >= t)
        {
            break;
        }
        let base = &bases[attempt % bases.len()];
        let sent = Instant::now();
        let answer = admin
            .post(format!("{base}/api/v1/shares/{share}/status"))
            .json(&serde_json::json!({ "status": "active" }))
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        let ok = answer.is_ok_and(|a| a.status().is_success());
        writes.push((sent, Instant::now(), ok));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    writes
}

struct Scenario<'a> {
    key: &'a str,
    name: &'a str,
    redis: RedisSetup,
    instances: usize,
}

pub(crate) async fn run_fault(args: &Args, key: &str, name: &str) -> anyhow::Result<Outcome> {
    let mut own_redis = None;
    let scenario = match key {
        "cluster-primary" => Scenario {
            key,
            name,
            redis: RedisSetup {
                url: args.cluster_nodes.clone(),
                cluster: true,
                policy: "fail-closed",
            },
            instances: 1,
        },
        _ => {
            let dir = format!("{}/redis-{key}", args.out);
            let _ = std::fs::remove_dir_all(&dir);
            own_redis = Some(OwnRedis::start(args.redis_port, &dir)?);
            Scenario {
                key,
                name,
                redis: RedisSetup {
                    url: format!("redis://127.0.0.1:{}", args.redis_port),
                    cluster: false,
                    policy: if key == "redis-down-db-only" {
                        "db-only"
                    } else {
                        "fail-closed"
                    },
                },
                instances: if matches!(key, "kill-instance" | "postgres-primary") {
                    2
                } else {
                    1
                },
            }
        }
    };
    // A fresh database, migrated, with a tenant and its admin: on the
    // private PostgreSQL, or for the primary's fault on a highly available
    // one of its own (a new formation: its database is fresh).
    let mut ha = None;
    let database = if key == "postgres-primary" {
        let formation = tokio::task::spawn_blocking({
            let repo = std::path::PathBuf::from(&args.repo);
            move || harness::pg_ha::HaPostgres::start(&repo)
        })
        .await??;
        let database = Database {
            url: formation.url(1),
            failover_hosts: formation.failover_hosts(),
        };
        ha = Some(formation);
        database
    } else {
        let db = format!("admitone_faults_{}", key.replace('-', "_"));
        let admin_pool = sqlx::PgPool::connect(&format!("{}/postgres", args.pg_server)).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
            .execute(&admin_pool)
            .await?;
        admin_pool.close().await;
        Database {
            url: format!("{}/{db}", args.pg_server),
            failover_hosts: String::new(),
        }
    };
    let database_url = database.url.clone();
    let migrate = Command::new(&args.server_bin)
        .arg("migrate")
        .env("DATABASE_URL", &database_url)
        .env("APP_DATABASE__FAILOVER_HOSTS", &database.failover_hosts)
        .env("RUST_LOG", "error")
        .output()?;
    anyhow::ensure!(migrate.status.success(), "migrate: {migrate:?}");
    let password_file = format!("{}/admin-password", args.out);
    std::fs::write(&password_file, "faults admin password\n")?;
    let created = Command::new(&args.server_bin)
        .args([
            "admin",
            "create-tenant",
            "--slug",
            "faults",
            "--name",
            "Faults",
        ])
        .args([
            "--admin-email",
            "admin@faults.example",
            "--admin-password-file",
            &password_file,
        ])
        .env("DATABASE_URL", &database_url)
        .env("APP_DATABASE__FAILOVER_HOSTS", &database.failover_hosts)
        .env("RUST_LOG", "error")
        .output()?;
    anyhow::ensure!(created.status.success(), "create-tenant: {created:?}");
    let tenant: Uuid = String::from_utf8_lossy(&created.stdout).trim().parse()?;

    let prefix = format!("faults:{}", Uuid::new_v4());
    let mut apps = Vec::new();
    for i in 0..scenario.instances {
        let port = args.app_port + u16::try_from(i)?;
        apps.push(start_app(args, port, &database, &scenario.redis, &prefix)?);
    }
    for app in &apps {
        wait_healthy(app).await?;
    }
    let bases: Vec<String> = apps.iter().map(App::base).collect();
    // The checks' own pool, following the primary as the instances do.
    let pool = engine::db::pool_with_timeouts(
        database_url.parse().context("the database URL")?,
        &engine::db::DbOptions {
            max_connections: 4,
            failover_hosts: ha
                .as_ref()
                .map_or_else(Vec::new, |ha| vec![("127.0.0.1".to_owned(), ha.port + 2)]),
            ..engine::db::DbOptions::default()
        },
    );
    let admin = drive::admin(&bases[0], "admin@faults.example", "faults admin password").await?;
    let (mix, learners) =
        Mix::build(&bases, &admin, tenant, &pool, args.learners, scenario.name).await?;
    let sessions = learners.len();

    let log = Arc::new(Mutex::new(Log::default()));
    let until = Arc::new(Mutex::new(None::<Instant>));
    // The PostgreSQL restart must meet a settlement mid-transaction, for
    // certain: a transaction of the harness holds the replays' codes, so
    // their binds wait in `settle_access` (which by then holds a
    // transaction id: its resource row is locked first); a watcher sees
    // one waiting, and the restart follows at once. Both on connections of
    // their own (the pool's are the checks').
    let mut watcher = if scenario.key == "postgres-restart" {
        let mut holder = sqlx::PgConnection::connect(&database_url)
            .await
            .context("the codes' holder")?;
        sqlx::query("BEGIN").execute(&mut holder).await?;
        let holder_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut holder)
            .await?;
        sqlx::query("SELECT id FROM auth_codes WHERE share_id = $1 FOR UPDATE")
            .bind(mix.replays_share())
            .fetch_all(&mut holder)
            .await
            .context("holding the replays' codes")?;
        let watcher = sqlx::PgConnection::connect(&database_url)
            .await
            .context("the in-flight watcher")?;
        Some((holder, holder_pid, watcher))
    } else {
        None
    };
    let load = tokio::spawn(drive_load(
        Arc::new(bases.clone()),
        learners,
        log.clone(),
        until.clone(),
    ));

    // Let the load run until about a third of the learners are in, so the
    // fault meets first accesses in flight (returning ones too). The
    // PostgreSQL restart waits for a settlement caught mid-transaction
    // instead (see below).
    // The primary's kill lands a few tens of milliseconds after it is
    // asked for (a script of its own), so it goes in as soon as the first
    // learner is: most are still on their way in, and cross the failover.
    let started = Instant::now();
    let in_before = if scenario.key == "postgres-primary" {
        1
    } else {
        mix.expected_in / 3
    };
    while watcher.is_none()
        && Mix::learners_in(&log.lock().expect("lock")) < in_before
        && started.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut cut_transactions = None;
    let pending = |log: &Mutex<Log>| {
        mix.expected_in
            .saturating_sub(Mix::learners_in(&log.lock().expect("lock")))
    };
    let mut pending_at_fault = pending(&log);
    let fault = Duration::from_millis(args.fault_ms);
    let mut killed_node: Option<(u16, String)> = None;
    let mut killed_at: Option<Instant> = None;
    // The primary's fault measures its write outage with writes of its
    // own through the app, every 50 ms, until the load stops.
    let probe = (scenario.key == "postgres-primary").then(|| {
        tokio::spawn(probe_writes(
            bases.clone(),
            admin.clone(),
            mix.replays_share(),
            until.clone(),
        ))
    });
    match scenario.key {
        "cluster-primary" => {
            let port = cluster_primary(args)?;
            let pid = std::fs::read_to_string(format!("{}/{port}/redis.pid", args.cluster_dir))?;
            run("kill", &["-9", pid.trim()])?;
            killed_node = Some((port, pid));
            // The fault lasts until the cluster has marked the primary
            // failed and its replica has taken over.
            wait_failed_over(args, port).await?;
        }
        "redis-down-fail-closed" | "redis-down-db-only" => {
            let redis = own_redis.as_mut().context("own redis")?;
            redis.stop();
            tokio::time::sleep(fault).await;
            *redis = OwnRedis::start(args.redis_port, &format!("{}/redis-{key}", args.out))?;
        }
        "postgres-restart" => {
            // Settlements caught waiting (they cannot commit before the
            // holder does, and the restart ends the holder too); then
            // PostgreSQL says what became of them: aborted is a
            // transaction the restart cut.
            let (_holder, holder_pid, watcher) = watcher.as_mut().context("the watcher")?;
            let caught = in_flight_settlements(watcher, *holder_pid).await?;
            // Still running as the restart begins (the holder never lets
            // go), so "aborted" afterwards is the restart's doing.
            let in_flight: Vec<i64> = sqlx::query_scalar(
                "SELECT x FROM unnest($1::bigint[]) AS x WHERE txid_status(x) = 'in progress'",
            )
            .bind(&caught)
            .fetch_all(&mut *watcher)
            .await?;
            if in_flight.is_empty() {
                eprintln!("    no settlement was caught waiting on the held codes in 20 s");
            }
            pending_at_fault = pending(&log);
            let started_before: time::OffsetDateTime =
                sqlx::query_scalar("SELECT pg_postmaster_start_time()")
                    .fetch_one(&mut *watcher)
                    .await?;
            let status = Command::new("sh").args(["-c", &args.pg_restart]).status()?;
            anyhow::ensure!(status.success(), "restarting PostgreSQL failed");
            cut_transactions = Some(aborted(&pool, &in_flight).await?);
            let started_after: time::OffsetDateTime =
                sqlx::query_scalar("SELECT pg_postmaster_start_time()")
                    .fetch_one(&pool)
                    .await?;
            anyhow::ensure!(started_after > started_before, "PostgreSQL did not restart");
        }
        "postgres-primary" => {
            // What a machine failure kills: the primary's pg_autoctl and
            // its PostgreSQL, at once. The fault lasts until the monitor
            // has promoted the standby.
            let ha = ha.as_ref().context("the formation")?;
            killed_at = Some(Instant::now());
            tokio::task::block_in_place(|| ha.kill(1))?;
            tokio::task::block_in_place(|| ha.wait("primary wait_primary", 60))?;
        }
        "kill-instance" => {
            let victim = &mut apps[0].child;
            run("kill", &["-9", &victim.id().to_string()])?;
            let _ = victim.wait();
        }
        "redis-paused" => {
            let redis = own_redis.as_ref().context("own redis")?;
            redis.signal("-STOP")?;
            tokio::time::sleep(fault.max(Duration::from_millis(1_500))).await;
            redis.signal("-CONT")?;
        }
        other => anyhow::bail!("unknown fault {other}"),
    }
    let fault_ended = Instant::now();
    // Drive until every session is in or refused for good (at least 2 s
    // after the fault), or 60 s.
    let deadline = fault_ended + Duration::from_secs(60);
    loop {
        let settled = log.lock().expect("lock").settled();
        let now = Instant::now();
        if (settled >= sessions && now >= fault_ended + Duration::from_secs(2)) || now >= deadline {
            *until.lock().expect("lock") = Some(now);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    load.await.context("the load")?;
    let log = Arc::try_unwrap(log)
        .map_err(|_| anyhow::anyhow!("load still running"))?
        .into_inner()
        .map_err(|_| anyhow::anyhow!("poisoned"))?;

    let mut outcome = Outcome {
        key: key.to_owned(),
        fault: name.to_owned(),
        requests: log.requests.len(),
        learners: mix.expected_in,
        learners_in: Mix::learners_in(&log),
        pending_at_fault,
        sessions,
        sessions_settled: log.settled(),
        cut_transactions,
        ..Outcome::default()
    };
    for (_, kind) in &log.requests {
        if kind == "ok" {
            outcome.successes += 1;
        } else {
            *outcome.errors.entry(kind.clone()).or_default() += 1;
            // Only what the API documents: "try again" answers, each
            // group's own final refusal, and a killed instance's dropped
            // connections (`load.rs` names anything else undocumented).
            let documented = kind == "503 + Retry-After"
                || kind == "409 busy_retry"
                || kind == "409 idempotency_key_in_flight"
                || kind.ends_with("(final)")
                // The killed instance is the first.
                || (kind == "connection lost to instance 1" && key == "kill-instance");
            if !documented {
                outcome.undocumented += 1;
            }
        }
    }
    outcome.recovery_ms = log
        .requests
        .iter()
        .filter(|(at, kind)| *at >= fault_ended && kind == "ok")
        .map(|(at, _)| at.duration_since(fault_ended).as_millis())
        .min();
    outcome.all_in_ms = log
        .inside
        .iter()
        .map(|(_, _, at)| at.saturating_duration_since(fault_ended).as_millis())
        .max()
        .unwrap_or_default();
    if let Some(probe) = probe {
        // The write outage as clients saw it: the longest wait between two
        // successful writes (answered) from the kill on, counting from the
        // last success before the kill. A write in flight at the kill
        // counts, however long it took to fail.
        let writes = probe.await.context("the write probe")?;
        let killed_at = killed_at.context("the kill's time")?;
        let mut answered: Vec<Instant> = writes
            .iter()
            .filter(|(_, _, ok)| *ok)
            .map(|(_, answered, _)| *answered)
            .collect();
        answered.sort();
        let from = answered
            .iter()
            .rev()
            .find(|at| **at <= killed_at)
            .copied()
            .unwrap_or(killed_at);
        outcome.outage_ms = answered
            .iter()
            .filter(|at| **at > from)
            .scan(from, |previous, at| {
                let gap = at.duration_since(*previous);
                *previous = *at;
                Some(gap)
            })
            .max()
            .map(|gap| gap.as_millis())
            .filter(|_| writes.iter().any(|(sent, _, ok)| *sent >= killed_at && !ok));
    }
    outcome.violations = violations(&pool).await?;
    outcome.lost_successes = mix::lost(&pool, &log.grants).await?;
    outcome.mix_mismatches = mix.mismatches(&pool).await?;
    pool.close().await;
    drop(apps);
    if let Some((port, _)) = killed_node {
        // Bring the killed node back (it rejoins as a replica).
        restart_cluster_node(args, port)?;
    }
    if let Some(ha) = ha {
        // The old primary's machine comes back: it must rejoin as the
        // new primary's standby.
        let rejoined = tokio::task::spawn_blocking(move || {
            ha.restart(1)?;
            ha.wait("secondary primary", 120)
        })
        .await?;
        if let Err(error) = &rejoined {
            eprintln!("    the old primary did not rejoin: {error:#}");
        }
        outcome.rejoined_as_standby = Some(rejoined.is_ok());
    }
    Ok(outcome)
}
