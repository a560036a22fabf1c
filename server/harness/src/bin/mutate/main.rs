//! `mutate`: the SQL and Lua half of `make mutants` (see
//! `scripts/mutants.sh`; cargo-mutants does the Rust half).
//!
//! Why: the decisions that keep one code to one person are in PL/pgSQL
//! (`settle_access`: the session check, the bind's compare-and-set, the
//! learner's limit, the quota-slot debit) and in Redis Lua (the
//! reservation, the throttle window, the download handover), and
//! cargo-mutants changes only Rust. This runner makes the mutants of those
//! (`harness::mutation`) and, one at a time, runs the engine's tests
//! against each:
//!
//! - **SQL**: each function is read from a freshly migrated database
//!   (`pg_get_functiondef`: the definition in force, not a migration file),
//!   mutated in its body, and checked to compile there (else "unviable").
//!   The engine's settlement suite then runs with `ADMITONE_SQL_MUTANT`
//!   naming the mutated `CREATE OR REPLACE`, which the suite's fixture
//!   applies to each test's database after its migrations and checks took.
//! - **Lua**: the engine's tests are built once with its `mutation`
//!   feature, where `ADMITONE_LUA_MUTANT` swaps one script's text for a
//!   mutant's file (`engine::coordination::script`; no deployed build has
//!   the feature). Each mutant runs the engine's unit tests (which drive
//!   each script against Redis) and the settlement suite. Before a
//!   script's mutants, its canary (the whole script replaced by an error)
//!   must be caught: else no test reaches the script.
//!
//! The engine's tests name their databases after the test (sqlx), so no
//! other run of them may share the PostgreSQL server meanwhile: two runs
//! drop each other's databases, and a mutant would look killed.
//!
//! A run stops at the first failing test (the mutant is "killed"); one
//! that passes every test "survives". A survivor is either a missing test
//! or an equivalent change, and `equivalent.txt` beside this file says
//! which survivors are equivalent, and why. The report (a table per
//! target, then every survivor) names the commit it ran on; the exit
//! status is 1 if a survivor is not explained there.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::{Parser, ValueEnum};

mod lua;
mod report;
mod sql;
mod suite;

use report::{Equivalents, Report};

/// The SQL functions under mutation: the settlement transaction and what
/// it calls or fires.
const SQL_FUNCTIONS: &[&str] = &[
    "settle_access",
    "settle_access_within",
    "binding_access_ends",
    "code_expires_at",
    "auth_codes_refuse_expired",
    "auth_codes_refuse_other_addressee",
    "auth_codes_keep_binding",
];

/// The Redis scripts under mutation (paths from the repository's root).
const LUA_SCRIPTS: &[&str] = &[
    "server/engine/src/reservation/reserve.lua",
    "server/engine/src/reservation/release.lua",
    "server/engine/src/reservation/remove_stale.lua",
    "server/engine/src/throttle/fixed_window.lua",
    "server/engine/src/handover/release.lua",
    "server/engine/src/handover/renew.lua",
];

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    All,
    Sql,
    Lua,
}

#[derive(Parser)]
struct Args {
    /// Which half to run.
    #[arg(long, value_enum, default_value = "all")]
    which: Which,
    /// Only the targets (function names, script paths) containing one of
    /// these (comma-separated).
    #[arg(long)]
    only: Option<String>,
    /// Print the mutants and run nothing.
    #[arg(long)]
    list: bool,
    /// A database server's URL (any database of it): the scratch
    /// database for reading and checking definitions is made beside it.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Test threads per run (the tests wait on PostgreSQL and Redis more
    /// than on the CPU).
    #[arg(long, default_value_t = 6)]
    test_threads: usize,
    /// Where the report goes.
    #[arg(long, default_value = "target/mutants")]
    out: PathBuf,
    /// Where this run writes its mutants (a directory of its own, so that
    /// two runs never read each other's).
    #[arg(skip)]
    work: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    args.work = std::env::temp_dir().join(format!("admitone-mutants-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&args.work).context("creating the run's directory")?;
    let result = run(&args).await;
    std::fs::remove_dir_all(&args.work).ok();
    result
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let root = repository_root()?;
    std::env::set_current_dir(&root).context("entering the repository's root")?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let wanted = |name: &str| {
        args.only.as_deref().is_none_or(|only| {
            only.split(',')
                .map(str::trim)
                .any(|part| !part.is_empty() && name.contains(part))
        })
    };
    let functions: Vec<&str> = SQL_FUNCTIONS
        .iter()
        .copied()
        .filter(|f| wanted(f))
        .collect();
    let scripts: Vec<&str> = LUA_SCRIPTS.iter().copied().filter(|s| wanted(s)).collect();
    let run_sql = args.which != Which::Lua && !functions.is_empty();
    let run_lua = args.which != Which::Sql && !scripts.is_empty();
    if !run_sql && !run_lua {
        bail!("nothing to mutate: no target matches {:?}", args.only);
    }
    let equivalents =
        Equivalents::load(&root.join("server/harness/src/bin/mutate/equivalent.txt"))?;
    let mut report = Report::new(commit()?, equivalents);

    if args.list {
        if run_sql {
            sql::list(args, &functions).await?;
        }
        if run_lua {
            lua::list(&scripts)?;
        }
        return Ok(());
    }
    let mut binaries = suite::build(&[]).await?;
    suite::baseline(&mut binaries, args.test_threads).await?;
    if run_sql {
        sql::run(args, &functions, &binaries, &mut report).await?;
    }
    if run_lua {
        lua::run(args, &scripts, &binaries, &mut report).await?;
    }
    // The machine still passes the unmutated suites: a database or Redis
    // that broke meanwhile would have made every later mutant look killed.
    let mut after = binaries.clone();
    suite::baseline(&mut after, args.test_threads)
        .await
        .context("after the mutants (their verdicts cannot be trusted)")?;
    let text = report.markdown();
    println!("{text}");
    let file = args.out.join("sql-lua.md");
    std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
    println!("(also {})", file.display());
    let failures = report.failures();
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

fn repository_root() -> anyhow::Result<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .nth(2)
        .context("the harness crate sits two levels below the repository's root")?;
    Ok(root.to_path_buf())
}

/// The commit the run measures, `+dirty` when the work tree differs.
fn commit() -> anyhow::Result<String> {
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .context("running git rev-parse")?;
    let dirty = !std::process::Command::new("git")
        .args(["diff", "--quiet", "HEAD", "--"])
        .status()
        .context("running git diff")?
        .success();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    Ok(if dirty { format!("{head}+dirty") } else { head })
}
