//! The outbox relay against real receivers: signed deliveries, retries
//! through 500s and timeouts, exactly one acceptance per event, two relays
//! sharing the work, dead letters and redelivery.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    routing::post,
};
use serde_json::json;
use server::{config::sections::WebhookSettings, relay::Relay};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app};
use crate::support::course::{admin, course, enter_code, issue, learners, open};

/// What a test receiver answers to the `n`th attempt (1-based) of an event.
type Script = fn(u32) -> Answer;

#[derive(Clone, Copy)]
enum Answer {
    Accept,
    Fail,
    /// Answer only after the relay's timeout (the relay gives up first).
    Hang,
}

#[derive(Default)]
struct Seen {
    /// Attempts per event id.
    attempts: HashMap<String, u32>,
    /// Events accepted (answered 2xx in time), with their type.
    accepted: Vec<(String, String)>,
    bad_signatures: u32,
}

#[derive(Clone)]
struct Receiver {
    secret: Arc<Mutex<String>>,
    seen: Arc<Mutex<Seen>>,
    script: Script,
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let event_id = header("admitone-event-id");
    let event_type = header("admitone-event-type");
    // Verify the way the README tells integrators to.
    let signature = header("admitone-signature");
    let timestamp: i64 = signature
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let secret = receiver.secret.lock().expect("lock").clone();
    let expected = engine::webhooks::relay::sign(&secret, timestamp, &body);
    let fresh = (time::OffsetDateTime::now_utc().unix_timestamp() - timestamp).abs() < 300;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let attempt = {
        let mut seen = receiver.seen.lock().expect("lock");
        if signature != expected || !fresh || body["id"] != event_id.as_str() {
            seen.bad_signatures += 1;
            return StatusCode::UNAUTHORIZED;
        }
        let n = seen.attempts.entry(event_id.clone()).or_default();
        *n += 1;
        *n
    };
    match (receiver.script)(attempt) {
        Answer::Accept => {
            receiver
                .seen
                .lock()
                .expect("lock")
                .accepted
                .push((event_id, event_type));
            StatusCode::OK
        }
        Answer::Fail => StatusCode::INTERNAL_SERVER_ERROR,
        Answer::Hang => {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            StatusCode::OK
        }
    }
}

/// Starts a receiver on port 0; returns its URL and handle.
async fn receiver(script: Script) -> (String, Receiver) {
    let receiver = Receiver {
        secret: Arc::default(),
        seen: Arc::default(),
        script,
    };
    let app = axum::Router::new()
        .route("/hook", post(receive))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, receiver)
}

/// Fast retries, a short timeout.
fn relay_settings(max_attempts: i32) -> WebhookSettings {
    WebhookSettings {
        relay: true,
        poll_interval_ms: 10,
        timeout_ms: 400,
        max_attempts,
        backoff_base_ms: 20,
        backoff_max_secs: 1,
        // The receivers listen on loopback.
        allow_private_targets: true,
    }
}

/// An endpoint for every event, made through the console's server
/// function; returns its id and secret.
async fn subscribe(
    app: &TestApp,
    admin: &crate::support::course::Admin,
    url: &str,
) -> (Uuid, String) {
    let tenant = admin.tenant.to_string();
    let mut fields = vec![("tenant_id", tenant.as_str()), ("url", url)];
    for event in [
        "code_bound",
        "code_unbound",
        "code_revoked",
        "access_recorded",
        "batch_issued",
    ] {
        fields.push((event, "on"));
    }
    let response = admin
        .client
        .post(format!("{}/api/admin/webhooks/create", app.address))
        .form(&fields)
        .send()
        .await
        .expect("create");
    assert_eq!(
        response.status(),
        200,
        "{}",
        response.text().await.unwrap_or_default()
    );
    let created: serde_json::Value = response.json().await.expect("json");
    (
        created["id"].as_str().expect("id").parse().expect("uuid"),
        created["secret"].as_str().expect("secret").to_owned(),
    )
}

