//! The holes of issue 14 ("security holes found by reading"), each shown by
//! a test against the real server, PostgreSQL and Redis.

use std::time::Duration;

use engine::{
    coordination::ThrottleScope,
    throttle::{Decision, FixedWindow, Limit},
};
use sqlx::PgPool;

use crate::helpers::{TestApp, spawn_app};

const PASSWORD: &str = "correct horse battery";

/// A throttle counter that ends in 300 ms: Redis `TTL` says 0 there.
async fn counter_ending_soon(app: &TestApp, key: &str, count: u32) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(count)
        .arg("PX")
        .arg(300)
        .query_async(&mut app.redis.conn())
        .await
        .expect("SET PX");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_throttle_window_ending_within_a_second_still_decides(pool: PgPool) {
    let app = spawn_app(pool).await;
    let throttle = FixedWindow::new();
    let limit = Limit::new(3, 60);

    // Within the limit at the window's edge: allowed, counted.
    let under = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "under@example.com");
    counter_ending_soon(&app, &under, 1).await;
    let decision = throttle
        .hit(&app.redis, &under, limit)
        .await
        .expect("the window's last 500 ms are no error");
    assert_eq!(decision, Decision::Allowed { count: 2 });

    // Over the limit at the edge: refused for a whole second, never 0 s.
    let over = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "over@example.com");
    counter_ending_soon(&app, &over, 3).await;
    let decision = throttle
        .hit(&app.redis, &over, limit)
        .await
        .expect("the window's last 500 ms are no error");
    assert_eq!(
        decision,
        Decision::Refused {
            retry_after: Duration::from_secs(1)
        }
    );
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&over)
        .query_async(&mut app.redis.conn())
        .await
        .expect("PTTL");
    assert!(
        (1..=300).contains(&pttl),
        "the window was not extended: {pttl}"
    );

    // Through the sign-in form: 429 with Retry-After: 1, not 503.
    let key = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "edge@example.com");
    counter_ending_soon(&app, &key, 10).await;
    let response = app
        .post_form(
            "/api/auth/login",
            &[("email", "edge@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "1");
}
