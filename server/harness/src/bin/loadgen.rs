//! `loadgen`: the HTTP side of `make bench` (see `scripts/bench.sh`).
//!
//! Drives a running server through its public JSON API the way learners do
//! and prints one JSON object of figures: issuing 100,000 codes, first-access
//! settlements (`POST …/open`) at two concurrencies, returning learners
//! opening again, their players' Range requests (with the PostgreSQL
//! transactions they caused), and the hot-code stampede; or, with
//! `--import-only`, importing 100,000 codes sold elsewhere; or, with
//! `--mail-only`, mailing 10,000 codes to 10,000 addresses. Learner
//! accounts are inserted straight into the database (with one real argon2
//! hash) so that the benchmark measures settlement, not account creation;
//! they sign in through the API.
//!
//! Measurement tooling, never deployed. Its database access is the
//! learners' bulk insert (`harness::drive::learners`), the imported codes'
//! count, and the hot code's bound count, read through the engine's own
//! console query.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use futures::{StreamExt as _, stream};
use harness::drive::{self, Share, issue, new_share, post};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    base_url: String,
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    #[arg(long)]
    admin_email: String,
    #[arg(long)]
    admin_password: String,
    #[arg(long)]
    tenant_id: Uuid,
    /// First accesses measured at each concurrency.
    #[arg(long, default_value_t = 1_000)]
    first_accesses: usize,
    /// Claims in the hot-code stampede.
    #[arg(long, default_value_t = 1_000)]
    hot_claims: usize,
    /// Only import 100,000 codes sold elsewhere (`make bench` runs it
    /// after reading the server's peak RSS, which it would otherwise move).
    #[arg(long)]
    import_only: bool,
    /// Only send a mailable batch's 10,000 codes to 10,000 addresses.
    #[arg(long)]
    mail_only: bool,
}

/// Latencies of one run and its wall time.
struct Run {
    latencies: Vec<Duration>,
    wall: Duration,
    statuses: std::collections::BTreeMap<String, usize>,
}

