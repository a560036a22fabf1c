//! A shop's retry storm: one sale or one refund delivered many times at
//! once while the first delivery is slow. The deliveries that wait for it
//! must not hold the server's connections while they wait: a learner
//! opening a course meanwhile is answered, and once the first delivery is
//! done every other one is answered from what it wrote.
//!
//! The first delivery is made slow by a row this test holds (the order's,
//! or the account that places it, whose key its batch's insert checks),
//! in a transaction of its own; the server's pool has 10 connections
//! (`support::app::test_settings`), so 30 or 50 deliveries waiting inside
//! PostgreSQL would hold all of them.

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, redis_url, spawn_app_with, test_settings};
use crate::support::course::{self, Admin, admin, assert_invariants, enter_code, learners, open};
use crate::support::mail::spawn_app_with_mail;
use crate::support::tokens::{as_token, create_token};

/// A course (no quota) and a token that may write.
async fn shop(app: &TestApp) -> (Admin, course::Course, String) {
    let admin = admin(app).await;
    let course = course::course(app, &admin, json!({ "quota": null })).await;
    let token = create_token(app, &admin, &["read", "write"]).await;
    (admin, course, token)
}

async fn place(app: &TestApp, token: &str, share: Uuid, order_id: &str) -> (StatusCode, Value) {
    as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/shares/{share}/orders"),
        Some(
            json!({ "source": "stripe", "order_id": order_id, "email": "buyer@example.com",
                     "quantity": 2, "mail": false, "addressed": false }),
        ),
    )
    .await
}

async fn refund(app: &TestApp, token: &str, order_id: &str) -> (StatusCode, Value) {
    as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/orders/stripe/{order_id}/refund"),
        Some(json!({})),
    )
    .await
}