/// Makes one event of each type happen; returns how many events exist.
async fn every_kind_of_event(app: &TestApp, admin: &crate::support::course::Admin) -> i64 {
    let course = course(app, admin, json!({})).await;
    let codes = issue(app, admin, course.share, 3).await;
    let (_, learner) = learners(app, 1).await.remove(0);
    assert_eq!(
        enter_code(app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(app, &learner, &course, None).await.status(), 200);
    let unbind = admin
        .client
        .post(format!(
            "{}/api/v1/codes/{}/unbind",
            app.address, codes[0].0
        ))
        .json(&json!({ "reason": "moved", "revoke": false }))
        .send()
        .await
        .expect("unbind");
    assert_eq!(
        unbind.status(),
        200,
        "{}",
        unbind.text().await.unwrap_or_default()
    );
    let revoke = admin
        .client
        .post(format!(
            "{}/api/v1/codes/{}/revoke",
            app.address, codes[1].0
        ))
        .send()
        .await
        .expect("revoke");
    assert!(
        revoke.status().is_success(),
        "{}",
        revoke.text().await.unwrap_or_default()
    );
    let types: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT event_type FROM outbox ORDER BY event_type")
            .fetch_all(&app.pool)
            .await
            .expect("types");
    assert_eq!(
        types,
        [
            "access.recorded",
            "batch.issued",
            "code.bound",
            "code.revoked",
            "code.unbound"
        ],
        "one event of each kind"
    );
    sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

/// Runs relay rounds until `done` or 30 s pass.
async fn relay_until(relay: &Relay, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relay did not finish in time"
        );
        let round = relay.round().await.expect("round");
        if round.is_idle() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn each_event_is_accepted_once_through_500s_and_timeouts(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    // First attempt: 500. Second: too slow. Third: accepted.
    let (url, receiver) = receiver(|attempt| match attempt {
        1 => Answer::Fail,
        2 => Answer::Hang,
        _ => Answer::Accept,
    })
    .await;
    let (_, secret) = subscribe(&app, &admin, &url).await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    *receiver.secret.lock().expect("lock") = secret;
    let events = every_kind_of_event(&app, &admin).await;

    let relay = Relay::new(pool.clone(), &relay_settings(8)).expect("relay");
    let seen = receiver.seen.clone();
    relay_until(&relay, || {
        seen.lock().expect("lock").accepted.len() >= usize::try_from(events).unwrap_or(0)
    })
    .await;
    // A few more rounds: nothing is sent again.
    for _ in 0..5 {
        relay.round().await.expect("round");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    {
        let seen = receiver.seen.lock().expect("lock");
        assert_eq!(seen.bad_signatures, 0);
        assert_eq!(seen.accepted.len() as i64, events, "{:?}", seen.accepted);
        let mut ids: Vec<&String> = seen.accepted.iter().map(|(id, _)| id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len() as i64, events, "an event was accepted twice");
        assert!(
            seen.attempts.values().all(|n| *n == 3),
            "{:?}",
            seen.attempts
        );
    }
    let (delivered, pending): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL),
                count(*) FILTER (WHERE delivered_at IS NULL)
         FROM webhook_deliveries",
    )
    .fetch_one(&pool)
    .await
    .expect("deliveries");
    assert_eq!((delivered, pending), (events, 0));
}

#[sqlx::test(migrations = "../migrations")]
async fn two_relays_deliver_each_event_once(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, receiver) = receiver(|_| Answer::Accept).await;
    let (_, secret) = subscribe(&app, &admin, &url).await;
    *receiver.secret.lock().expect("lock") = secret;
    // Several rounds' worth of events.
    let mut events = 0;
    for _ in 0..4 {
        events = every_kind_of_event(&app, &admin).await;
    }
    let settings = relay_settings(8);
    let (first, second) = (
        Relay::new(pool.clone(), &settings).expect("relay"),
        Relay::new(pool.clone(), &settings).expect("relay"),
    );
    let target = usize::try_from(events).unwrap_or(0);
    let run = |relay: Relay, seen: Arc<Mutex<Seen>>| async move {
        relay_until(&relay, || {
            seen.lock().expect("lock").accepted.len() >= target
        })
        .await;
    };
    tokio::join!(
        run(first, receiver.seen.clone()),
        run(second, receiver.seen.clone())
    );
    let seen = receiver.seen.lock().expect("lock");
    assert_eq!(seen.accepted.len(), target, "an event was delivered twice");
    assert!(
        seen.attempts.values().all(|n| *n == 1),
        "{:?}",
        seen.attempts
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn failing_deliveries_are_dead_lettered_then_redelivered_from_the_console(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, receiver) = receiver(|attempt| {
        if attempt <= 2 {
            Answer::Fail
        } else {
            Answer::Accept
        }
    })
    .await;
    let (endpoint, secret) = subscribe(&app, &admin, &url).await;
    *receiver.secret.lock().expect("lock") = secret;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 1).await;

    // Two attempts allowed: both fail, the delivery is dead.
    let relay = Relay::new(pool.clone(), &relay_settings(2)).expect("relay");
    let dead = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM webhook_deliveries WHERE dead_at IS NOT NULL AND delivered_at IS NULL",
        )
        .fetch_one(&pool)
        .await
        .expect("dead")
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while dead().await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never dead-lettered"
        );
        relay.round().await.expect("round");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The console lists it; a dead letter stays put.
    let page = admin
        .client
        .get(format!(
            "{}/api/admin/webhooks?tenant_id={}",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("list");
    assert_eq!(page.status(), 200);
    let page: serde_json::Value = page.json().await.expect("json");
    let troubled = page["deliveries"].as_array().expect("deliveries");
    assert_eq!(troubled.len(), 1, "{page}");
    assert_eq!(troubled[0]["event_type"], "batch.issued");
    assert_eq!(troubled[0]["dead"], true);
    let event = troubled[0]["event_id"].as_str().expect("event").to_owned();
    for _ in 0..3 {
        relay.round().await.expect("round");
    }
    assert!(receiver.seen.lock().expect("lock").accepted.is_empty());

    // Bad input changes nothing; a real redelivery goes out.
    let endpoint = endpoint.to_string();
    let tenant = admin.tenant.to_string();
    let redeliver = |event: String| {
        let client = admin.client.clone();
        let (endpoint, tenant) = (endpoint.clone(), tenant.clone());
        let url = format!("{}/api/admin/webhooks/redeliver", app.address);
        async move {
            client
                .post(url)
                .form(&[
                    ("tenant_id", tenant.as_str()),
                    ("endpoint_id", endpoint.as_str()),
                    ("event_id", event.as_str()),
                ])
                .send()
                .await
                .expect("redeliver")
                .status()
        }
    };
    assert_eq!(redeliver(Uuid::new_v4().to_string()).await, 404);
    assert_eq!(dead().await, 1);
    assert_eq!(redeliver(event.clone()).await, 200);
    assert_eq!(dead().await, 0);
    let seen = receiver.seen.clone();
    relay_until(&relay, || !seen.lock().expect("lock").accepted.is_empty()).await;
    assert_eq!(receiver.seen.lock().expect("lock").accepted.len(), 1);
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'webhook.redelivered'")
            .fetch_one(&pool)
            .await
            .expect("audit");
    assert_eq!(audited, 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn bad_webhook_input_gets_a_field_error_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let tenant = admin.tenant.to_string();
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM webhook_endpoints")
            .fetch_one(&pool)
            .await
            .expect("count")
    };
    let long = format!("https://example.com/{}", "a".repeat(2_100));
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("url", ""), ("code_bound", "on")], "url"),
        (&[("url", "ftp://example.com"), ("code_bound", "on")], "url"),
        (&[("url", &long), ("code_bound", "on")], "url"),
        (&[("url", "https://example.com/hook")], "events"),
    ];
    for (fields, field) in cases {
        let mut all = vec![("tenant_id", tenant.as_str())];
        all.extend_from_slice(fields);
        let response = admin
            .client
            .post(format!("{}/api/admin/webhooks/create", app.address))
            .form(&all)
            .send()
            .await
            .expect("create");
        assert_eq!(response.status(), 422, "{fields:?}");
        let error: serde_json::Value = response.json().await.expect("json");
        assert_eq!(error["Invalid"]["field"], field, "{fields:?}: {error}");
    }
    assert_eq!(count().await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn endpoints_on_the_internal_network_are_never_called(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, receiver) = receiver(|_| Answer::Accept).await;
    subscribe(&app, &admin, &url).await;
    // The same receiver by a name that resolves to loopback.
    let by_name = url.replace("127.0.0.1", "localhost");
    subscribe(&app, &admin, &by_name).await;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 1).await;

    let relay = Relay::new(
        pool.clone(),
        &WebhookSettings {
            allow_private_targets: false,
            ..relay_settings(1)
        },
    )
    .expect("relay");
    for _ in 0..5 {
        relay.round().await.expect("round");
    }
    assert_eq!(
        receiver.seen.lock().expect("lock").attempts.len(),
        0,
        "nothing reached the loopback receiver"
    );
    let errors: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT last_error FROM webhook_deliveries WHERE dead_at IS NOT NULL ORDER BY endpoint_id",
    )
    .fetch_all(&pool)
    .await
    .expect("deliveries");
    assert_eq!(
        errors.len(),
        2,
        "both were refused and dead-lettered: {errors:?}"
    );
    for error in errors {
        let error = error.unwrap_or_default();
        assert!(
            error.contains("not public"),
            "a coarse reason, no network detail: {error}"
        );
    }
}

