//! Building the engine's test binaries and running them against a mutant:
//! stop at the first failing test, and give up on a mutant that hangs.

use std::{
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// The engine's test binaries the mutants run against.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// The engine's unit tests (each Lua script driven against Redis).
    pub unit: PathBuf,
    /// The settlement suite (`server/engine/tests/settlement`).
    pub settlement: PathBuf,
    /// How long each took on the unmutated code: a mutant's run gets
    /// several times that before it counts as a hang.
    pub unit_time: Duration,
    pub settlement_time: Duration,
}

/// What one run of a test binary said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every test passed.
    Passed,
    /// This test failed (the first one to).
    Failed(String),
    /// It ran past its time.
    TimedOut,
    /// It ended unsuccessfully without naming a failed test.
    Crashed(String),
}

/// `cargo test -p engine --no-run` (and `extra`): builds (or finds up to date) the
/// engine's unit tests and settlement suite, and says where they are.
pub async fn build(extra: &[&str]) -> anyhow::Result<Binaries> {
    let output = tokio::process::Command::new("cargo")
        .args([
            "test",
            "-p",
            "engine",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .args(extra)
        .stderr(Stdio::inherit())
        .output()
        .await
        .context("running cargo test --no-run")?;
    if !output.status.success() {
        bail!("the engine's tests do not build ({})", output.status);
    }
    let (mut unit, mut settlement) = (None, None);
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(executable) = message["executable"].as_str() else {
            continue;
        };
        let kinds = message["target"]["kind"].to_string();
        match message["target"]["name"].as_str() {
            Some("engine") if kinds.contains("lib") => unit = Some(PathBuf::from(executable)),
            Some("settlement") => settlement = Some(PathBuf::from(executable)),
            _ => {}
        }
    }
    Ok(Binaries {
        unit: unit.context("cargo built no unit-test binary for the engine")?,
        settlement: settlement.context("cargo built no settlement suite")?,
        unit_time: Duration::ZERO,
        settlement_time: Duration::ZERO,
    })
}

/// Both binaries pass on the unmutated code (else no verdict means
/// anything), timed.
pub async fn baseline(binaries: &mut Binaries, threads: usize) -> anyhow::Result<()> {
    for (binary, time) in [
        (binaries.unit.clone(), &mut binaries.unit_time),
        (binaries.settlement.clone(), &mut binaries.settlement_time),
    ] {
        let started = Instant::now();
        let verdict = run(&binary, &[], threads, Duration::from_secs(900)).await?;
        if verdict != Verdict::Passed {
            bail!("{} fails unmutated: {verdict:?}", binary.display());
        }
        *time = started.elapsed();
        println!("baseline: {} passed in {:.1?}", binary.display(), *time);
    }
    Ok(())
}

/// How long a mutant's run of a binary that took `baseline` may take.
pub fn patience(baseline: Duration) -> Duration {
    baseline * 4 + Duration::from_secs(30)
}

/// Runs one test binary with `env` added (see [`run_once`]), and confirms
/// a failure: the failed test alone must fail again, else the failure was
/// the test's or the machine's, not the mutant's, and the whole binary
/// runs once more for the verdict.
pub async fn run(
    binary: &PathBuf,
    env: &[(&str, &str)],
    threads: usize,
    timeout: Duration,
) -> anyhow::Result<Verdict> {
    let verdict = run_once(binary, env, threads, timeout, None).await?;
    if let Verdict::Failed(test) = &verdict
        && run_once(binary, env, threads, timeout, Some(test)).await? == Verdict::Passed
    {
        println!("    ({test} failed once and passed alone: running the suite again)");
        return run_once(binary, env, threads, timeout, None).await;
    }
    Ok(verdict)
}

/// Runs one test binary (as `cargo test` would, from the engine's
/// directory, on the standalone Redis), with `env` added, only the test
/// `exact` if given, and stops it at its first failed test.
async fn run_once(
    binary: &PathBuf,
    env: &[(&str, &str)],
    threads: usize,
    timeout: Duration,
    exact: Option<&str>,
) -> anyhow::Result<Verdict> {
    let mut command = tokio::process::Command::new(binary);
    if let Some(test) = exact {
        command.args([test, "--exact"]);
    }
    command
        .arg(format!("--test-threads={threads}"))
        .current_dir("server/engine")
        .env(
            "CARGO_MANIFEST_DIR",
            std::fs::canonicalize("server/engine")?,
        )
        .env_remove("REDIS_CLUSTER_NODES")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let stdout = child.stdout.take().context("the test binary's stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let first_failure = async {
        while let Some(line) = lines.next_line().await? {
            if let Some(name) = line
                .strip_prefix("test ")
                .and_then(|l| l.strip_suffix(" ... FAILED"))
            {
                return Ok::<_, std::io::Error>(Some(name.to_owned()));
            }
        }
        Ok(None)
    };
    let verdict = match tokio::time::timeout(timeout, first_failure).await {
        Err(_) => Verdict::TimedOut,
        Ok(read) => match read.context("reading the test binary's output")? {
            Some(test) => Verdict::Failed(test),
            None => {
                let status = child.wait().await.context("waiting for the test binary")?;
                if status.success() {
                    Verdict::Passed
                } else {
                    Verdict::Crashed(status.to_string())
                }
            }
        },
    };
    if verdict != Verdict::Passed {
        child.kill().await.ok();
    }
    Ok(verdict)
}
