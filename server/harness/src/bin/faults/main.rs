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

use std::collections::BTreeMap;

use anyhow::Context as _;
use clap::Parser;

mod load;
mod processes;
mod scenarios;

use scenarios::run_fault;

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
