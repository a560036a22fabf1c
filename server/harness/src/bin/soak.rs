//! `soak`: many parallel clients over every page kind of a real server
//! process, for a bounded time (see `scripts/soak.sh`, `make soak`).
//!
//! Why: a server-rendered page goes unanswered, rarely, when several test
//! servers share one test process (`docs/development/testing.md`); this binary
//! checks the same thing where it matters, on the real binary. Clients are signed out, learners holding a course, and
//! admins, each page asked for in English and in Chinese. The run fails
//! (exit 1) on any unanswered request (timeout or dropped connection), any
//! 5xx, or any other status than the page kind's own (a signed-in page
//! that redirects to the sign-in form means a lost session); it prints one
//! JSON object of counts per page kind.
//!
//! Test tooling, never deployed. Its only database access is the learners'
//! bulk insert (`harness::drive::learners`).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Parser;
use futures::future::join_all;
use harness::drive;
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
    /// Parallel clients.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// How long the load lasts.
    #[arg(long, default_value_t = 60)]
    secs: u64,
    /// A client gives up on one request after this long (then counted as
    /// unanswered).
    #[arg(long, default_value_t = 30)]
    request_timeout_secs: u64,
}

/// Who a client is, and so which pages it asks for.
#[derive(Clone, Copy, Debug)]
enum Role {
    SignedOut,
    Learner,
    Admin,
}

/// What one page kind got.
#[derive(Default, Debug)]
struct Tally {
    answered: BTreeMap<u16, u64>,
    unanswered: u64,
    /// Answered below 500 with another status than the page kind's own.
    unexpected: u64,
    /// The first failure's description, to start an investigation from.
    first_failure: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let base = args.base_url.trim_end_matches('/').to_owned();
    let pool = sqlx::PgPool::connect(&args.database_url)
        .await
        .context("connecting to PostgreSQL")?;

    // A course, learners who hold it, and a signed-in admin.
    let admin = drive::admin(&base, &args.admin_email, &args.admin_password).await?;
    let share = drive::new_share(&admin, &base, args.tenant_id, "Soak course").await?;
    let learner_count = args.clients.div_ceil(3).max(1);
    let codes = drive::issue(&admin, &base, share.id, learner_count).await?;
    let learners = drive::learners(std::slice::from_ref(&base), &pool, learner_count).await?;
    for ((_, learner), code) in learners.iter().zip(&codes) {
        drive::post(
            learner,
            format!("{base}/api/v1/s/{}/code", share.slug),
            json!({ "code": code }),
        )
        .await?;
        let opened = learner
            .post(share.open_url(&base))
            .send()
            .await
            .context("first access")?;
        anyhow::ensure!(
            opened.status().is_success(),
            "first access: {}",
            opened.status()
        );
    }

    // A code refused by the form (a typo in its check symbol) comes back to
    // the page as `?__err=…`: the page kind that once went unanswered.
    let mut typo = codes.first().context("a code")?.clone();
    let last = typo.pop().context("a check symbol")?;
    typo.push(if last == 'Z' { 'Y' } else { 'Z' });
    let refused = learners[0]
        .1
        .post(format!("{base}/api/learner/code"))
        .header("accept", "text/html,application/xhtml+xml")
        .header("referer", format!("{base}/s/{}", share.slug))
        .header("origin", &base)
        .form(&[("slug", share.slug.as_str()), ("code", typo.as_str())])
        .send()
        .await
        .context("a refused code by form")?;
    let form_error = refused
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(|l| l.trim_start_matches(&base).to_owned())
        .filter(|l| l.contains("__err="))
        .with_context(|| format!("a form error redirect, got {}", refused.status()))?;

    let pages = |role: Role| -> Vec<(&'static str, String, u16)> {
        let t = args.tenant_id;
        let s = &share;
        match role {
            Role::SignedOut => vec![
                ("home", "/".to_owned(), 200),
                ("login", "/login".to_owned(), 200),
                ("register", "/register".to_owned(), 200),
                ("share (signed out)", format!("/s/{}", s.slug), 200),
                ("not found", format!("/nope/{}", Uuid::new_v4()), 404),
                ("share JSON", format!("/api/v1/s/{}", s.slug), 200),
            ],
            Role::Learner => vec![
                ("share (learner)", format!("/s/{}", s.slug), 200),
                ("share with a form error", form_error.clone(), 200),
                ("my courses", "/courses".to_owned(), 200),
                ("account", "/account".to_owned(), 200),
                (
                    "resource page",
                    format!("/s/{}/r/{}", s.slug, s.resource),
                    200,
                ),
            ],
            Role::Admin => vec![
                ("console home", "/admin".to_owned(), 200),
                ("dashboard", format!("/admin/t/{t}"), 200),
                ("share editor", format!("/admin/t/{t}/s/{}", s.id), 200),
                ("codes", format!("/admin/t/{t}/s/{}/codes", s.id), 200),
                ("learners", format!("/admin/t/{t}/s/{}/learners", s.id), 200),
                ("audit log", format!("/admin/t/{t}/audit"), 200),
                ("tokens", format!("/admin/t/{t}/tokens"), 200),
                ("webhooks", format!("/admin/t/{t}/webhooks"), 200),
            ],
        }
    };

