use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::{PrivatePostgres, PrivateRedis, spawn_app, spawn_app_with, test_settings};

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

#[sqlx::test(migrations = "../migrations")]
async fn every_response_carries_a_request_id(pool: PgPool) {
    let app = spawn_app(pool).await;
    let first = app.get("/healthz").await;
    let second = app.get("/healthz").await;
    let id = |r: &reqwest::Response| {
        r.headers()
            .get("x-request-id")
            .expect("x-request-id header")
            .to_str()
            .expect("ascii")
            .to_owned()
    };
    assert_ne!(id(&first), id(&second), "request ids are unique");
}