/// Waits until `n` of the server's sessions wait on a lock (the old way
/// of waiting for the first delivery), or one does (the first delivery,
/// on the row this test holds) and 1.5 s have passed, time for every
/// delivery to arrive: deliveries that wait outside PostgreSQL leave no
/// such session. The server runs with a long `lock_timeout`
/// ([`storm_app`]), so the first delivery outwaits this.
async fn let_them_pile_up(app: &TestApp, n: i64) {
    let mut since_first = 0;
    for _ in 0..100 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&app.pool)
        .await
        .expect("sessions");
        if waiting >= n {
            return;
        }
        if waiting > 0 {
            since_first += 1;
            if since_first == 30 {
                return;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no delivery came to the row this test holds");
}

/// A server whose lock waits last 30 s (2 s by default): the first
/// delivery, held up by this test's row on a loaded machine, is not cut
/// off before the test lets the row go.
async fn storm_app(pool: PgPool) -> TestApp {
    let mut settings = test_settings(&redis_url());
    settings.database.lock_timeout_ms = 30_000;
    spawn_app_with(pool, settings).await
}

/// A learner who enters `code` and opens the course: the status.
async fn opens(
    app: &TestApp,
    client: &reqwest::Client,
    course: &course::Course,
    code: &str,
) -> u16 {
    let entered = enter_code(app, client, &course.slug, code).await;
    assert!(entered.status().is_success(), "{}", entered.status());
    open(app, client, course, None).await.status().as_u16()
}

/// Runs `deliveries` while `held` (the first delivery's row, taken by
/// `hold`) holds the first one up; once they piled up, a learner enters
/// `code` and opens the course, then the row is let go. The learner's
/// status, and how many deliveries were recorded now (201) and answered
/// as replays (200, `replayed`), with every status.
async fn storm(
    app: &TestApp,
    hold: &str,
    course: &course::Course,
    code: &str,
    deliveries: impl std::future::Future<Output = Vec<(StatusCode, Value)>>,
) -> (u16, (usize, usize), Vec<StatusCode>) {
    let people = learners(app, 1).await;
    let mut slow = app.pool.begin().await.expect("a transaction");
    sqlx::query(hold)
        .execute(&mut *slow)
        .await
        .expect("the first delivery's row held");
    let learner = async {
        let_them_pile_up(app, 9).await;
        let opened = opens(app, &people[0].1, course, code).await;
        slow.rollback().await.expect("the row let go");
        opened
    };
    let (answers, opened) = tokio::join!(deliveries, learner);
    let statuses: Vec<StatusCode> = answers.iter().map(|(s, _)| *s).collect();
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    let replayed = answers
        .iter()
        .filter(|(s, body)| *s == StatusCode::OK && body["replayed"] == true)
        .count();
    (opened, (created, replayed), statuses)
}

/// Fifty deliveries of one refund while the first one waits for the
/// order's row: a learner opening the course meanwhile is answered at
/// once, and when the row is free one refund is recorded and every other
/// delivery is answered as its replay.
#[sqlx::test(migrations = "../migrations")]
async fn a_refund_storm_leaves_the_pool_to_learners(pool: PgPool) {
    let app = storm_app(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, placed) = place(&app, &token, course.share, "pi_storm").await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    let code = placed["issued"][0]["code"].as_str().expect("a code");
    let (opened, tally, statuses) = storm(
        &app,
        "SELECT 1 FROM orders WHERE order_ref = 'pi_storm' FOR UPDATE",
        &course,
        code,
        join_all((0..50).map(|_| refund(&app, &token, "pi_storm"))),
    )
    .await;
    assert_eq!(
        opened, 200,
        "a learner is answered while the refund's deliveries wait"
    );
    assert_eq!(tally, (1, 49), "{statuses:?}");
    let live: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE revoked_at IS NULL")
        .fetch_one(&app.pool)
        .await
        .expect("codes");
    assert_eq!(
        live, 0,
        "the refund took back both seats, the bound one too"
    );
    assert_invariants(&app, "after the storm").await;
}

/// Thirty deliveries of one sale while the first one waits (for the row
/// of the account placing it): a learner opening the course meanwhile is
/// answered at once, and then one order is issued and every other
/// delivery is answered as its replay.
#[sqlx::test(migrations = "../migrations")]
async fn a_sale_storm_leaves_the_pool_to_learners(pool: PgPool) {
    let app = storm_app(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, placed) = place(&app, &token, course.share, "pi_before").await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    let code = placed["issued"][0]["code"].as_str().expect("a code");
    let (opened, tally, statuses) = storm(
        &app,
        "SELECT 1 FROM accounts WHERE id = (SELECT created_by FROM code_batches LIMIT 1) FOR UPDATE",
        &course,
        code,
        join_all((0..30).map(|_| place(&app, &token, course.share, "pi_storm"))),
    )
    .await;
    assert_eq!(
        opened, 200,
        "a learner is answered while the sale's deliveries wait"
    );
    assert_eq!(tally, (1, 29), "{statuses:?}");
    let orders: i64 =
        sqlx::query_scalar("SELECT count(*) FROM orders WHERE order_ref = 'pi_storm'")
            .fetch_one(&app.pool)
            .await
            .expect("orders");
    assert_eq!(orders, 1);
    assert_invariants(&app, "after the storm").await;
}

/// A shop's delivery that waited for its order's turn longer than a
/// request waits (here the turn is held by this test) is answered
/// `busy_retry` with nothing done, and stays `received`, not refused:
/// the shop's retry of it, once the turn is free, issues the order.
#[sqlx::test(migrations = "../migrations")]
async fn a_delivery_past_its_waits_is_busy_and_its_retry_acts(pool: PgPool) {
    use crate::api_v1::shops::{STRIPE_SECRET, checkout, creator, deliver_stripe, stripe_shop};
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let source: String =
        sqlx::query_scalar("SELECT order_source FROM shop_integrations WHERE id = $1")
            .bind(shop)
            .fetch_one(&app.pool)
            .await
            .expect("the shop's order source");
    let sale = checkout("pi_busy", "buyer@example.com", "plink_course");

    let mut holder = app.pool.begin().await.expect("a transaction");
    let taken = engine::db::turns::try_take(
        &mut holder,
        &engine::db::turns::order(engine::tenants::TenantId(admin.tenant), &source, "pi_busy"),
    )
    .await
    .expect("the order's turn");
    assert!(taken);
    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["code"], "busy_retry", "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.contains("try again")),
        "{answer}"
    );
    let outcomes = |app: &TestApp| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT outcome FROM shop_events ORDER BY received_at")
                .fetch_all(&pool)
                .await
                .expect("deliveries")
        }
    };
    assert_eq!(
        outcomes(&app).await,
        ["received"],
        "not refused: the shop retries"
    );
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&app.pool)
        .await
        .expect("orders");
    assert_eq!(orders, 0, "nothing done");
    holder.rollback().await.expect("the turn let go");

    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["outcome"], "acted", "{answer}");
    assert_eq!(outcomes(&app).await, ["received", "acted"]);
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE order_ref = 'pi_busy'")
        .fetch_one(&app.pool)
        .await
        .expect("orders");
    assert_eq!(orders, 1);
}
