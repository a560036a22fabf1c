//! Health: `/healthz` and `/readyz` when everything is up, `/readyz` naming
//! a stopped Redis or PostgreSQL while `/healthz` stays up, and shutdown
//! turning `/readyz` to draining while the server still serves.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{spawn_app, spawn_app_with, test_settings};
use crate::support::processes::{PrivatePostgres, PrivateRedis};

#[sqlx::test(migrations = "../migrations")]
async fn healthz_and_readyz_answer_when_everything_is_up(pool: PgPool) {
    let app = spawn_app(pool).await;

    let health = app.get("/healthz").await;
    assert_eq!(health.status(), 200);

    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    let body: Value = ready.json().await.expect("json");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["postgres"], "up");
    assert_eq!(body["redis"], "up");
    assert_eq!(body["down"], serde_json::json!([]));
}

#[sqlx::test(migrations = "../migrations")]
async fn stopping_redis_makes_readyz_name_it_while_healthz_stays_up(pool: PgPool) {
    let mut redis = PrivateRedis::start();
    let app = spawn_app_with(pool, test_settings(&redis.url())).await;
    assert_eq!(
        app.get("/readyz").await.status(),
        200,
        "ready before the fault"
    );

    redis.stop();

    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    let body: Value = ready.json().await.expect("json");
    assert_eq!(body["redis"], "down");
    assert_eq!(body["postgres"], "up");
    assert_eq!(body["down"], serde_json::json!(["redis"]));
    assert_eq!(app.get("/healthz").await.status(), 200);
}

#[sqlx::test(migrations = "../migrations")]
async fn stopping_postgres_makes_readyz_name_it_while_healthz_stays_up(pool: PgPool) {
    drop(pool); // This test needs a PostgreSQL it may stop: its own.
    let mut postgres = PrivatePostgres::start();
    let own = engine::db::connect_lazy(
        &postgres.url(),
        &engine::db::DbOptions {
            acquire_timeout: std::time::Duration::from_millis(500),
            ..Default::default()
        },
    )
    .expect("lazy pool");
    let app = spawn_app(own).await;
    assert_eq!(
        app.get("/readyz").await.status(),
        200,
        "ready before the fault"
    );

    postgres.stop();

    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    let body: Value = ready.json().await.expect("json");
    assert_eq!(body["postgres"], "down");
    assert_eq!(body["redis"], "up");
    assert_eq!(body["down"], serde_json::json!(["postgres"]));
    assert_eq!(app.get("/healthz").await.status(), 200);
}

/// Shutdown takes the instance out of rotation first: `/readyz` answers
/// 503 `draining` at once while the server still serves for
/// `server.drain_secs`; then it stops accepting.
#[sqlx::test(migrations = "../migrations")]
async fn shutdown_turns_readyz_to_draining_while_the_server_still_serves(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.server.drain_secs = Some(8);
    let mut app = spawn_app_with(pool, settings).await;
    assert_eq!(app.get("/readyz").await.status(), 200);

    let started = std::time::Instant::now();
    app.begin_shutdown();
    let mut draining = None;
    while started.elapsed() < std::time::Duration::from_secs(4) {
        let ready = app.get("/readyz").await;
        if ready.status() == 503 {
            draining = Some(ready.json::<Value>().await.expect("json"));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let body = draining.expect("readyz turned 503 as shutdown began");
    assert_eq!(body["status"], "draining");
    // Still serving, on a fresh connection too, during the drain.
    assert_eq!(app.get("/healthz").await.status(), 200);
    let fresh = crate::support::app::new_client()
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .expect("a new connection is still accepted while draining");
    assert_eq!(fresh.status(), 200);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "checked within the drain"
    );

    // After the drain the listener closes.
    tokio::time::sleep(std::time::Duration::from_secs(10).saturating_sub(started.elapsed())).await;
    let after = crate::support::app::new_client()
        .get(format!("{}/healthz", app.address))
        .send()
        .await;
    assert!(
        after.is_err(),
        "stopped accepting after the drain: {after:?}"
    );
}
