//! The Lua half: the engine's tests are built once with the `mutation`
//! feature, where `ADMITONE_LUA_MUTANT=<name>=<file>` swaps one script's
//! text (`engine::coordination::script`); each mutant is a file and a run.
//! The scripts in the work tree are never changed.

use anyhow::{Context as _, bail};
use harness::mutation::{self, Language, Mutant};

use crate::{
    Args,
    report::{Outcome, Report},
    suite::{self, Binaries, Verdict},
};

const MUTANT_VARIABLE: &str = "ADMITONE_LUA_MUTANT";

/// A script's name for the swap: its path under `server/engine/src`.
fn name_of(script: &str) -> &str {
    script.strip_prefix("server/engine/src/").unwrap_or(script)
}

/// `--list`: every Lua mutant, run nothing.
pub fn list(scripts: &[&str]) -> anyhow::Result<()> {
    for script in scripts {
        let source = read(script)?;
        for mutant in mutation::mutants(Language::Lua, &source) {
            println!("{script}: {}", mutant.describe());
        }
    }
    Ok(())
}

pub async fn run(
    args: &Args,
    scripts: &[&str],
    baseline: &Binaries,
    report: &mut Report,
) -> anyhow::Result<()> {
    let binaries = suite::build(&["--features", "engine/mutation"]).await?;
    let file = args.work.join("lua-mutant.lua");
    let redis = redis_connection().await?;
    for script in scripts {
        let source = read(script)?;
        // The script unchanged, through the swap: the suites pass.
        write(&file, &source)?;
        let unchanged = one(args, &binaries, baseline, script, &file).await?;
        if unchanged != Outcome::Survived {
            bail!("{script}: the suites fail with the script swapped in unchanged: {unchanged:?}");
        }
        // The whole script replaced by an error must be caught: else no
        // test reaches the script (or the swap does not), and each of its
        // mutants would "survive" for nothing.
        write(
            &file,
            "return redis.error_reply('admitone mutation canary')\n",
        )?;
        let canary = one(args, &binaries, baseline, script, &file).await?;
        if !matches!(canary, Outcome::Killed(_) | Outcome::TimedOut) {
            bail!("{script}: no engine test reaches it (its canary: {canary:?})");
        }
        let mutants = mutation::mutants(Language::Lua, &source);
        println!("{script}: {} mutants (its canary caught)", mutants.len());
        for (n, mutant) in mutants.iter().enumerate() {
            let outcome = match compiles(&redis, mutant).await? {
                Err(error) => Outcome::Unviable(error),
                Ok(()) => {
                    write(&file, &mutant.text)?;
                    one(args, &binaries, baseline, script, &file).await?
                }
            };
            println!(
                "  [{}/{}] {} {} {}",
                n + 1,
                mutants.len(),
                outcome.word(),
                mutant.describe(),
                outcome.detail()
            );
            report.add(script, mutant, outcome);
        }
    }
    Ok(())
}

/// The machine's Redis (`REDIS_URL`), to ask whether a mutant compiles.
async fn redis_connection() -> anyhow::Result<redis::aio::MultiplexedConnection> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    redis::Client::open(url.as_str())
        .context("the Redis URL")?
        .get_multiplexed_async_connection()
        .await
        .context("connecting to Redis")
}

/// Whether Redis takes the mutant's text (`SCRIPT LOAD` compiles it and
/// runs nothing; a script Redis refuses is "unviable", not "killed").
async fn compiles(
    redis: &redis::aio::MultiplexedConnection,
    mutant: &Mutant,
) -> anyhow::Result<Result<(), String>> {
    let mut redis = redis.clone();
    let loaded: redis::RedisResult<String> = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(&mutant.text)
        .query_async(&mut redis)
        .await;
    match loaded {
        Ok(_) => Ok(Ok(())),
        Err(error) if error.is_io_error() => {
            Err(anyhow::Error::new(error).context("asking Redis to compile a mutant"))
        }
        Err(error) => Ok(Err(error.to_string())),
    }
}

/// The unit tests (each script driven against Redis), then the settlement
/// suite, with the file swapped in for the script.
async fn one(
    args: &Args,
    binaries: &Binaries,
    baseline: &Binaries,
    script: &str,
    file: &std::path::Path,
) -> anyhow::Result<Outcome> {
    let swap = format!("{}={}", name_of(script), file.display());
    for (binary, time) in [
        (&binaries.unit, baseline.unit_time),
        (&binaries.settlement, baseline.settlement_time),
    ] {
        let verdict = suite::run(
            binary,
            &[(MUTANT_VARIABLE, &swap)],
            args.test_threads,
            suite::patience(time),
        )
        .await?;
        if verdict != Verdict::Passed {
            return Ok(Outcome::from(verdict));
        }
    }
    Ok(Outcome::Survived)
}

fn read(script: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(script).with_context(|| format!("reading {script}"))
}

fn write(file: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}
