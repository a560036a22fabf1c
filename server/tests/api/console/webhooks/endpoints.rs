//! Webhook endpoints: bad input gets a field error and changes nothing; an
//! endpoint is read and repointed through the API (its waiting deliveries
//! go to the new address, signed with the same secret, and are tried at
//! once); another tenant's token reads and changes nothing; an endpoint
//! disabled during a fan-out is left no delivery waiting forever.

use serde_json::json;
use server::relay::Relay;
use sqlx::PgPool;
use uuid::Uuid;

use super::{Answer, every_kind_of_event, receiver, relay_settings, relay_until, subscribe};
use crate::support::app::spawn_app;
use crate::support::course::admin;

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

/// A tenant has at most ten webhook endpoints (each one's deliveries cost
/// the shared relay): the eleventh is refused, saying why, and nothing is
/// added.
#[sqlx::test(migrations = "../migrations")]
async fn a_tenant_has_at_most_ten_endpoints(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    for n in 0..10 {
        subscribe(&app, &admin, &format!("https://example.com/hook/{n}")).await;
    }
    let tenant = admin.tenant.to_string();
    let refused = admin
        .client
        .post(format!("{}/api/admin/webhooks/create", app.address))
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("url", "https://example.com/hook/11"),
            ("code_bound", "on"),
        ])
        .send()
        .await
        .expect("create");
    assert_eq!(refused.status(), 409);
    let error: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(error["Refused"]["reason"], "too_many_endpoints", "{error}");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_endpoints")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(count, 10);
}

/// Runs what `endpoints::disable_endpoint` runs for `endpoint`, in a
/// transaction left open (the disabling in flight): the endpoint marked
/// disabled, its waiting deliveries dead-lettered.
async fn disabling_in_flight(
    pool: &PgPool,
    endpoint: Uuid,
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut disabling = pool.begin().await.expect("begin");
    sqlx::query("UPDATE webhook_endpoints SET disabled_at = now() WHERE id = $1")
        .bind(endpoint)
        .execute(&mut *disabling)
        .await
        .expect("disable");
    sqlx::query(
        "UPDATE webhook_deliveries SET dead_at = now(), last_error = 'endpoint disabled'
         WHERE endpoint_id = $1 AND delivered_at IS NULL AND dead_at IS NULL",
    )
    .bind(endpoint)
    .execute(&mut *disabling)
    .await
    .expect("dead-letter");
    disabling
}

/// Waits until `task` is done or waits on a lock in this database.
async fn until_done_or_waiting<T>(pool: &PgPool, task: &tokio::task::JoinHandle<T>) {
    for _ in 0..500 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 || task.is_finished() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("neither done nor waiting");
}

/// Deliveries that wait for an endpoint that is disabled: forever.
async fn stranded(pool: &PgPool, endpoint: Uuid) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM webhook_deliveries d
           JOIN webhook_endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
          WHERE d.endpoint_id = $1 AND e.disabled_at IS NOT NULL
            AND d.delivered_at IS NULL AND d.dead_at IS NULL",
    )
    .bind(endpoint)
    .fetch_one(pool)
    .await
    .expect("stranded deliveries")
}

/// An endpoint disabled while the relay fans an event out to it is left
/// no delivery waiting forever: the fan-out that runs while the disabling
/// is in flight waits for it and sees the endpoint disabled (a fan-out
/// reading it as it was would deliver after the disabling dead-lettered).
#[sqlx::test(migrations = "../migrations")]
async fn an_endpoint_disabled_during_a_fan_out_is_left_no_delivery_waiting(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, _receiver) = receiver(|_| Answer::Accept).await;
    let (endpoint, _) = subscribe(&app, &admin, &url).await;
    let course = crate::support::course::course(&app, &admin, json!({})).await;
    crate::support::course::issue(&app, &admin, course.share, 1).await;

    let disabling = disabling_in_flight(&pool, endpoint).await;
    let fanning = {
        let pool = pool.clone();
        tokio::spawn(async move { engine::webhooks::relay::fan_out(&pool, 100).await })
    };
    until_done_or_waiting(&pool, &fanning).await;
    disabling.commit().await.expect("commit");
    assert_eq!(fanning.await.expect("task").expect("fan out"), 1);
    assert_eq!(stranded(&pool, endpoint).await, 0);
}

