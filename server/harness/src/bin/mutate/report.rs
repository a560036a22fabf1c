//! What the mutants came to: a table per target, every survivor with its
//! explanation (from `equivalent.txt`) or as a missing test.

use std::{collections::BTreeMap, path::Path};

use anyhow::{Context as _, bail};
use harness::mutation::Mutant;

use crate::suite::Verdict;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A test failed: this test.
    Killed(String),
    /// The suite ran past its time (counted as caught, as cargo-mutants does).
    TimedOut,
    /// PostgreSQL did not take the mutated definition.
    Unviable(String),
    /// Every test passed.
    Survived,
}

impl From<Verdict> for Outcome {
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Passed => Self::Survived,
            Verdict::Failed(test) => Self::Killed(test),
            Verdict::TimedOut => Self::TimedOut,
            Verdict::Crashed(status) => Self::Killed(format!("(the test binary ended: {status})")),
        }
    }
}

impl Outcome {
    pub fn word(&self) -> &'static str {
        match self {
            Self::Killed(_) => "killed  ",
            Self::TimedOut => "timeout ",
            Self::Unviable(_) => "unviable",
            Self::Survived => "SURVIVED",
        }
    }
}

/// The survivors explained as equivalent: `equivalent.txt`, one per
/// paragraph: a line `target | the source line, trimmed | original ->
/// replacement`, then the reason on the lines after it.
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
            map.insert((*key).to_owned(), reason.join(" "));
        }
        Ok(Self(map))
    }
}

/// The key a survivor is explained under: stable while its line is.
fn key(target: &str, source: &str, mutant: &Mutant) -> String {
    let line = source
        .lines()
        .nth(mutant.line - 1)
        .unwrap_or_default()
        .trim();
    format!(
        "{target} | {line} | {} -> {}",
        mutant.original, mutant.replacement
    )
}

#[derive(Default)]
struct Tally {
    mutants: usize,
    killed: usize,
    timeouts: usize,
    unviable: usize,
    equivalent: usize,
    /// (description, key, explanation if any)
    survivors: Vec<(String, String, Option<String>)>,
}

pub struct Report {
    commit: String,
    equivalents: Equivalents,
    targets: BTreeMap<String, Tally>,
}

impl Report {
    pub fn new(commit: String, equivalents: Equivalents) -> Self {
        Self {
            commit,
            equivalents,
            targets: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, target: &str, source: &str, mutant: &Mutant, outcome: Outcome) {
        let tally = self.targets.entry(target.to_owned()).or_default();
        tally.mutants += 1;
        match outcome {
            Outcome::Killed(_) => tally.killed += 1,
            Outcome::TimedOut => tally.timeouts += 1,
            Outcome::Unviable(_) => tally.unviable += 1,
            Outcome::Survived => {
                let key = key(target, source, mutant);
                let why = self.equivalents.0.get(&key).cloned();
                if why.is_some() {
                    tally.equivalent += 1;
                }
                tally.survivors.push((mutant.describe(), key, why));
            }
        }
    }

    /// Survivors no explanation covers.
    pub fn unexplained(&self) -> usize {
        self.targets
            .values()
            .map(|t| t.survivors.len() - t.equivalent)
            .sum()
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "SQL and Lua mutants at commit `{}`, {}:\n\n\
             | target | mutants | killed | timeouts | unviable | survivors (equivalent) |\n\
             |---|---|---|---|---|---|\n",
            self.commit,
            today(),
        );
        for (target, t) in &self.targets {
            out.push_str(&format!(
                "| `{target}` | {} | {} | {} | {} | {} ({}) |\n",
                t.mutants,
                t.killed,
                t.timeouts,
                t.unviable,
                t.survivors.len(),
                t.equivalent
            ));
        }
        for (target, t) in &self.targets {
            for (description, key, why) in &t.survivors {
                match why {
                    Some(why) => out.push_str(&format!("\n- `{target}` {description}: equivalent. {why}")),
                    None => out.push_str(&format!(
                        "\n- `{target}` {description}: **not caught** (to explain it, add to equivalent.txt \
                         under `{key}`)"
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
