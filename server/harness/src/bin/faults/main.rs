//! `faults`: the fault-injection suite behind `make faults` (see
//! `scripts/faults.sh`, which provides a private PostgreSQL it may restart,
//! a Redis Cluster, and the (debug) `server` binary).
//!
//! For each fault it starts its own app instances (the real `server`
//! binary, on loopback ports) against a fresh database, signs learners in,
//! and drives a contended mix (`mix.rs`): many learners racing for a few
//! shared codes, a share at its quota's edge, one learner entering several
//! codes from several sessions, openings replayed under one request id. It
//! injects the fault mid-load, ends it, and keeps driving until every
//! learner is in or refused for good, or the time is up. Then it checks
//! what matters:
//!
//! - the reconciler's SQL invariants find nothing;
//! - exactly who must get in got in (each shared code's one winner, the
//!   quota, the one learner, every replaying learner), and some were still
//!   on their way in when the fault began;
//! - every opening answered 200 names a code its learner holds, with an
//!   access record (no success that did not commit), and the mix's own
//!   checks hold (codes bound per part, the quota used, replays counted
//!   once);
//! - clients saw only documented errors: 503 with `Retry-After`, the 409s
//!   documented as retryable (`busy_retry`, `idempotency_key_in_flight`),
//!   each group's own final refusal, and, for a killed instance, a dropped
//!   connection;
//! - the PostgreSQL restart cut a settlement mid-transaction (PostgreSQL
//!   reports one it was running aborted);
//! - how long after the fault ended the first success came.
//!
//! It prints one table and writes `target/faults/latest.{json,md}`.
//!
//! Test tooling, never deployed. Its SQL is harness-only: dropping the
//! scenario's database before each fault (the `server migrate` it then runs
//! creates it), the learners' bulk insert (`harness::drive::learners`), the
//! mix's checks, and watching `pg_stat_activity` for a settlement in
//! flight, asked independently of the server's own queries. The invariants
//! are the engine's (`engine::invariants::check_all`).

use std::collections::BTreeMap;

use anyhow::Context as _;
use clap::Parser;

mod load;
mod mix;
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
    /// The repository's root (its `scripts/pg-ha.sh` starts the highly
    /// available PostgreSQL of the primary's fault).
    #[arg(long, default_value = ".")]
    repo: String,
}

/// The faults, in order.
const FAULTS: [(&str, &str); 7] = [
    ("cluster-primary", "Redis Cluster primary killed (failover)"),
    (
        "redis-down-fail-closed",
        "standalone Redis stopped (fail-closed)",
    ),
    ("redis-down-db-only", "standalone Redis stopped (db-only)"),
    ("postgres-restart", "PostgreSQL restarted mid-transaction"),
    (
        "postgres-primary",
        "PostgreSQL primary's machine killed (pg_auto_failover failover)",
    ),
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
    /// Learners (accounts) in, of those who must end up in: the winners of
    /// the shared codes, the quota, the one with several codes, every
    /// replaying learner.
    learners_in: usize,
    learners: usize,
    /// Learners not yet in when the fault began (must be > 0: the fault
    /// has to meet first accesses, not only returning ones).
    pending_at_fault: usize,
    /// Sessions driven, and those in or refused for good by the end.
    sessions: usize,
    sessions_settled: usize,
    violations: i64,
    /// Openings answered 200 whose learner does not hold the code named,
    /// with its access record.
    lost_successes: usize,
    /// What the mix's own checks found (`mix.rs`): codes bound per part,
    /// the quota used, the several codes' holder, replays counted once.
    mix_mismatches: Vec<String>,
    /// PostgreSQL restart only: settlements caught writing just before it
    /// that PostgreSQL then reports aborted (must be > 0: the restart met
    /// a transaction in flight).
    cut_transactions: Option<usize>,
    recovery_ms: Option<u128>,
    /// From the end of the fault until the last learner was in.
    all_in_ms: u128,
    /// PostgreSQL primary only: from the first opening that failed after
    /// the kill to the first that succeeded after it (the write outage).
    outage_ms: Option<u128>,
    /// PostgreSQL primary only: the killed node started again and came
    /// back as the standby of the new primary.
    rejoined_as_standby: Option<bool>,
}

impl Outcome {
    fn passed(&self) -> bool {
        self.violations == 0
            && self.lost_successes == 0
            && self.mix_mismatches.is_empty()
            && self.undocumented == 0
            && self.recovery_ms.is_some()
            && self.learners_in == self.learners
            && self.sessions_settled == self.sessions
            && self.pending_at_fault > 0
            && (self.key != "postgres-restart" || self.cut_transactions.is_some_and(|n| n > 0))
            && (self.key != "postgres-primary"
                || (self.outage_ms.is_some() && self.rejoined_as_standby == Some(true)))
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
        "| fault | requests | successes | client-visible errors | learners in (not yet in at the fault) | invariant violations | successes lost | mix checks | first success after the fault | everyone in after the fault |".to_owned(),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |".to_owned(),
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
        let mut fault = o.fault.clone();
        if let Some(cut) = o.cut_transactions {
            fault = format!("{fault} ({cut} settlement transactions cut)");
        }
        if let Some(outage) = o.outage_ms {
            fault = format!(
                "{fault} (write outage {:.1} s; old primary rejoined as standby: {})",
                outage as f64 / 1000.0,
                if o.rejoined_as_standby == Some(true) {
                    "yes"
                } else {
                    "no"
                }
            );
        }
        let checks = if o.mix_mismatches.is_empty() {
            "all hold".to_owned()
        } else {
            o.mix_mismatches.join("; ")
        };
        md.push(format!(
            "| {} | {} | {} | {} | {}/{} ({}) | {} | {} | {} | {} | {:.1} s |",
            fault,
            o.requests,
            o.successes,
            errors,
            o.learners_in,
            o.learners,
            o.pending_at_fault,
            o.violations,
            o.lost_successes,
            checks,
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
