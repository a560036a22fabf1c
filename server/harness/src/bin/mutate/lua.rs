//! The Lua half: the scripts are compiled into the engine, so each mutant
//! is written over its script, the engine's tests rebuilt and run, and the
//! script put back.

use std::path::Path;

use anyhow::{Context as _, bail};
use harness::mutation::{self, Language};

use crate::{
    Args,
    report::{Outcome, Report},
    suite::{self, Binaries, Verdict},
};

/// A script with local changes would be measured as it is and then "put
/// back" as it was: refuse, and say how to get it clean.
pub fn refuse_local_changes(scripts: &[&str]) -> anyhow::Result<()> {
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain", "--"])
        .args(scripts)
        .output()
        .context("running git status")?;
    let changed = String::from_utf8_lossy(&status.stdout);
    if !changed.trim().is_empty() {
        bail!(
            "these scripts differ from the commit (a run cut short puts its mutant back only when \
             it ends; `git checkout -- <file>` restores one):\n{changed}"
        );
    }
    Ok(())
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

/// The script's own text, written back however the mutant's run ends.
struct Restore<'a> {
    path: &'a Path,
    original: String,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        if let Err(error) = std::fs::write(self.path, &self.original) {
            eprintln!("could not restore {}: {error}", self.path.display());
        }
    }
}

pub async fn run(
    args: &Args,
    scripts: &[&str],
    baseline: &Binaries,
    report: &mut Report,
) -> anyhow::Result<()> {
    for script in scripts {
        let path = Path::new(script);
        let original = read(script)?;
        let mutants = mutation::mutants(Language::Lua, &original);
        println!("{script}: {} mutants", mutants.len());
        for (n, mutant) in mutants.iter().enumerate() {
            let outcome = {
                let _restore = Restore {
                    path,
                    original: original.clone(),
                };
                std::fs::write(path, &mutant.text).with_context(|| format!("writing {script}"))?;
                one(args, baseline).await?
            };
            println!(
                "  [{}/{}] {} {}",
                n + 1,
                mutants.len(),
                outcome.word(),
                mutant.describe()
            );
            report.add(script, &original, mutant, outcome);
        }
        if read(script)? != original {
            bail!("{script} was not put back as it was");
        }
    }
    // The tests built last are the unmutated ones again.
    suite::build().await?;
    Ok(())
}

/// Rebuilds with the mutant in place and runs the unit tests, then the
/// settlement suite.
async fn one(args: &Args, baseline: &Binaries) -> anyhow::Result<Outcome> {
    let binaries = suite::build().await?;
    for (binary, time) in [
        (&binaries.unit, baseline.unit_time),
        (&binaries.settlement, baseline.settlement_time),
    ] {
        let verdict = suite::run(binary, &[], args.test_threads, suite::patience(time)).await?;
        if verdict != Verdict::Passed {
            return Ok(Outcome::from(verdict));
        }
    }
    Ok(Outcome::Survived)
}

fn read(script: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(script).with_context(|| format!("reading {script}"))
}
