//! The SQL half: each function as the migrated database defines it,
//! mutated in its body, checked to compile, then applied by the settlement
//! suite's fixture to every test's database (`ADMITONE_SQL_MUTANT`).

use anyhow::{Context as _, bail};
use harness::mutation::{self, Language, Mutant};
use sqlx::{Connection as _, PgConnection, postgres::PgConnectOptions};
use uuid::Uuid;

use crate::{
    Args,
    report::{Outcome, Report},
    suite::{self, Binaries, Verdict},
};

/// The variable the settlement suite's fixture reads (keep in step with
/// `server/engine/tests/settlement/fixture.rs`).
const MUTANT_VARIABLE: &str = "ADMITONE_SQL_MUTANT";

/// A function's definition split around its body, so that the body can be
/// changed and the whole put back together.
struct Definition {
    name: String,
    /// `CREATE OR REPLACE FUNCTION … AS $function$`
    head: String,
    body: String,
    /// `$function$` and what follows it.
    tail: String,
}

impl Definition {
    /// The definition with `body` in place of its own, marked so that the
    /// fixture can check the mutant is the definition in force.
    fn with_body(&self, body: &str, marker: &str) -> String {
        format!("{}{body}\n-- {marker}\n{}", self.head, self.tail)
    }
}

/// A scratch database beside `url`'s, migrated, dropped again by `drop`.
struct Scratch {
    server: PgConnectOptions,
    name: String,
    connection: PgConnection,
}

impl Scratch {
    async fn create(url: &str) -> anyhow::Result<Self> {
        let server: PgConnectOptions = url.parse().context("parsing DATABASE_URL")?;
        let name = format!("mutants_{}", Uuid::new_v4().simple());
        let mut admin = PgConnection::connect_with(&server)
            .await
            .context("connecting to PostgreSQL")?;
        sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .context("creating the scratch database")?;
        let mut connection = PgConnection::connect_with(&server.clone().database(&name))
            .await
            .context("connecting to the scratch database")?;
        engine::db::MIGRATOR
            .run(&mut connection)
            .await
            .context("migrating the scratch database")?;
        Ok(Self {
            server,
            name,
            connection,
        })
    }

    async fn definition(&mut self, function: &str) -> anyhow::Result<Definition> {
        let definitions: Vec<String> = sqlx::query_scalar(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p \
              JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = 'public' AND p.proname = $1",
        )
        .bind(function)
        .fetch_all(&mut self.connection)
        .await
        .with_context(|| format!("reading the definition of {function}"))?;
        let [definition] = definitions.as_slice() else {
            bail!(
                "{function}: expected one definition, found {}",
                definitions.len()
            );
        };
        let quote = "$function$";
        let open = definition
            .find(quote)
            .with_context(|| format!("{function}: no {quote} in its definition"))?
            + quote.len();
        let close = definition
            .rfind(quote)
            .filter(|close| *close > open)
            .with_context(|| format!("{function}: its body does not close"))?;
        Ok(Definition {
            name: function.to_owned(),
            head: definition[..open].to_owned(),
            body: definition[open..close].to_owned(),
            tail: definition[close..].to_owned(),
        })
    }

    /// Whether PostgreSQL takes `statement` (rolled back either way).
    async fn compiles(&mut self, statement: &str) -> anyhow::Result<Result<(), String>> {
        let mut transaction = self.connection.begin().await.context("BEGIN")?;
        let result = sqlx::raw_sql(statement).execute(&mut *transaction).await;
        transaction.rollback().await.context("ROLLBACK")?;
        Ok(result.map(|_| ()).map_err(|e| e.to_string()))
    }

    async fn drop(self) -> anyhow::Result<()> {
        self.connection.close().await.ok();
        let mut admin = PgConnection::connect_with(&self.server)
            .await
            .context("connecting to PostgreSQL")?;
        sqlx::raw_sql(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .execute(&mut admin)
        .await
        .context("dropping the scratch database")?;
        Ok(())
    }
}

/// `--list`: every SQL mutant, run nothing.
pub async fn list(args: &Args, functions: &[&str]) -> anyhow::Result<()> {
    let mut scratch = Scratch::create(&args.database_url).await?;
    for function in functions {
        let definition = scratch.definition(function).await?;
        for mutant in mutation::mutants(Language::Sql, &definition.body) {
            println!("{function}: {}", mutant.describe());
        }
    }
    scratch.drop().await
}

pub async fn run(
    args: &Args,
    functions: &[&str],
    binaries: &Binaries,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut scratch = Scratch::create(&args.database_url).await?;
    let result = run_in(args, functions, binaries, report, &mut scratch).await;
    scratch.drop().await?;
    result
}

async fn run_in(
    args: &Args,
    functions: &[&str],
    binaries: &Binaries,
    report: &mut Report,
    scratch: &mut Scratch,
) -> anyhow::Result<()> {
    let file = args.work.join("sql-mutant.sql");
    let file_name = file.to_string_lossy().into_owned();
    let timeout = suite::patience(binaries.settlement_time);
    for function in functions {
        let definition = scratch.definition(function).await?;
        // The unmutated definition through the same door first: the suite
        // passes with it, so a mutant's failure is the mutant's.
        let unchanged = definition.with_body(&definition.body, &marker());
        write(&file, &unchanged)?;
        let verdict = suite::run(
            &binaries.settlement,
            &[(MUTANT_VARIABLE, &file_name)],
            args.test_threads,
            timeout,
        )
        .await?;
        if verdict != Verdict::Passed {
            bail!("{function}: the suite fails with the unmutated definition applied: {verdict:?}");
        }
        let mutants = mutation::mutants(Language::Sql, &definition.body);
        println!("{function}: {} mutants", mutants.len());
        for (n, mutant) in mutants.iter().enumerate() {
            let outcome = one(args, &definition, mutant, scratch, binaries, &file).await?;
            println!(
                "  [{}/{}] {} {} {}",
                n + 1,
                mutants.len(),
                outcome.word(),
                mutant.describe(),
                outcome.detail()
            );
            report.add(&definition.name, mutant, outcome);
        }
    }
    Ok(())
}

async fn one(
    args: &Args,
    definition: &Definition,
    mutant: &Mutant,
    scratch: &mut Scratch,
    binaries: &Binaries,
    file: &std::path::Path,
) -> anyhow::Result<Outcome> {
    let statement = definition.with_body(&mutant.text, &marker());
    if let Err(error) = scratch.compiles(&statement).await? {
        return Ok(Outcome::Unviable(error));
    }
    write(file, &statement)?;
    let verdict = suite::run(
        &binaries.settlement,
        &[(MUTANT_VARIABLE, &file.to_string_lossy())],
        args.test_threads,
        suite::patience(binaries.settlement_time),
    )
    .await?;
    Ok(Outcome::from(verdict))
}

fn marker() -> String {
    format!("admitone-mutant {}", Uuid::new_v4())
}

fn write(file: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}