    let tallies: Arc<Mutex<BTreeMap<String, Tally>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let timeout = Duration::from_secs(args.request_timeout_secs);
    let workers = (0..args.clients).map(|i| {
        let role = match i % 3 {
            0 => Role::SignedOut,
            1 => Role::Learner,
            _ => Role::Admin,
        };
        let client = match role {
            Role::SignedOut => drive::client(),
            Role::Learner => Ok(learners[(i / 3) % learners.len()].1.clone()),
            Role::Admin => Ok(admin.clone()),
        };
        let pages = pages(role);
        let tallies = Arc::clone(&tallies);
        let base = base.clone();
        async move {
            let client = client?;
            let mut n = i;
            while Instant::now() < deadline {
                let (kind, path, expected) = &pages[n % pages.len()];
                let language = if (n / pages.len()) % 2 == 0 {
                    "en"
                } else {
                    "zh-CN"
                };
                n += 1;
                let request = client
                    .get(format!("{base}{path}"))
                    .header("accept", "text/html,application/xhtml+xml")
                    .header("accept-language", language)
                    .timeout(timeout);
                let outcome = match request.send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        // The whole body must arrive, not only the head.
                        match response.bytes().await {
                            Ok(_) => Ok(status),
                            Err(error) => Err(format!("{path} ({language}): body: {error}")),
                        }
                    }
                    Err(error) => Err(format!("{path} ({language}): {error}")),
                };
                let mut tallies = tallies.lock().expect("tally lock");
                let tally = tallies.entry(format!("{kind} [{language}]")).or_default();
                match outcome {
                    Ok(status) => {
                        *tally.answered.entry(status).or_default() += 1;
                        if status >= 500 || status != *expected {
                            if status < 500 {
                                tally.unexpected += 1;
                            }
                            tally.first_failure.get_or_insert_with(|| {
                                format!("{path} ({language}): {status}, expected {expected}")
                            });
                        }
                    }
                    Err(failure) => {
                        tally.unanswered += 1;
                        tally.first_failure.get_or_insert(failure);
                    }
                }
            }
            anyhow::Ok(())
        }
    });
    let started = Instant::now();
    for worker in join_all(workers).await {
        worker?;
    }
    let wall = started.elapsed();

    let tallies = tallies.lock().expect("tally lock");
    let mut total = 0u64;
    let mut unanswered = 0u64;
    let mut server_errors = 0u64;
    let mut unexpected = 0u64;
    let mut kinds = serde_json::Map::new();
    for (kind, tally) in tallies.iter() {
        let answered: u64 = tally.answered.values().sum();
        let errors: u64 = tally
            .answered
            .iter()
            .filter(|(status, _)| **status >= 500)
            .map(|(_, n)| n)
            .sum();
        total += answered + tally.unanswered;
        unanswered += tally.unanswered;
        server_errors += errors;
        unexpected += tally.unexpected;
        kinds.insert(
            kind.clone(),
            json!({
                "statuses": tally.answered.iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "unanswered": tally.unanswered,
                "unexpected": tally.unexpected,
                "first_failure": tally.first_failure,
            }),
        );
    }
    let report: Value = json!({
        "clients": args.clients,
        "secs": wall.as_secs_f64(),
        "requests": total,
        "per_second": total as f64 / wall.as_secs_f64(),
        "unanswered": unanswered,
        "server_errors": server_errors,
        "unexpected_statuses": unexpected,
        "pages": kinds,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    anyhow::ensure!(
        total > 0 && unanswered == 0 && server_errors == 0 && unexpected == 0,
        "soak failed: {unanswered} unanswered, {server_errors} 5xx and {unexpected} unexpected \
         statuses of {total} requests"
    );
    Ok(())
}
