//! One tenant's backlog never holds up another's: the webhook relay and
//! the mail relay lease due work round-robin across tenants (each
//! tenant's oldest first, then each one's next), so a tenant with
//! thousands of waiting deliveries or mails delays only itself; an
//! endpoint that keeps timing out is paused a while instead of taking the
//! relay's every round.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{extract::State, http::StatusCode, routing::post};
use serde_json::json;
use server::{config::sections::WebhookSettings, relay::Relay};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::course::{Admin, admin, course, issue};
use crate::support::mail::spawn_app_with_mail;

/// A receiver for two tenants' endpoints: `/slow` answers 500 (A's, which
/// keep failing), `/ok` answers 200 (B's); every arrival is logged in
/// order, by path.
async fn shared_receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    async fn failing(State(log): State<Arc<Mutex<Vec<String>>>>) -> StatusCode {
        log.lock().expect("lock").push("a".into());
        StatusCode::INTERNAL_SERVER_ERROR
    }
    async fn accepting(State(log): State<Arc<Mutex<Vec<String>>>>) -> StatusCode {
        log.lock().expect("lock").push("b".into());
        StatusCode::OK
    }
    let app = axum::Router::new()
        .route("/slow", post(failing))
        .route("/ok", post(accepting))
        .with_state(log.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, log)
}

/// An endpoint of `admin`'s tenant at `url` for batches issued.
async fn endpoint(app: &crate::support::app::TestApp, admin: &Admin, url: &str) -> Uuid {
    let tenant = admin.tenant.to_string();
    let response = admin
        .client
        .post(format!("{}/api/admin/webhooks/create", app.address))
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("url", url),
            ("batch_issued", "on"),
        ])
        .send()
        .await
        .expect("create");
    assert_eq!(response.status(), 200);
    let created: serde_json::Value = response.json().await.expect("json");
    created["id"].as_str().expect("id").parse().expect("uuid")
}

fn quick_relay(timeout_ms: u64) -> WebhookSettings {
    WebhookSettings {
        relay: true,
        poll_interval_ms: 10,
        timeout_ms,
        max_attempts: 20,
        backoff_base_ms: 60_000,
        backoff_max_secs: 600,
        allow_private_targets: true,
        pause_ms: 60_000,
    }
}

/// Tenant A has 60 deliveries waiting (an endpoint that answers 500);
/// tenant B's one delivery, due after all of them, arrives in the relay's
/// first rounds, not after A's backlog.
#[sqlx::test(migrations = "../migrations")]
async fn another_tenants_webhook_backlog_never_holds_up_yours(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let (base, log) = shared_receiver().await;
    let a = admin(&app).await;
    let b = admin(&app).await;
    endpoint(&app, &a, &format!("{base}/slow")).await;
    let course_a = course(&app, &a, json!({})).await;
    for _ in 0..60 {
        issue(&app, &a, course_a.share, 1).await;
    }
    endpoint(&app, &b, &format!("{base}/ok")).await;
    let course_b = course(&app, &b, json!({})).await;
    issue(&app, &b, course_b.share, 1).await;
    let relay = Relay::new(pool, &quick_relay(2_000)).expect("relay");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !log.lock().expect("lock").contains(&"b".to_owned()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "B's delivery never came"
        );
        relay.round().await.expect("round");
    }
    let log = log.lock().expect("lock").clone();
    let position = log.iter().position(|p| p == "b").expect("b");
    assert!(
        position < 16,
        "B's delivery came after {position} of A's (A has 60 waiting): {log:?}"
    );
}

/// Tenant A has 150 mails waiting; tenant B's one mail, queued after all
/// of them, is among the first the relay sends.
#[sqlx::test(migrations = "../migrations")]
async fn another_tenants_mail_backlog_never_holds_up_yours(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let a = admin(&app).await;
    let b = admin(&app).await;
    // Queued in the past, as a backlog is, before the relay looks.
    sqlx::query(
        "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params, next_attempt_at)
         SELECT gen_random_uuid(), $1, 'code_bound', 'a-' || n || '@example.com', 'en',
                '{\"course\": \"A\", \"course_slug\": \"a\", \"tenant\": \"A\"}',
                now() - interval '1 hour' + n * interval '1 second'
           FROM generate_series(1, 150) AS n",
    )
    .bind(a.tenant)
    .execute(&app.pool)
    .await
    .expect("A's backlog");
    sqlx::query(
        "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params, next_attempt_at)
         VALUES (gen_random_uuid(), $1, 'code_bound', 'b@example.com', 'en',
                 '{\"course\": \"B\", \"course_slug\": \"b\", \"tenant\": \"B\"}', now() - interval '1 minute')",
    )
    .bind(b.tenant)
    .execute(&app.pool)
    .await
    .expect("B's mail");
    sink.wait_for("b@example.com", "B", crate::support::mail::MAIL_WAIT)
        .await;
    let received = sink.received();
    let position = received
        .iter()
        .position(|mail| mail.to.iter().any(|to| to == "b@example.com"))
        .expect("B's mail");
    assert!(position < 16, "B's mail came after {position} of A's 150");
}