/// The same for a redelivery from the console: one asked while the
/// endpoint's disabling is in flight waits for it and refuses, and the
/// dead letter stays dead (revived from the endpoint as it was, it would
/// wait forever).
#[sqlx::test(migrations = "../migrations")]
async fn a_redelivery_racing_the_endpoints_disabling_leaves_nothing_waiting(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let (url, _receiver) = receiver(|_| Answer::Accept).await;
    let (endpoint, _) = subscribe(&app, &admin, &url).await;
    let course = crate::support::course::course(&app, &admin, json!({})).await;
    crate::support::course::issue(&app, &admin, course.share, 1).await;
    while engine::webhooks::relay::fan_out(&pool, 100)
        .await
        .expect("fan out")
        > 0
    {}
    let event: Uuid =
        sqlx::query_scalar("UPDATE webhook_deliveries SET dead_at = now() RETURNING event_id")
            .fetch_one(&pool)
            .await
            .expect("a dead letter");
    let owner: Uuid = sqlx::query_scalar(
        "SELECT account_id FROM tenant_members WHERE tenant_id = $1 AND role = 'owner' LIMIT 1",
    )
    .bind(admin.tenant)
    .fetch_one(&pool)
    .await
    .expect("the owner");

    let disabling = disabling_in_flight(&pool, endpoint).await;
    let redelivering = {
        let pool = pool.clone();
        let tenant = engine::tenants::TenantId(admin.tenant);
        tokio::spawn(async move {
            engine::webhooks::endpoints::redeliver(
                &pool,
                tenant,
                engine::accounts::AccountId(owner),
                endpoint,
                event,
            )
            .await
        })
    };
    until_done_or_waiting(&pool, &redelivering).await;
    disabling.commit().await.expect("commit");
    let answer = redelivering.await.expect("task");
    assert!(
        matches!(
            answer,
            Err(engine::webhooks::WebhookError::DeliveryNotFound)
        ),
        "{answer:?}"
    );
    assert_eq!(stranded(&pool, endpoint).await, 0);
}

/// Every event the API names (`engine::webhooks::EVENTS`) can be
/// subscribed to, through the API and through the console's form (each
/// of its boxes), and is stored as asked: the table's check once lagged
/// behind the list, and an endpoint for `order.placed` was a 500.
#[sqlx::test(migrations = "../migrations")]
async fn every_event_the_api_names_can_be_subscribed_to(pool: PgPool) {
    use crate::support::tokens::{as_token, create_token};
    use reqwest::Method;
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let token = create_token(&app, &admin, &["integrations"]).await;
    let events = engine::webhooks::EVENTS;
    let (status, created) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/webhooks", admin.tenant),
        Some(json!({ "url": "https://example.com/all", "events": events })),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT unnest(events) FROM webhook_endpoints WHERE url = 'https://example.com/all' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .expect("events");
    let mut expected: Vec<String> = events.iter().map(|e| (*e).to_owned()).collect();
    expected.sort();
    assert_eq!(stored, expected);

    // The console's form: one box per event, named with underscores,
    // each ticked alone subscribing to its own event.
    let tenant = admin.tenant.to_string();
    let boxes: Vec<String> = events.iter().map(|e| e.replace('.', "_")).collect();
    for (name, event) in boxes.iter().zip(events) {
        let url = format!("https://example.com/{name}");
        let response = admin
            .client
            .post(format!("{}/api/admin/webhooks/create", app.address))
            .form(&[
                ("tenant_id", tenant.as_str()),
                ("url", url.as_str()),
                (name.as_str(), "on"),
            ])
            .send()
            .await
            .expect("create");
        assert_eq!(
            response.status(),
            200,
            "{name}: {}",
            response.text().await.unwrap_or_default()
        );
        let stored: Vec<String> =
            sqlx::query_scalar("SELECT unnest(events) FROM webhook_endpoints WHERE url = $1")
                .bind(&url)
                .fetch_all(&pool)
                .await
                .expect("events");
        assert_eq!(stored, vec![event.to_owned()], "the box {name}");
        sqlx::query("DELETE FROM webhook_endpoints WHERE url = $1")
            .bind(&url)
            .execute(&pool)
            .await
            .expect("a tenant has at most ten endpoints");
    }
    let page = admin
        .client
        .get(format!("{}/admin/t/{tenant}/webhooks", app.address))
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("html");
    for name in &boxes {
        assert!(
            page.contains(&format!("name=\"{name}\"")),
            "the page offers {name}"
        );
    }
}
