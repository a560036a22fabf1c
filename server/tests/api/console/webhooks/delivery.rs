//! The outbox relay's deliveries: signed, retried through 500s and
//! timeouts, each event accepted exactly once (also with two relays sharing
//! the work), dead-lettered after its attempts and redelivered from the
//! console; endpoints on the internal network are never called.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use engine::{
    delivery::{Attempted, Recorded, RetryPolicy},
    webhooks::relay,
};
use serde_json::json;
use server::{config::sections::WebhookSettings, relay::Relay};
use sqlx::PgPool;
use uuid::Uuid;

use super::{Answer, Seen, every_kind_of_event, receiver, relay_settings, relay_until, subscribe};
use crate::support::app::spawn_app;
use crate::support::course::{admin, course, issue};

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
    // Every answer is an acceptance: a timeout here would be a loaded
    // machine, and its retry an honest second attempt, not a double lease.
    let settings = WebhookSettings {
        timeout_ms: 5_000,
        ..relay_settings(8)
    };
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

/// The lease itself, without HTTP: relays leasing at the same moment
/// never lease one delivery twice. A relay whose statement began before
/// another's lease committed must see that lease when it takes the row
/// (the due time is checked again on the row it locks), else both send.
#[sqlx::test(migrations = "../migrations")]
async fn relays_leasing_at_once_never_lease_a_delivery_twice(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, _receiver) = receiver(|_| Answer::Accept).await;
    subscribe(&app, &admin, &url).await;
    let lease = Duration::from_secs(600);
    for round in 0..6 {
        sqlx::query(
            "INSERT INTO outbox (tenant_id, id, event_type, payload)
             SELECT $1, gen_random_uuid(), 'batch.issued', '{}'::jsonb
               FROM generate_series(1, 200)",
        )
        .bind(admin.tenant)
        .execute(&pool)
        .await
        .expect("events");
        while relay::fan_out(&pool, 1_000).await.expect("fan out") > 0 {}
        let claimers = (0..8).map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut leased = Vec::new();
                // Every claimer keeps claiming until nothing is left to
                // lease, so all eight race to the last row.
                loop {
                    let due = relay::claim_due(&pool, 3, lease).await.expect("claim");
                    if due.is_empty() {
                        let left: i64 = sqlx::query_scalar(
                            "SELECT count(*) FROM webhook_deliveries
                             WHERE delivered_at IS NULL AND next_attempt_at <= now()",
                        )
                        .fetch_one(&pool)
                        .await
                        .expect("left");
                        if left == 0 {
                            return leased;
                        }
                    }
                    leased.extend(due.into_iter().map(|d| (d.event_id, d.attempt)));
                }
            })
        });
        let mut leased: Vec<(Uuid, i32)> = Vec::new();
        for claimer in futures::future::join_all(claimers).await {
            leased.extend(claimer.expect("claimer"));
        }
        let mut events: Vec<Uuid> = leased.iter().map(|(id, _)| *id).collect();
        events.sort();
        events.dedup();
        assert_eq!(
            (events.len(), leased.len()),
            (200, 200),
            "round {round}: a delivery was leased twice"
        );
        assert!(
            leased.iter().all(|(_, attempt)| *attempt == 1),
            "round {round}"
        );
        let attempts: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM webhook_deliveries WHERE attempts <> 1 AND delivered_at IS NULL",
        )
        .fetch_one(&pool)
        .await
        .expect("attempts");
        assert_eq!(attempts, 0, "round {round}");
        sqlx::query(
            "UPDATE webhook_deliveries SET delivered_at = now() WHERE delivered_at IS NULL",
        )
        .execute(&pool)
        .await
        .expect("settle");
    }
}

/// The attempt number is the lease's token: a relay that stalled past its
/// lease never records over a later one, also after the delivery was
/// dead-lettered and put back in line from the console (which gives it a
/// fresh retry budget, never a token used before).
#[sqlx::test(migrations = "../migrations")]
async fn a_stalled_relay_never_records_over_a_redelivered_lease(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, _receiver) = receiver(|_| Answer::Accept).await;
    let (endpoint, _) = subscribe(&app, &admin, &url).await;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 1).await;
    while relay::fan_out(&pool, 100).await.expect("fan out") > 0 {}
    let policy = RetryPolicy {
        max_attempts: 2,
        base: Duration::from_millis(1),
        max: Duration::from_millis(1),
    };
    let failed = Attempted::Failed {
        status: Some(500),
        error: "answered 500".to_owned(),
    };
    let lease = Duration::from_secs(600);
    // Relay A leases the first attempt and stalls: its lease runs out.
    let stalled = relay::claim_due(&pool, 8, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(stalled.len(), 1, "one event: batch.issued");
    // Relay B leases the second, the last allowed; it fails: dead.
    let second = relay::claim_due(&pool, 8, lease).await.expect("claim");
    assert_eq!(second.len(), 1);
    assert_eq!(
        relay::record(&pool, &second[0], &failed, &policy)
            .await
            .expect("record"),
        Recorded::Dead
    );
    // The console puts it back in line; relay C leases it.
    let redelivered = admin
        .client
        .post(format!("{}/api/admin/webhooks/redeliver", app.address))
        .form(&[
            ("tenant_id", admin.tenant.to_string()),
            ("endpoint_id", endpoint.to_string()),
            ("event_id", stalled[0].event_id.to_string()),
        ])
        .send()
        .await
        .expect("redeliver");
    assert_eq!(redelivered.status(), 200);
    let third = relay::claim_due(&pool, 8, lease).await.expect("claim");
    assert_eq!(third.len(), 1);
    assert_ne!(
        third[0].attempt, stalled[0].attempt,
        "a lease token handed out twice"
    );
    // Relay A wakes: its request went through, but its lease is long gone.
    assert_eq!(
        relay::record(
            &pool,
            &stalled[0],
            &Attempted::Delivered { status: 200 },
            &policy
        )
        .await
        .expect("record"),
        Recorded::LeaseLost
    );
    // The redelivery has its own budget: one failure is tried again.
    assert_eq!(
        relay::record(&pool, &third[0], &failed, &policy)
            .await
            .expect("record"),
        Recorded::WillRetry
    );
    let (delivered, dead): (bool, bool) = sqlx::query_as(
        "SELECT delivered_at IS NOT NULL, dead_at IS NOT NULL FROM webhook_deliveries",
    )
    .fetch_one(&pool)
    .await
    .expect("the delivery");
    assert_eq!((delivered, dead), (false, false), "waiting for its retry");
    // The console counts the attempts since the redelivery: one.
    let troubled =
        engine::webhooks::endpoints::troubled(&pool, engine::tenants::TenantId(admin.tenant), 10)
            .await
            .expect("troubled");
    assert_eq!(troubled.len(), 1);
    assert_eq!(troubled[0].attempts, 1, "{troubled:?}");
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