/// Through the JSON API an endpoint is read and repointed: a receiver that
/// keeps failing is replaced by another URL, and every delivery not yet
/// made reaches the new one, signed with the same secret. A bad change
/// changes nothing; another tenant's token reads and changes nothing.
#[sqlx::test(migrations = "../migrations")]
async fn an_endpoint_is_read_and_repointed_through_the_api(pool: PgPool) {
    use crate::support::tokens::{as_token, create_token};
    use reqwest::Method;
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let token = create_token(&app, &admin, &["integrations"]).await;
    let stranger = create_token(
        &app,
        &crate::support::course::admin(&app).await,
        &["integrations"],
    )
    .await;
    let (broken_url, broken) = receiver(|_| Answer::Fail).await;
    let (good_url, good) = receiver(|_| Answer::Accept).await;
    let (endpoint, secret) = subscribe(&app, &admin, &broken_url).await;
    *broken.secret.lock().expect("lock") = secret.clone();
    *good.secret.lock().expect("lock") = secret;
    let events = every_kind_of_event(&app, &admin).await;
    let relay = Relay::new(pool.clone(), &relay_settings(50)).expect("relay");
    let failed = broken.seen.clone();
    relay_until(&relay, || !failed.lock().expect("lock").attempts.is_empty()).await;

    let path = format!("/api/v1/tenants/{}/webhooks/{endpoint}", admin.tenant);
    let (status, read) = as_token(&app, &token, Method::GET, &path, None).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["url"], broken_url.as_str());
    assert_eq!(read["disabled_at"], serde_json::Value::Null);
    for (body, field) in [
        (
            json!({ "url": "ftp://example.com/hook", "events": ["code.bound"] }),
            "url",
        ),
        (json!({ "url": good_url, "events": [] }), "events"),
        (
            json!({ "url": good_url, "events": ["code.sold"] }),
            "events",
        ),
    ] {
        let (status, refused) = as_token(&app, &token, Method::PUT, &path, Some(body)).await;
        assert_eq!(status, 422, "{refused}");
        assert_eq!(refused["field"], field, "{refused}");
    }
    for method in [Method::GET, Method::PUT] {
        let (status, _) = as_token(
            &app,
            &stranger,
            method.clone(),
            &path,
            Some(json!({ "url": good_url, "events": ["code.bound"] })),
        )
        .await;
        assert_eq!(status, 403, "{method}");
    }
    // Another tenant's owner, on their own tenant's path: no such endpoint.
    let stranger_admin = crate::support::course::admin(&app).await;
    let own = create_token(&app, &stranger_admin, &["integrations"]).await;
    let theirs = format!(
        "/api/v1/tenants/{}/webhooks/{endpoint}",
        stranger_admin.tenant
    );
    for method in [Method::GET, Method::PUT] {
        let (status, _) = as_token(
            &app,
            &own,
            method.clone(),
            &theirs,
            Some(json!({ "url": good_url, "events": ["code.bound"] })),
        )
        .await;
        assert_eq!(status, 404, "{method}");
    }
    let (_, unchanged) = as_token(&app, &token, Method::GET, &path, None).await;
    assert_eq!(
        unchanged["url"],
        broken_url.as_str(),
        "refusals changed nothing"
    );
    let unknown = format!(
        "/api/v1/tenants/{}/webhooks/{}",
        admin.tenant,
        Uuid::new_v4()
    );
    let (status, missing) = as_token(&app, &token, Method::GET, &unknown, None).await;
    assert_eq!(
        (status.as_u16(), &missing["code"]),
        (404, &json!("not_found"))
    );

    let all = [
        "code.bound",
        "code.unbound",
        "code.revoked",
        "access.recorded",
        "batch.issued",
    ];
    let (status, changed) = as_token(
        &app,
        &token,
        Method::PUT,
        &path,
        Some(json!({ "url": good_url, "events": all })),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["url"], good_url.as_str());
    let seen = good.seen.clone();
    relay_until(&relay, || {
        seen.lock().expect("lock").accepted.len() >= usize::try_from(events).unwrap_or(0)
    })
    .await;
    {
        let seen = good.seen.lock().expect("lock");
        assert_eq!(seen.bad_signatures, 0, "the secret stayed");
        assert_eq!(seen.accepted.len() as i64, events);
    }
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'webhook.updated' AND target_id = $1",
    )
    .bind(endpoint)
    .fetch_one(&pool)
    .await
    .expect("audit");
    assert_eq!(audited, 1, "one change, audited; refusals are not");
    let details: serde_json::Value = sqlx::query_scalar(
        "SELECT details FROM audit_log WHERE action = 'webhook.updated' AND target_id = $1",
    )
    .bind(endpoint)
    .fetch_one(&pool)
    .await
    .expect("details");
    assert_eq!(details["from"]["url"], broken_url.as_str());
    assert_eq!(details["to"]["url"], good_url.as_str());
}

