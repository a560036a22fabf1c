//! `faults`: the fault-injection suite behind `make faults` (see
//! `scripts/faults.sh`, which provides a private PostgreSQL it may restart,
//! a Redis Cluster, and the (debug) `server` binary).
//!
//! For each fault it starts its own app instances (the real `server`
//! binary, on loopback ports) against a fresh database, signs learners in,
//! drives real concurrent first and returning accesses, injects the fault
//! mid-load, ends it, and keeps driving until every learner is in or the
//! time is up. Then it checks what matters:
//!
//! - the reconciler's SQL invariants find nothing;
//! - every learner got in, and some were still on their way in when the
//!   fault began;
//! - every learner who was answered 200 holds a binding and an access
//!   record (no success that did not commit);
//! - clients saw only documented errors (503 with `Retry-After`, 409
//!   `busy_retry`, and, for a killed instance, a dropped connection);
//! - how long after the fault ended the first success came.
//!
//! It prints one table and writes `target/faults/latest.{json,md}`.
//!
//! Test tooling, never deployed. Its SQL is harness-only: dropping the
//! scenario's database before each fault (the `server migrate` it then runs
//! creates it), the learners' bulk insert (`harness::drive::learners`), and
//! the final check that every learner answered 200 holds a binding and an
//! access record, asked independently of the server's own queries. The
//! invariants are the engine's (`engine::invariants::check_all`).

