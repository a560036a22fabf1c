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
use uuid::Uuid;

use crate::{
    Args, Outcome,
    load::{Log, drive_load},
    processes::{
        App, OwnRedis, RedisSetup, cluster_primary, restart_cluster_node, run, start_app,
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

/// Learners answered 200 without a binding and an access record.
async fn lost(pool: &sqlx::PgPool, share: Uuid, granted: &[Uuid]) -> anyhow::Result<usize> {
    let held: Vec<Uuid> = sqlx::query_scalar(
        "SELECT c.bound_principal FROM auth_codes c
         WHERE c.share_id = $1 AND c.bound_principal = ANY($2)
           AND EXISTS (SELECT 1 FROM access_records a
                       WHERE a.code_id = c.id AND a.principal_id = c.bound_principal)",
    )
    .bind(share)
    .bind(granted)
    .fetch_all(pool)
    .await
    .context("checking granted learners")?;
    Ok(granted.iter().filter(|g| !held.contains(g)).count())
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
                instances: if key == "kill-instance" { 2 } else { 1 },
            }
        }
    };
    // A fresh database, migrated, with a tenant and its admin.
    let db = format!("admitone_faults_{}", key.replace('-', "_"));
    let admin_pool = sqlx::PgPool::connect(&format!("{}/postgres", args.pg_server)).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .execute(&admin_pool)
        .await?;
    admin_pool.close().await;
    let database_url = format!("{}/{db}", args.pg_server);
    let migrate = Command::new(&args.server_bin)
        .arg("migrate")
        .env("DATABASE_URL", &database_url)
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
        .env("RUST_LOG", "error")
        .output()?;
    anyhow::ensure!(created.status.success(), "create-tenant: {created:?}");
    let tenant: Uuid = String::from_utf8_lossy(&created.stdout).trim().parse()?;

    let prefix = format!("faults:{}", Uuid::new_v4());
    let mut apps = Vec::new();
    for i in 0..scenario.instances {
        let port = args.app_port + u16::try_from(i)?;
        apps.push(start_app(
            args,
            port,
            &database_url,
            &scenario.redis,
            &prefix,
        )?);
    }
    for app in &apps {
        wait_healthy(app).await?;
    }
    let bases: Vec<String> = apps.iter().map(App::base).collect();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&database_url)
        .await?;
    let admin = drive::admin(&bases[0], "admin@faults.example", "faults admin password").await?;
    let share = drive::new_share(&admin, &bases[0], tenant, scenario.name).await?;
    let codes = drive::issue(&admin, &bases[0], share.id, args.learners).await?;
    let learners: Vec<(Uuid, reqwest::Client, String)> =
        drive::learners(&bases, &pool, args.learners)
            .await?
            .into_iter()
            .zip(codes)
            .map(|((id, client), code)| (id, client, code))
            .collect();

    let log = Arc::new(Mutex::new(Log::default()));
    let until = Arc::new(Mutex::new(None::<Instant>));
    // The share id for the final checks (the load owns the Share).
    let share_id = share.id;
    let load = tokio::spawn(drive_load(
        Arc::new(bases.clone()),
        Arc::new(share),
        learners,
        log.clone(),
        until.clone(),
    ));

    // Let the load run until about a third of the learners are in, so the
    // fault meets first accesses in flight (returning ones too).
    let started = Instant::now();
    while log.lock().expect("lock").granted.len() < args.learners / 3
        && started.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pending_at_fault = args.learners - log.lock().expect("lock").granted.len();
    let fault = Duration::from_millis(args.fault_ms);
    let mut killed_node: Option<(u16, String)> = None;
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
            let status = Command::new("sh").args(["-c", &args.pg_restart]).status()?;
            anyhow::ensure!(status.success(), "restarting PostgreSQL failed");
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
    // Drive until everyone is in (at least 2 s after the fault), or 60 s.
    let deadline = fault_ended + Duration::from_secs(60);
    loop {
        let (inside, _) = {
            let log = log.lock().expect("lock");
            (log.granted.len(), log.requests.len())
        };
        let now = Instant::now();
        if (inside >= args.learners && now >= fault_ended + Duration::from_secs(2))
            || now >= deadline
        {
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
        learners: args.learners,
        learners_in: log.granted.len(),
        pending_at_fault,
        ..Outcome::default()
    };
    for (_, kind) in &log.requests {
        if kind == "ok" {
            outcome.successes += 1;
        } else {
            *outcome.errors.entry(kind.clone()).or_default() += 1;
            let documented = kind.starts_with("503 + Retry-After")
                || kind.starts_with("409 busy_retry")
                || (kind == "connection lost" && key == "kill-instance");
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
        .granted_at
        .iter()
        .map(|at| at.saturating_duration_since(fault_ended).as_millis())
        .max()
        .unwrap_or_default();
    outcome.violations = violations(&pool).await?;
    outcome.lost_successes = lost(&pool, share_id, &log.granted).await?;
    pool.close().await;
    drop(apps);
    if let Some((port, _)) = killed_node {
        // Bring the killed node back (it rejoins as a replica).
        restart_cluster_node(args, port)?;
    }
    Ok(outcome)
}