/// Tenant A (5 mails a minute, `mail.tenant_per_minute`) has 20 mails
/// waiting: it sends its share and the rest wait unattempted, while
/// tenant B's mails and an account's own mail, due as long as A's,
/// arrive through the real SMTP server.
#[sqlx::test(migrations = "../migrations")]
async fn a_tenant_past_its_mail_share_waits_while_others_mail_goes(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let mut settings = crate::support::mail::mail_settings(&sink);
    settings.mail.tenant_per_minute = 5;
    let app = crate::support::app::spawn_app_with(pool, settings).await;
    let a = admin(&app).await;
    let b = admin(&app).await;
    let queue = |tenant: Option<Uuid>, prefix: &'static str, n: i32| {
        let pool = app.pool.clone();
        async move {
            sqlx::query(
                "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params, next_attempt_at)
                 SELECT gen_random_uuid(), $1, 'code_bound', $2 || '-' || k || '@example.com', 'en',
                        '{\"course\": \"C\", \"course_slug\": \"c\", \"tenant\": \"T\"}',
                        now() - interval '1 hour' + k * interval '1 millisecond'
                   FROM generate_series(1, $3) AS k",
            )
            .bind(tenant)
            .bind(prefix)
            .bind(n)
            .execute(&pool)
            .await
            .expect("queued");
        }
    };
    queue(Some(a.tenant), "a", 20).await;
    queue(Some(b.tenant), "b", 3).await;
    queue(None, "own", 1).await;
    for to in [
        "b-1@example.com",
        "b-2@example.com",
        "b-3@example.com",
        "own-1@example.com",
    ] {
        sink.wait_for(to, "", crate::support::mail::MAIL_WAIT).await;
    }
    // A's share arrives too; then the relay has nothing more it may send.
    crate::support::mail::wait_until(
        &app.pool,
        "SELECT 'idle' FROM mail_outbox WHERE tenant_id IS NOT NULL
         HAVING count(*) FILTER (WHERE attempts > 0 AND sent_at IS NULL) = 0
            AND count(*) FILTER (WHERE sent_at IS NOT NULL) >= 8",
    )
    .await;
    let from_a = |received: &[harness::smtp::Received]| {
        received
            .iter()
            .filter(|m| m.to.iter().any(|to| to.starts_with("a-")))
            .count()
    };
    let arrived = from_a(&sink.received());
    let (attempted, counted, windows): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM mail_outbox WHERE tenant_id = $1 AND attempts > 0),
                (SELECT coalesce(sum(attempts), 0) FROM mail_windows WHERE kind = 'tenant' AND tenant_id = $1),
                (SELECT count(*) FROM mail_windows WHERE kind = 'tenant' AND tenant_id = $1)",
    )
    .bind(a.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("A's counts");
    assert_eq!(attempted, counted, "every attempt of A's counted");
    // One minute's share (two if the minute turned meanwhile); the rest
    // wait, never tried.
    assert!(arrived >= 5, "A's share arrived: {arrived}");
    assert!(
        i64::try_from(arrived).expect("n") <= 5 * windows && attempted <= 5 * windows,
        "{arrived} of A's arrived, {attempted} tried, in {windows} minute(s)"
    );
    assert!(attempted < 20, "A's backlog waits");
}

/// An endpoint that answers nothing (a tarpit) costs the relay a timeout
/// each attempt: after a few in a row it is paused, and the next rounds
/// lease none of its deliveries until the pause ends.
#[sqlx::test(migrations = "../migrations")]
async fn an_endpoint_that_keeps_timing_out_is_paused(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    // Accepts connections and never answers.
    let tarpit = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", tarpit.local_addr().expect("addr"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = tarpit.accept().await {
            held.push(socket);
        }
    });
    let a = admin(&app).await;
    let endpoint_id = endpoint(&app, &a, &url).await;
    let course_a = course(&app, &a, json!({})).await;
    for _ in 0..4 {
        issue(&app, &a, course_a.share, 1).await;
    }
    // One delivery at a time would take four rounds: attempts are
    // counted per delivery; pauses per endpoint.
    let relay = Relay::new(pool.clone(), &quick_relay(200)).expect("relay");
    let mut rounds = 0;
    let paused = || async {
        sqlx::query_scalar::<_, bool>(
            "SELECT coalesce(paused_until > now(), false) FROM webhook_endpoints WHERE id = $1",
        )
        .bind(endpoint_id)
        .fetch_one(&pool)
        .await
        .expect("paused")
    };
    while !paused().await {
        rounds += 1;
        assert!(
            rounds <= 3,
            "still not paused after {rounds} rounds of timeouts"
        );
        relay.round().await.expect("round");
    }
    let attempts = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT coalesce(sum(attempts), 0)::bigint FROM webhook_deliveries WHERE endpoint_id = $1",
        )
        .bind(endpoint_id)
        .fetch_one(&pool)
        .await
        .expect("attempts")
    };
    let before = attempts().await;
    // Due again (as if the backoff had passed): still paused, still left.
    sqlx::query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = $1")
        .bind(endpoint_id)
        .execute(&pool)
        .await
        .expect("due");
    relay.round().await.expect("round");
    assert_eq!(attempts().await, before, "a paused endpoint is not tried");
}