/// A new address is the fix for the old one's failures: the deliveries
/// waiting out a backoff are tried at once, not hours later; one a relay
/// may hold this moment (due within a lease) is left alone, and a change
/// of events only keeps the schedule. The failing test came first: the
/// backoff stayed an hour away.
#[sqlx::test(migrations = "../migrations")]
async fn repointing_an_endpoint_tries_its_waiting_deliveries_now(pool: PgPool) {
    use crate::support::tokens::{as_token, create_token};
    use reqwest::Method;
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let token = create_token(&app, &admin, &["integrations"]).await;
    let (broken_url, broken) = receiver(|_| Answer::Fail).await;
    let (good_url, _) = receiver(|_| Answer::Accept).await;
    let (endpoint, secret) = subscribe(&app, &admin, &broken_url).await;
    *broken.secret.lock().expect("lock") = secret;
    every_kind_of_event(&app, &admin).await;
    let relay = Relay::new(pool.clone(), &relay_settings(50)).expect("relay");
    let failed = broken.seen.clone();
    relay_until(&relay, || !failed.lock().expect("lock").attempts.is_empty()).await;
    // Every delivery waits out an hour's backoff, but one, which looks
    // leased (due in two seconds).
    let waiting: Vec<Uuid> = sqlx::query_scalar(
        "UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'
         WHERE endpoint_id = $1 AND delivered_at IS NULL AND dead_at IS NULL RETURNING event_id",
    )
    .bind(endpoint)
    .fetch_all(&pool)
    .await
    .expect("backoff");
    assert!(waiting.len() >= 2, "{waiting:?}");
    let held = waiting[0];
    sqlx::query(
        "UPDATE webhook_deliveries SET next_attempt_at = now() + interval '2 seconds'
         WHERE endpoint_id = $1 AND event_id = $2",
    )
    .bind(endpoint)
    .bind(held)
    .execute(&pool)
    .await
    .expect("held");
    let due_in = |event: Uuid| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, f64>(
                "SELECT extract(epoch FROM next_attempt_at - now())::float8
                 FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2",
            )
            .bind(endpoint)
            .bind(event)
            .fetch_one(&pool)
            .await
            .expect("due")
        }
    };
    let path = format!("/api/v1/tenants/{}/webhooks/{endpoint}", admin.tenant);
    let all = [
        "code.bound",
        "code.unbound",
        "code.revoked",
        "access.recorded",
        "batch.issued",
    ];

    // Other events, the same address: the schedule stays.
    let (status, _) = as_token(
        &app,
        &token,
        Method::PUT,
        &path,
        Some(json!({ "url": broken_url, "events": all[..4] })),
    )
    .await;
    assert_eq!(status, 200);
    assert!(due_in(waiting[1]).await > 3000.0, "still an hour away");

    // A new address: tried now, but the held one.
    let (status, _) = as_token(
        &app,
        &token,
        Method::PUT,
        &path,
        Some(json!({ "url": good_url, "events": all })),
    )
    .await;
    assert_eq!(status, 200);
    for event in &waiting[1..] {
        assert!(due_in(*event).await <= 0.0, "{event} is due now");
    }
    let held_due = due_in(held).await;
    assert!(
        held_due > 0.0 && held_due <= 2.0,
        "the held one is left alone: {held_due}"
    );
    let retried: i64 = sqlx::query_scalar(
        "SELECT (details->>'retried_now')::bigint FROM audit_log
         WHERE action = 'webhook.updated' AND target_id = $1 AND details->'to'->>'url' = $2",
    )
    .bind(endpoint)
    .bind(&good_url)
    .fetch_one(&pool)
    .await
    .expect("audit");
    assert_eq!(retried, i64::try_from(waiting.len() - 1).expect("count"));
}