use std::{
    collections::BTreeMap,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Parser;
use harness::drive;
use serde_json::json;
use uuid::Uuid;

#[derive(Parser)]
struct Args {
    /// The `server` binary to start.
    #[arg(long)]
    server_bin: String,
    /// The private PostgreSQL server (no database part), which
    /// `--pg-restart` restarts.
    #[arg(long)]
    pg_server: String,
    /// A shell command that restarts that PostgreSQL (fast shutdown).
    #[arg(long)]
    pg_restart: String,
    /// Port for a standalone Redis this harness starts and stops itself.
    #[arg(long, default_value_t = 17100)]
    redis_port: u16,
    /// The Redis Cluster's nodes (`redis://host:port,…`).
    #[arg(long)]
    cluster_nodes: String,
    /// Where the cluster keeps each node's pid file (`<dir>/<port>/redis.pid`).
    #[arg(long)]
    cluster_dir: String,
    /// First port for app instances.
    #[arg(long, default_value_t = 17200)]
    app_port: u16,
    /// Learners per fault.
    #[arg(long, default_value_t = 300)]
    learners: usize,
    /// How long each fault lasts, in milliseconds.
    #[arg(long, default_value_t = 3_000)]
    fault_ms: u64,
    /// Where to write latest.json and latest.md.
    #[arg(long)]
    out: String,
    /// Run only these faults (by key); all when empty.
    #[arg(long)]
    only: Vec<String>,
}

/// The faults, in order.
const FAULTS: [(&str, &str); 6] = [
    ("cluster-primary", "Redis Cluster primary killed (failover)"),
    (
        "redis-down-fail-closed",
        "standalone Redis stopped (fail-closed)",
    ),
    ("redis-down-db-only", "standalone Redis stopped (db-only)"),
    ("postgres-restart", "PostgreSQL restarted mid-transaction"),
    ("kill-instance", "kill -9 of one of two app instances"),
    (
        "redis-paused",
        "Redis paused (SIGSTOP) past the reservation TTL",
    ),
];

/// What one fault's run found.
#[derive(Debug, Default, serde::Serialize)]
struct Outcome {
    key: String,
    fault: String,
    requests: usize,
    successes: usize,
    errors: BTreeMap<String, usize>,
    undocumented: usize,
    learners_in: usize,
    learners: usize,
    /// Learners not yet in when the fault began (must be > 0: the fault
    /// has to meet first accesses, not only returning ones).
    pending_at_fault: usize,
    violations: i64,
    lost_successes: usize,
    recovery_ms: Option<u128>,
    /// From the end of the fault until the last learner was in.
    all_in_ms: u128,
}

impl Outcome {
    fn passed(&self) -> bool {
        self.violations == 0
            && self.lost_successes == 0
            && self.undocumented == 0
            && self.recovery_ms.is_some()
            && self.learners_in == self.learners
            && self.pending_at_fault > 0
    }
}

/// A Redis server this harness owns.
struct OwnRedis {
    port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    /// Starts (or restarts) the server on `port`, with an append-only file
    /// in `dir` synced on every write: like a production Redis that keeps
    /// sessions across a restart.
    fn start(port: u16, dir: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).context("creating the Redis directory")?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .args(["--dir", dir])
            .stdout(Stdio::null())
            .spawn()
            .context("starting redis-server")?;
        let redis = Self {
            port,
            child: Some(child),
        };
        redis.wait_ready()?;
        Ok(redis)
    }

    fn wait_ready(&self) -> anyhow::Result<()> {
        for _ in 0..100 {
            let pong = Command::new("redis-cli")
                .args(["-p", &self.port.to_string(), "ping"])
                .output();
            if pong.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "PONG") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        anyhow::bail!("redis on {} did not start", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self.child.as_ref().context("redis not running")?.id();
        run("kill", &[signal, &pid.to_string()])
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("running {program}"))?;
    anyhow::ensure!(status.success(), "{program} {args:?} failed");
    Ok(())
}

/// One app instance (the real binary).
struct App {
    port: u16,
    child: Child,
}

impl App {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How an instance reaches Redis.
#[derive(Clone)]
struct RedisSetup {
    url: String,
    cluster: bool,
    policy: &'static str,
}

fn start_app(
    args: &Args,
    port: u16,
    database_url: &str,
    redis: &RedisSetup,
    prefix: &str,
) -> anyhow::Result<App> {
    let storage = format!("{}/storage", args.out);
    let child = Command::new(&args.server_bin)
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("APP_REDIS__URL", &redis.url)
        .env("APP_REDIS__CLUSTER", redis.cluster.to_string())
        .env("APP_REDIS__FAILURE_POLICY", redis.policy)
        .env("APP_REDIS__KEY_PREFIX", prefix)
        .env("APP_REDIS__RESPONSE_TIMEOUT_MS", "500")
        .env("APP_SERVER__PORT", port.to_string())
        .env("APP_SERVER__SHUTDOWN_GRACE_SECS", "1")
        .env("APP_STORAGE__ROOT", storage)
        .env("APP_DATABASE__MAX_CONNECTIONS", "20")
        .env("APP_DATABASE__ACQUIRE_TIMEOUT_MS", "2000")
        .env("APP_SETTLEMENT__RESERVATION_TTL_MS", "1000")
        .env("APP_SETTLEMENT__TRANSACTION_TIMEOUT_MS", "3000")
        .env("APP_SETTLEMENT__RECONCILE_INTERVAL_SECS", "0")
        .env("APP_WEBHOOKS__RELAY", "false")
        .env("APP_THROTTLE__SIGN_IN_PER_EMAIL", "1000000")
        .env("APP_THROTTLE__SIGN_IN_PER_IP", "1000000")
        .env("APP_THROTTLE__CODE_PER_ACCOUNT", "1000000")
        .env("APP_THROTTLE__CODE_PER_IP", "1000000")
        .env("APP_THROTTLE__CODE_PER_SHARE", "1000000")
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .spawn()
        .context("starting the server")?;
    Ok(App { port, child })
}

async fn wait_healthy(app: &App) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if let Ok(r) = client.get(format!("{}/healthz", app.base())).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("instance on {} did not come up", app.port)
}

/// One request's outcome as a client sees it.
fn classify(result: &Result<reqwest::Response, reqwest::Error>) -> String {
    match result {
        Ok(r) if r.status().is_success() => "ok".to_owned(),
        Ok(r) => {
            let retry_after = r.headers().contains_key(reqwest::header::RETRY_AFTER);
            match (r.status().as_u16(), retry_after) {
                (503, true) => "503 + Retry-After".to_owned(),
                (409, true) => "409 busy_retry".to_owned(),
                (status, _) => format!("undocumented {status}"),
            }
        }
        Err(_) => "connection lost".to_owned(),
    }
}

/// What the load recorded.
#[derive(Default)]
struct Log {
    /// (when, outcome) of every request.
    requests: Vec<(Instant, String)>,
    /// Learners answered 200 on their resource, and when.
    granted: Vec<Uuid>,
    granted_at: Vec<Instant>,
}

/// Every learner enters its code and opens the resource, retrying (with
/// its own idempotency key) until it is in; learners who are in keep
/// coming back. Runs until `stop` or until everyone is in past `settle`.
async fn drive_load(
    bases: Arc<Vec<String>>,
    share: Arc<drive::Share>,
    learners: Vec<(Uuid, reqwest::Client, String)>,
    log: Arc<Mutex<Log>>,
    until: Arc<Mutex<Option<Instant>>>,
) {
    let tasks = learners
        .into_iter()
        .enumerate()
        .map(|(i, (id, client, code))| {
            let (bases, share, log, until) =
                (bases.clone(), share.clone(), log.clone(), until.clone());
            tokio::spawn(async move {
                let key = format!("faults-{id}");
                let mut entered = false;
                let mut inside = false;
                let mut attempt = i;
                loop {
                    if until
                        .lock()
                        .expect("lock")
                        .is_some_and(|t| Instant::now() >= t)
                    {
                        return;
                    }
                    // Alternate instances: a dead one is left for the other.
                    let base = &bases[attempt % bases.len()];
                    attempt += 1;
                    let result = if entered {
                        client
                            .get(share.content_url(base))
                            .header("idempotency-key", &key)
                            .send()
                            .await
                    } else {
                        client
                            .post(format!("{base}/api/v1/s/{}/code", share.slug))
                            .json(&json!({ "code": code }))
                            .send()
                            .await
                    };
                    let mut outcome = classify(&result);
                    let ok = outcome == "ok";
                    let retry_after = result.as_ref().ok().and_then(|r| {
                        r.headers()
                            .get(reqwest::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                    });
                    if let Ok(response) = result
                        && outcome.starts_with("undocumented")
                    {
                        // Name the error code: what a client would see.
                        let body: serde_json::Value = response.json().await.unwrap_or_default();
                        if let Some(code) = body["error"].as_str() {
                            outcome = format!("{outcome} {code}");
                        }
                    }
                    {
                        let mut log = log.lock().expect("lock");
                        log.requests.push((Instant::now(), outcome));
                        if ok && entered && !inside {
                            log.granted.push(id);
                            log.granted_at.push(Instant::now());
                        }
                    }
                    if ok && !entered {
                        entered = true;
                    } else if ok {
                        inside = true;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    } else {
                        let wait = retry_after.map_or(100, |s| (s * 1000).min(500));
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    }
                }
            })
        });
    futures::future::join_all(tasks).await;
}

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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out).context("creating the output directory")?;
    let mut outcomes = Vec::new();
    for (key, name) in FAULTS {
        if !args.only.is_empty() && !args.only.iter().any(|o| o == key) {
            continue;
        }
        eprintln!("==> {name}");
        let outcome = run_fault(&args, key, name)
            .await
            .with_context(|| format!("fault {key}"))?;
        eprintln!("    {}", serde_json::to_string(&outcome)?);
        outcomes.push(outcome);
    }
    let mut md = vec![
        "| fault | requests | successes | client-visible errors | learners in (not yet in at the fault) | invariant violations | successes lost | first success after the fault | everyone in after the fault |".to_owned(),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    for o in &outcomes {
        let errors = if o.errors.is_empty() {
            "none".to_owned()
        } else {
            o.errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        md.push(format!(
            "| {} | {} | {} | {} | {}/{} ({}) | {} | {} | {} | {:.1} s |",
            o.fault,
            o.requests,
            o.successes,
            errors,
            o.learners_in,
            o.learners,
            o.pending_at_fault,
            o.violations,
            o.lost_successes,
            o.recovery_ms.map_or_else(
                || "never".to_owned(),
                |ms| format!("{:.1} s", ms as f64 / 1000.0)
            ),
            o.all_in_ms as f64 / 1000.0,
        ));
    }
    let table = md.join("\n");
    println!("{table}");
    std::fs::write(format!("{}/latest.md", args.out), format!("{table}\n"))?;
    std::fs::write(
        format!("{}/latest.json", args.out),
        serde_json::to_string_pretty(&outcomes)?,
    )?;
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| !o.passed())
        .map(|o| o.key.as_str())
        .collect();
    anyhow::ensure!(failed.is_empty(), "faults that broke a promise: {failed:?}");
    Ok(())
}

async fn run_fault(args: &Args, key: &str, name: &str) -> anyhow::Result<Outcome> {
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

/// The port of a primary of the cluster, from `CLUSTER NODES`.
fn cluster_primary(args: &Args) -> anyhow::Result<u16> {
    let first = args
        .cluster_nodes
        .split(',')
        .next()
        .context("cluster nodes")?
        .rsplit(':')
        .next()
        .context("port")?
        .to_owned();
    let out = Command::new("redis-cli")
        .args(["-p", &first, "cluster", "nodes"])
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains("master") && !l.contains("fail"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|addr| addr.split(['@', ':']).nth(1)?.parse::<u16>().ok())
        .min()
        .context("no primary found")
}

/// Waits until a live node sees `killed` as failed and every slot served
/// again (a replica took over).
async fn wait_failed_over(args: &Args, killed: u16) -> anyhow::Result<()> {
    let ports: Vec<String> = args
        .cluster_nodes
        .split(',')
        .filter_map(|u| u.rsplit(':').next().map(str::to_owned))
        .filter(|p| *p != killed.to_string())
        .collect();
    let killed = format!("127.0.0.1:{killed}@");
    for _ in 0..300 {
        for port in &ports {
            let cli = |what: &[&str]| {
                Command::new("redis-cli")
                    .args(["-p", port])
                    .args(what)
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default()
            };
            let nodes = cli(&["cluster", "nodes"]);
            let marked = nodes
                .lines()
                .any(|l| l.contains(&killed) && l.contains(",fail") && !l.contains("fail?"));
            let info = cli(&["cluster", "info"]);
            if marked && info.contains("cluster_state:ok") && info.contains("cluster_slots_fail:0")
            {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the cluster did not fail over")
}

fn restart_cluster_node(args: &Args, port: u16) -> anyhow::Result<()> {
    let dir = format!("{}/{port}", args.cluster_dir);
    run(
        "redis-server",
        &[
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            &format!("{dir}/nodes.conf"),
            "--cluster-node-timeout",
            "1000",
            "--dir",
            &dir,
            "--save",
            "",
            "--appendonly",
            "no",
            "--pidfile",
            &format!("{dir}/redis.pid"),
            "--logfile",
            &format!("{dir}/redis.log"),
        ],
    )
}
