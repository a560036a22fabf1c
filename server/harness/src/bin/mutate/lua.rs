//! The Lua half: the engine's tests are built once with the `mutation`
//! feature, where `ADMITONE_LUA_MUTANT=<name>=<file>` swaps one script's
//! text (`engine::coordination::script`); each mutant is a file and a run.
//! The scripts in the work tree are never changed.

use anyhow::Context as _;
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
    let file = std::fs::canonicalize(&args.out)?.join("lua-mutant.lua");
    for script in scripts {
        let source = read(script)?;
        // First the whole script replaced by an error: if that passes, no
        // test reaches the script (or the swap does not), and every
        // mutant of it would "survive" for nothing.
        let canary = Mutant::whole(
            "return redis.error_reply('admitone mutation canary')\n",
            "canary: the whole script fails",
        );
        let mutants = mutation::mutants(Language::Lua, &source);
        println!("{script}: {} mutants and the canary", mutants.len());
        for (n, mutant) in std::iter::once(&canary).chain(&mutants).enumerate() {
            std::fs::write(&file, &mutant.text)
                .with_context(|| format!("writing {}", file.display()))?;
            let outcome = one(args, &binaries, baseline, script, &file).await?;
            println!(
                "  [{n}/{}] {} {}",
                mutants.len(),
                outcome.word(),
                mutant.describe()
            );
            report.add(script, &source, mutant, outcome);
        }
    }
    Ok(())
}

/// The unit tests (each script driven against Redis), then the settlement
/// suite, with the mutant swapped in.
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
