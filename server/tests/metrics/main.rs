//! Prometheus metrics move as the system works: scraped before and after
//! a settlement, a replay, a leaked-code attempt and a throttled attempt.
//!
//! Its own test binary (its own process): the `metrics` recorder is
//! process-wide, so no other test's traffic moves these counters.

#[path = "../api/support/mod.rs"]
#[expect(
    dead_code,
    reason = "shared with the api tests; this binary uses a few"
)]
mod support;

use secrecy::SecretString;
use serde_json::json;
use sqlx::PgPool;

use support::app::{TestApp, redis_url, spawn_app_with, test_settings};
use support::course::{admin, course, enter_code, issue, learners, open};

const TOKEN: &str = "metrics-test-token";

async fn scrape(app: &TestApp) -> String {
    let response = app
        .client
        .get(format!("{}/metrics", app.address))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("scrape");
    assert_eq!(response.status(), 200);
    response.text().await.expect("body")
}

/// The value of the series `series` (`name{labels}` exactly as rendered),
/// 0 when it does not exist yet.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok()).flatten()
        })
        .unwrap_or(0.0)
}

/// The sum of every series of metric `name` whose labels contain `label`.
fn sum(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

#[sqlx::test(migrations = "../migrations")]
async fn counters_move_with_settlements_replays_leaks_and_throttles(pool: PgPool) {
    let mut settings = test_settings(&redis_url());
    settings.metrics.token = Some(SecretString::from(TOKEN));
    settings.throttle.code_per_account = 3;
    let app = spawn_app_with(pool, settings).await;

    // Protected: no token or a wrong one is refused.
    let anonymous = app.get("/metrics").await;
    assert_eq!(anonymous.status(), 401);
    let wrong = app
        .client
        .get(format!("{}/metrics", app.address))
        .bearer_auth("nope")
        .send()
        .await
        .expect("scrape");
    assert_eq!(wrong.status(), 401);

    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let mut people = learners(&app, 2).await;
    let (_, thief) = people.pop().expect("thief");
    let (_, learner) = people.pop().expect("learner");
    let before = scrape(&app).await;

    // A first access binds; a retry with the same key replays; a return visit.
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(
        open(&app, &learner, &course, Some("k-1")).await.status(),
        200
    );
    assert_eq!(
        open(&app, &learner, &course, Some("k-1")).await.status(),
        200
    );
    // Another account tries the bound code: a leak signal.
    let leaked = enter_code(&app, &thief, &course.slug, &codes[0].1).await;
    assert_eq!(leaked.status(), 409);
    // Then keeps guessing until throttled (3 per window).
    let mut throttled = false;
    for _ in 0..5 {
        if enter_code(&app, &thief, &course.slug, &codes[0].1)
            .await
            .status()
            == 429
        {
            throttled = true;
        }
    }
    assert!(throttled, "the per-account limit answered 429");

    let after = scrape(&app).await;
    let delta = |series: &str| value(&after, series) - value(&before, series);
    assert_eq!(
        delta(r#"admitone_settlements_total{outcome="bound"}"#),
        1.0,
        "{after}"
    );
    assert_eq!(
        delta(r#"admitone_settlements_total{outcome="replayed"}"#),
        1.0
    );
    assert_eq!(delta("admitone_idempotent_replays_total"), 1.0);
    assert_eq!(delta(r#"admitone_reservations_total{outcome="ok"}"#), 1.0);
    assert!(delta("admitone_reservation_script_seconds_count") >= 1.0);
    assert!(delta("admitone_settlement_transaction_seconds_count") >= 2.0);
    assert!(delta("admitone_bound_code_attempts_total") >= 1.0);
    assert!(delta(r#"admitone_throttled_total{scope="code-account"}"#) >= 1.0);
    let requests = |text: &str| sum(text, "admitone_http_requests_total", r#"status="200""#);
    assert!(requests(&after) - requests(&before) >= 4.0);
    assert!(
        after.contains(r#"route="/api/v1/s/{slug}/resources/{resource_id}/content""#),
        "routes are labelled by pattern, never by raw path: {after}"
    );
    assert!(!after.contains(&course.slug), "no raw paths in labels");
    // State read at scrape time.
    assert_eq!(value(&after, "admitone_redis_up"), 1.0);
    assert!(
        value(&after, "admitone_outbox_backlog") >= 3.0,
        "events wait for the relay"
    );
    assert!(after.contains(r#"admitone_db_pool_connections{state="idle"}"#));
}

#[sqlx::test(migrations = "../migrations")]
async fn without_a_token_there_is_no_metrics_route(pool: PgPool) {
    let app = spawn_app_with(pool, test_settings(&redis_url())).await;
    assert_eq!(app.get("/metrics").await.status(), 404);
}
