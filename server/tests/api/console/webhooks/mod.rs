//! Webhooks against real receivers. Shared here: a scripted receiver that
//! records what it is sent, a relay with quick retries, a subscription, and
//! every kind of event an admin's and a learner's actions produce.

mod delivery;
mod endpoints;

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
use uuid::Uuid;

use crate::support::app::TestApp;
use crate::support::course::{course, enter_code, issue, learners, open};

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
        // An endpoint that hangs is paused for moments only.
        pause_ms: 20,
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