impl Run {
    fn figures(&self) -> Value {
        let mut l = self.latencies.clone();
        l.sort();
        let pct = |p: f64| {
            l.get(((l.len() as f64 - 1.0) * p).round() as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        json!({
            "requests": l.len(),
            "per_second": l.len() as f64 / self.wall.as_secs_f64(),
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "outcomes": self.statuses,
        })
    }
}

/// Opens the share's resource once per client (`POST …/open`, where an
/// access is counted), `concurrency` at a time.
async fn open_all(
    base: &str,
    share: &Share,
    clients: &[reqwest::Client],
    concurrency: usize,
) -> Run {
    let url = share.open_url(base);
    fire(clients, concurrency, 1, |c| c.post(&url)).await
}

/// `per_client` requests of every client, `concurrency` at a time, in
/// rounds: every client's first request, then every client's second, and
/// so on. With more clients than `concurrency`, the requests in flight
/// come from `concurrency` different clients, each on its one connection,
/// as `concurrency` players each fetching their ranges one after another.
/// (Client by client, the 64 in flight were the requests of a handful of
/// learners at once, each opening extra connections that then sat idle in
/// the server.)
async fn fire(
    clients: &[reqwest::Client],
    concurrency: usize,
    per_client: usize,
    request: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
) -> Run {
    let started = Instant::now();
    let requests: Vec<reqwest::RequestBuilder> =
        rounds(clients, per_client).map(&request).collect();
    let results: Vec<(Duration, String)> = stream::iter(requests)
        .map(|r| async move {
            let t = Instant::now();
            let outcome = match r.send().await {
                Ok(r) if r.status().is_success() => {
                    let _ = r.bytes().await;
                    "ok".to_owned()
                }
                Ok(r) => r
                    .json::<Value>()
                    .await
                    .ok()
                    .and_then(|v| v["code"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "error".into()),
                Err(_) => "transport".into(),
            };
            (t.elapsed(), outcome)
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let wall = started.elapsed();
    let mut statuses = std::collections::BTreeMap::new();
    for (_, outcome) in &results {
        *statuses.entry(outcome.clone()).or_insert(0) += 1;
    }
    Run {
        latencies: results.into_iter().map(|(d, _)| d).collect(),
        wall,
        statuses,
    }
}

/// `per_client` turns of every client, round by round.
fn rounds<T>(clients: &[T], per_client: usize) -> impl Iterator<Item = &T> {
    (0..per_client).flat_map(move |_| clients.iter())
}

/// PostgreSQL's transaction counters: (write transactions, that is
/// transaction ids handed out in the whole cluster; transactions committed
/// in this database, reads included, from `pg_stat_database`).
async fn transactions(pool: &sqlx::PgPool) -> anyhow::Result<(i64, i64)> {
    // Statistics reach pg_stat_database when a backend flushes them (at
    // most a second late when it is idle): wait that out first.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let row: (i64, i64) = sqlx::query_as(
        "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
                (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())",
    )
    .fetch_one(pool)
    .await
    .context("reading PostgreSQL's transaction counters")?;
    Ok(row)
}

/// Waits (two minutes at most) until the mail relay has sent everything
/// queued so far and the webhook relay has fanned out every event (the
/// bench tenant has no endpoints, so there are no deliveries to wait for):
/// each first access queues a receipt and an event, and the relays working
/// through one phase's must not be measured as the next phase's work.
/// (They do run during the phase that queues them, as in production.)
/// Returns (mails, events) still queued: 0 and 0 unless the relays are
/// stuck.
async fn drained(pool: &sqlx::PgPool) -> anyhow::Result<(i64, i64)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (mails, _) = engine::mail::backlog(pool).await?;
        let (events, _) = engine::webhooks::relay::backlog(pool).await?;
        if mails + events == 0 || Instant::now() >= deadline {
            if mails + events > 0 {
                eprintln!("the relays did not drain: {mails} mails, {events} events queued");
            }
            return Ok((mails, events));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn enter_codes(
    base: &str,
    share: &Share,
    clients: &[reqwest::Client],
    codes: &[String],
) -> anyhow::Result<()> {
    let url = format!("{base}/api/v1/s/{}/code", share.slug);
    let results: Vec<anyhow::Result<Value>> = stream::iter(clients.iter().zip(codes))
        .map(|(c, code)| post(c, url.clone(), json!({ "code": code })))
        .buffer_unordered(32)
        .collect()
        .await;
    for r in results {
        r?;
    }
    Ok(())
}

/// (f) Importing 100,000 codes sold elsewhere, in one request (the limit
/// of one import), on a share of its own: every one stored, counted in SQL.
async fn import_100k(
    admin: &reqwest::Client,
    base: &str,
    tenant: Uuid,
    pool: &sqlx::PgPool,
) -> anyhow::Result<f64> {
    let share = new_share(admin, base, tenant, "Importing").await?;
    let foreign: Vec<String> = (0..100_000).map(|i| format!("SHOP-{i:08}")).collect();
    let t = Instant::now();
    let report = post(
        admin,
        format!("{base}/api/v1/shares/{}/imports", share.id),
        json!({ "codes": foreign }),
    )
    .await?;
    let secs = t.elapsed().as_secs_f64();
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(share.id)
        .fetch_one(pool)
        .await
        .context("counting the imported codes")?;
    anyhow::ensure!(
        report["imported"] == 100_000 && report["rejected"] == 0 && stored == 100_000,
        "the 100,000-code import stored {stored}: {report}"
    );
    eprintln!("imported {stored} codes in {secs:.2} s");
    Ok(secs)
}

/// (k) A mailable batch's 10,000 codes sent to 10,000 addresses in one
/// request: how fast the send queues the mails (its answer), and how fast
/// the relay then hands them to the SMTP server (until the outbox is
/// empty). Beside them, the floor of a send from the same run: the raw
/// insert of 10,000 such outbox rows in one transaction (rolled back).
async fn mail_10k(
    admin: &reqwest::Client,
    base: &str,
    tenant: Uuid,
    pool: &sqlx::PgPool,
) -> anyhow::Result<Value> {
    const N: usize = 10_000;
    let share = new_share(admin, base, tenant, "Mailing").await?;
    let batch = post(
        admin,
        format!("{base}/api/v1/shares/{}/codes", share.id),
        json!({ "count": N, "mailable": true }),
    )
    .await?;
    let batch_id = batch["batch_id"].as_str().context("the batch's id")?;
    let addresses: Vec<String> = (0..N).map(|i| format!("buyer-{i}@bench.example")).collect();
    drained(pool).await?;
    let t = Instant::now();
    let report = post(
        admin,
        format!("{base}/api/v1/batches/{batch_id}/send"),
        json!({ "addresses": addresses, "addressed": true }),
    )
    .await?;
    let queue_secs = t.elapsed().as_secs_f64();
    anyhow::ensure!(report["sent"] == N, "the send mailed {report}");
    let deadline = Instant::now() + Duration::from_secs(600);
    while engine::mail::backlog(pool).await?.0 > 0 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the relay did not send the 10,000 mails in 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let delivered_secs = t.elapsed().as_secs_f64();
    let sent: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM mail_outbox WHERE template = 'codes_sent' AND sent_at IS NOT NULL",
    )
    .fetch_one(pool)
    .await
    .context("counting the mails sent")?;
    anyhow::ensure!(sent == N as i64, "{sent} of the {N} mails were sent");
    let mut tx = pool.begin().await.context("starting the raw insert")?;
    let raw = Instant::now();
    sqlx::query(
        "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params)
         SELECT gen_random_uuid(), $1, 'codes_sent', 'raw-' || i || '@bench.example', 'en',
                jsonb_build_object('course', 'Mailing', 'course_slug', 'mailing', 'tenant', 'Bench',
                                   'code_ids', jsonb_build_array(gen_random_uuid()), 'addressed', true)
           FROM generate_series(1, $2) AS i",
    )
    .bind(tenant)
    .bind(N as i32)
    .execute(&mut *tx)
    .await
    .context("the raw insert")?;
    let raw_secs = raw.elapsed().as_secs_f64();
    tx.rollback().await.context("rolling the raw insert back")?;
    eprintln!(
        "mailed {N} codes: queued in {queue_secs:.2} s, sent in {delivered_secs:.2} s (raw insert {raw_secs:.3} s)"
    );
    Ok(json!({
        "addresses": N,
        "queue_secs": queue_secs,
        "queued_per_second": N as f64 / queue_secs,
        "delivered_secs": delivered_secs,
        "delivered_per_second": N as f64 / delivered_secs,
        "raw_insert_secs": raw_secs,
        "raw_inserted_per_second": N as f64 / raw_secs,
    }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let base = args.base_url.trim_end_matches('/').to_owned();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&args.database_url)
        .await
        .context("connecting to the bench database")?;
    let admin = drive::admin(&base, &args.admin_email, &args.admin_password).await?;
    if args.mail_only {
        let figures = mail_10k(&admin, &base, args.tenant_id, &pool).await?;
        println!("{}", json!({ "mail_10k": figures }));
        return Ok(());
    }
    if args.import_only {
        let secs = import_100k(&admin, &base, args.tenant_id, &pool).await?;
        println!("{}", json!({ "import_100k_secs": secs }));
        return Ok(());
    }

    // (f) Issuing 100,000 codes in one request.
    let big = new_share(&admin, &base, args.tenant_id, "Issuing").await?;
    let t = Instant::now();
    let issued = issue(&admin, &base, big.id, 100_000).await?.len();
    let issue_secs = t.elapsed().as_secs_f64();
    eprintln!("issued {issued} codes in {issue_secs:.2} s");

    let n = args.first_accesses;
    let crowd: Vec<reqwest::Client> = drive::learners(
        std::slice::from_ref(&base),
        &pool,
        (2 * n).max(args.hot_claims),
    )
    .await?
    .into_iter()
    .map(|(_, client)| client)
    .collect();
    eprintln!("{} learners signed in", crowd.len());

    // (c) First accesses at 16 and 64 concurrent clients: each learner binds its own code.
    let mut first = serde_json::Map::new();
    let mut returning = Value::Null;
    let mut ranges = Value::Null;
    for (i, concurrency) in [16usize, 64].into_iter().enumerate() {
        let share = new_share(
            &admin,
            &base,
            args.tenant_id,
            &format!("First access c{concurrency}"),
        )
        .await?;
        let clients = &crowd[i * n..(i + 1) * n];
        let codes = issue(&admin, &base, share.id, n).await?;
        enter_codes(&base, &share, clients, &codes).await?;
        drained(&pool).await?;
        let run = open_all(&base, &share, clients, concurrency).await;
        let mut figures = run.figures();
        // The receipts the relay had not sent yet when the last opening
        // was answered (it sends them during the phase, as in production).
        figures["mails_queued_at_end"] = json!(engine::mail::backlog(&pool).await?.0);
        eprintln!("first access c={concurrency}: {figures}");
        first.insert(format!("c{concurrency}"), figures);
        if concurrency == 64 {
            // (d) The same learners open it again: a live grant, reused.
            drained(&pool).await?;
            let run = open_all(&base, &share, clients, 64).await;
            eprintln!("returning c=64: {}", run.figures());
            returning = run.figures();
            // (i) And their players fetch the bytes: Range requests under
            // the grant, which must write nothing.
            let url = share.content_url(&base);
            let queued = drained(&pool).await?;
            let before = transactions(&pool).await?;
            let run = fire(clients, 64, 10, |c| {
                c.get(&url).header(reqwest::header::RANGE, "bytes=0-1023")
            })
            .await;
            let after = transactions(&pool).await?;
            let mut figures = run.figures();
            figures["write_transactions"] = json!(after.0 - before.0);
            figures["transactions_committed"] = json!(after.1 - before.1);
            // Anything the relays still had to send would be in those
            // counters too: 0 and 0 unless they were stuck.
            figures["relays_queued_before"] = json!([queued.0, queued.1]);
            eprintln!("bound Range requests c=64: {figures}");
            ranges = figures;
        }
    }

    // (e) The hot code: every claim at once on one code.
    let hot = new_share(&admin, &base, args.tenant_id, "Hot code").await?;
    let code = issue(&admin, &base, hot.id, 1).await?.remove(0);
    let claimers = &crowd[..args.hot_claims];
    let codes = vec![code; claimers.len()];
    enter_codes(&base, &hot, claimers, &codes).await?;
    drained(&pool).await?;
    let run = open_all(&base, &hot, claimers, claimers.len()).await;
    let winners = run.statuses.get("ok").copied().unwrap_or(0);
    let in_redis = run.statuses.get("busy_retry").copied().unwrap_or(0);
    let in_pg = run.statuses.get("code_bound").copied().unwrap_or(0);
    let losers = claimers.len() - winners;
    let bound = engine::read_models::shares(
        &engine::db::Reads::primary_only(pool.clone()),
        engine::tenants::TenantId(args.tenant_id),
        None,
        500,
    )
    .await?
    .into_iter()
    .find(|row| row.id == hot.id)
    .context("the hot code's share in the console")?
    .bound;
    let hot_figures = json!({
        "claims": claimers.len(),
        "winners": winners,
        "bound_in_db": bound,
        "losers_stopped_in_redis": in_redis,
        "losers_reaching_postgres": in_pg,
        "stopped_in_redis_pct": if losers == 0 { 100.0 } else { 100.0 * in_redis as f64 / losers as f64 },
        "outcomes": run.statuses,
    });
    eprintln!("hot code: {hot_figures}");

    println!(
        "{}",
        json!({
            "issue_100k_secs": issue_secs,
            "first_access": first,
            "returning_access_c64": returning,
            "bound_range_c64": ranges,
            "hot_code": hot_figures,
        })
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::rounds;

    #[test]
    fn requests_go_round_by_round_across_clients() {
        let order: Vec<&char> = rounds(&['a', 'b', 'c'], 2).collect();
        assert_eq!(order, [&'a', &'b', &'c', &'a', &'b', &'c']);
        assert_eq!(rounds(&['a'], 0).count(), 0);
    }
}
