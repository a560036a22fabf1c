//! What the mutants came to: a table per target, every survivor with its
//! explanation (from `equivalent.txt`) or as a missing test.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use anyhow::{Context as _, bail};
use harness::mutation::Mutant;

use crate::suite::Verdict;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A test failed: this test.
    Killed(String),
    /// The suite ran past its time (counted as caught, as cargo-mutants does).
    TimedOut,
    /// PostgreSQL (or Redis) did not take the mutated source.
    Unviable(String),
    /// The test binary ended without naming a failed test: no verdict. The
    /// run fails (a crash is the harness's or the machine's, not a kill).
    Crashed(String),
    /// Every test passed.
    Survived,
}

impl From<Verdict> for Outcome {
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Passed => Self::Survived,
            Verdict::Failed(test) => Self::Killed(test),
            Verdict::TimedOut => Self::TimedOut,
            Verdict::Crashed(status) => Self::Crashed(status),
        }
    }
}

impl Outcome {
    pub fn word(&self) -> &'static str {
        match self {
            Self::Killed(_) => "killed  ",
            Self::TimedOut => "timeout ",
            Self::Unviable(_) => "unviable",
            Self::Crashed(_) => "CRASHED ",
            Self::Survived => "SURVIVED",
        }
    }

    /// What caught it, for the run's log.
    pub fn detail(&self) -> &str {
        match self {
            Self::Killed(test) => test,
            Self::Unviable(error) | Self::Crashed(error) => error,
            Self::TimedOut | Self::Survived => "",
        }
    }
}

/// The survivors explained as equivalent: `equivalent.txt`, one per
/// paragraph: the key line the report prints (`target | line N | original
/// -> replacement`, with `#k` for the k-th identical change on that line),
/// then the reason on the lines after it.
pub struct Equivalents(BTreeMap<String, String>);

impl Equivalents {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut map = BTreeMap::new();
        for paragraph in text.split("\n\n") {
            let lines: Vec<&str> = paragraph
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .collect();
            let Some((key, reason)) = lines.split_first() else {
                continue;
            };
            if reason.is_empty() {
                bail!("{}: `{key}` says no reason", path.display());
            }
            if map.insert((*key).to_owned(), reason.join(" ")).is_some() {
                bail!("{}: `{key}` is explained twice", path.display());
            }
        }
        Ok(Self(map))
    }
}

#[derive(Default)]
struct Tally {
    mutants: usize,
    killed: usize,
    timeouts: usize,
    unviable: usize,
    crashed: usize,
    equivalent: usize,
    /// (description, key, explanation if any)
    survivors: Vec<(String, String, Option<String>)>,
}

pub struct Report {
    commit: String,
    equivalents: Equivalents,
    targets: BTreeMap<String, Tally>,
    /// Every key made, to find explanations that explain nothing.
    keys: BTreeSet<String>,
}

impl Report {
    pub fn new(commit: String, equivalents: Equivalents) -> Self {
        Self {
            commit,
            equivalents,
            targets: BTreeMap::new(),
            keys: BTreeSet::new(),
        }
    }

    /// The key a mutant is explained under: its target, line and change,
    /// and `#k` for the k-th identical change on that line.
    fn key(&mut self, target: &str, mutant: &Mutant) -> String {
        let base = format!(
            "{target} | line {} | {} -> {}",
            mutant.line, mutant.original, mutant.replacement
        );
        let mut key = base.clone();
        let mut k = 1;
        while self.keys.contains(&key) {
            k += 1;
            key = format!("{base} #{k}");
        }
        self.keys.insert(key.clone());
        key
    }

    pub fn add(&mut self, target: &str, mutant: &Mutant, outcome: Outcome) {
        let key = self.key(target, mutant);
        let why = self.equivalents.0.get(&key).cloned();
        let tally = self.targets.entry(target.to_owned()).or_default();
        tally.mutants += 1;
        match outcome {
            Outcome::Killed(_) => tally.killed += 1,
            Outcome::TimedOut => tally.timeouts += 1,
            Outcome::Unviable(_) => tally.unviable += 1,
            Outcome::Crashed(_) => tally.crashed += 1,
            Outcome::Survived => {
                if why.is_some() {
                    tally.equivalent += 1;
                }
                tally.survivors.push((mutant.describe(), key, why));
            }
        }
    }

    /// What makes the run fail: survivors no explanation covers, crashes,
    /// and explanations of targets that ran that name no mutant (stale).
    pub fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        let unexplained: usize = self
            .targets
            .values()
            .map(|t| t.survivors.len() - t.equivalent)
            .sum();
        if unexplained > 0 {
            failures.push(format!(
                "{unexplained} survivor(s) neither killed nor explained"
            ));
        }
        let crashed: usize = self.targets.values().map(|t| t.crashed).sum();
        if crashed > 0 {
            failures.push(format!("{crashed} run(s) crashed without a verdict"));
        }
        for key in self.equivalents.0.keys() {
            let target = key.split(" | ").next().unwrap_or_default();
            if self.targets.contains_key(target) && !self.keys.contains(key) {
                failures.push(format!(
                    "equivalent.txt explains no mutant of this run: `{key}`"
                ));
            }
        }
        failures
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "SQL and Lua mutants at commit `{}`, {}:\n\n\
             | target | mutants | killed | timeouts | unviable | crashed | survivors (equivalent) |\n\
             |---|---|---|---|---|---|---|\n",
            self.commit,
            today(),
        );
        for (target, t) in &self.targets {
            out.push_str(&format!(
                "| `{target}` | {} | {} | {} | {} | {} | {} ({}) |\n",
                t.mutants,
                t.killed,
                t.timeouts,
                t.unviable,
                t.crashed,
                t.survivors.len(),
                t.equivalent
            ));
        }
        for (target, t) in &self.targets {
            for (description, key, why) in &t.survivors {
                match why {
                    Some(why) => {
                        out.push_str(&format!("\n- `{target}` {description}: equivalent. {why}"));
                    }
                    None => out.push_str(&format!(
                        "\n- `{target}` {description}: **not caught** (to explain it, add to \
                         equivalent.txt under `{key}`)"
                    )),
                }
            }
        }
        out.push('\n');
        out
    }
}

fn today() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{}-{:02}-{:02}",
        now.year(),
        u8::from(now.month()),
        now.day()
    )
}
