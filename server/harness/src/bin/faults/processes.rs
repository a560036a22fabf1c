//! The processes a fault runs against and injects into: the standalone
//! Redis this harness owns, the app instances (the real `server` binary),
//! and the Redis Cluster's nodes (finding a primary, waiting for its
//! failover, restarting it). Split out of `main.rs` to keep each file short.

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use anyhow::Context as _;

use crate::Args;

/// A Redis server this harness owns.
pub(crate) struct OwnRedis {
    port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    /// Starts (or restarts) the server on `port`, with an append-only file
    /// in `dir` synced on every write: like a production Redis that keeps
    /// sessions across a restart.
    pub(crate) fn start(port: u16, dir: &str) -> anyhow::Result<Self> {
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

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self.child.as_ref().context("redis not running")?.id();
        run("kill", &[signal, &pid.to_string()])
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("running {program}"))?;
    anyhow::ensure!(status.success(), "{program} {args:?} failed");
    Ok(())
}

/// One app instance (the real binary).
pub(crate) struct App {
    port: u16,
    pub(crate) child: Child,
}

impl App {
    pub(crate) fn base(&self) -> String {
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
/// The scenario's database: its URL and, on the highly available
/// PostgreSQL, the other node (`database.failover_hosts`).
pub(crate) struct Database {
    pub(crate) url: String,
    pub(crate) failover_hosts: String,
}

#[derive(Clone)]
pub(crate) struct RedisSetup {
    pub(crate) url: String,
    pub(crate) cluster: bool,
    pub(crate) policy: &'static str,
}

pub(crate) fn start_app(
    args: &Args,
    port: u16,
    database: &Database,
    redis: &RedisSetup,
    prefix: &str,
) -> anyhow::Result<App> {
    let storage = format!("{}/storage", args.out);
    let child = Command::new(&args.server_bin)
        .arg("serve")
        .env("DATABASE_URL", &database.url)
        .env("APP_DATABASE__FAILOVER_HOSTS", &database.failover_hosts)
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
        // FAULTS_SERVER_LOG (e.g. `warn`) to see what an instance did, in
        // the harness's output.
        .env(
            "RUST_LOG",
            std::env::var("FAULTS_SERVER_LOG").unwrap_or_else(|_| "error".to_owned()),
        )
        .stdout(if std::env::var_os("FAULTS_SERVER_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .spawn()
        .context("starting the server")?;
    Ok(App { port, child })
}

pub(crate) async fn wait_healthy(app: &App) -> anyhow::Result<()> {
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

/// The port of a primary of the cluster, from `CLUSTER NODES`.
pub(crate) fn cluster_primary(args: &Args) -> anyhow::Result<u16> {
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
pub(crate) async fn wait_failed_over(args: &Args, killed: u16) -> anyhow::Result<()> {
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

pub(crate) fn restart_cluster_node(args: &Args, port: u16) -> anyhow::Result<()> {
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
