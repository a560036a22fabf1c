//! Signing in: a wrong password and an unknown address look the same; a
//! disabled account cannot sign in and its sessions end; sign-in is
//! throttled per address, with a retry time, and the counter expires.

use engine::coordination::ThrottleScope;
use redis::AsyncCommands as _;
use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

#[sqlx::test(migrations = "../migrations")]
async fn wrong_password_and_unknown_email_look_the_same(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("known@example.com", PASSWORD).await;
    let wrong = app
        .post_form(
            "/api/auth/login",
            &[
                ("email", "known@example.com"),
                ("password", "wrong password!"),
            ],
        )
        .await;
    let unknown = app
        .post_form(
            "/api/auth/login",
            &[("email", "nobody@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(wrong.status(), 401);
    assert_eq!(unknown.status(), 401);
    let wrong: Value = wrong.json().await.expect("json");
    let unknown: Value = unknown.json().await.expect("json");
    assert_eq!(wrong, unknown);
    assert_eq!(app.whoami_as(&app.client).await, None);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_disabled_account_cannot_sign_in_and_its_sessions_end(pool: PgPool) {
    let app = spawn_app(pool).await;
    let id = app.create_account("gone@example.com", PASSWORD).await;
    app.login_as(&app.client, "gone@example.com", PASSWORD)
        .await;
    assert!(app.whoami_as(&app.client).await.is_some());

    engine::accounts::disable(&app.pool, id)
        .await
        .expect("disable");
    assert_eq!(
        app.whoami_as(&app.client).await,
        None,
        "existing session ended"
    );

    let response = app
        .post_form(
            "/api/auth/login",
            &[("email", "gone@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body, Value::String("AccountDisabled".into()));
}

#[sqlx::test(migrations = "../migrations")]
async fn sign_in_is_throttled_per_email_with_a_retry_time_and_the_counter_expires(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.sign_in_per_email = 3;
    settings.throttle.window_secs = 2;
    let app = spawn_app_with(pool, settings).await;
    app.create_account("victim@example.com", PASSWORD).await;

    for _ in 0..3 {
        let r = app
            .post_form(
                "/api/auth/login",
                &[
                    ("email", "victim@example.com"),
                    ("password", "wrong password!"),
                ],
            )
            .await;
        assert_eq!(r.status(), 401);
    }
    // The 4th attempt is refused even with the right password.
    let refused = app
        .post_form(
            "/api/auth/login",
            &[("email", "victim@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(refused.status(), 429);
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    // The IETF draft's names: the limit, nothing left, and when it resets.
    let header = |name: &str| {
        refused
            .headers()
            .get(name)
            .unwrap_or_else(|| panic!("{name} on a throttled answer"))
            .to_str()
            .expect("ascii")
            .to_owned()
    };
    assert_eq!(header("ratelimit-limit"), "3");
    assert_eq!(header("ratelimit-remaining"), "0");
    assert_eq!(header("ratelimit-reset"), retry_after.to_string());
    let body: Value = refused.json().await.expect("json");
    assert!(
        body["RateLimited"]["message"]
            .as_str()
            .expect("message")
            .contains("Try again in"),
        "{body}"
    );
    assert_eq!(app.whoami_as(&app.client).await, None);

    // The window that refused: this address from this network.
    let key = app.redis.keys().throttle(
        ThrottleScope::SignInEmailNetwork,
        &engine::throttle::email_network_subject(
            "victim@example.com",
            std::net::Ipv4Addr::LOCALHOST.into(),
        ),
    );
    let ttl: i64 = app.redis.conn().ttl(&key).await.expect("ttl");
    assert!(
        (1..=2).contains(&ttl),
        "the counter always has a TTL, got {ttl}"
    );

    tokio::time::sleep(std::time::Duration::from_millis(2_200)).await;
    let exists: bool = app.redis.conn().exists(&key).await.expect("exists");
    assert!(!exists, "the window ended and the counter expired");
    app.login_as(&app.client, "victim@example.com", PASSWORD)
        .await;
}

/// An account whose address was accepted before registration took only
/// addresses the mailer can send to still signs in (and can still ask for
/// a reset): the stricter rule never locks an existing account out.
#[sqlx::test(migrations = "../migrations")]
async fn an_account_made_under_the_older_address_rules_still_signs_in(pool: PgPool) {
    let app = spawn_app(pool).await;
    let hash = engine::accounts::hash_password(
        &engine::accounts::Password::parse(secrecy::SecretString::from(PASSWORD)).expect("pw"),
    )
    .await
    .expect("hash");
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
         VALUES ($1, 'a..b@example.com', 'Old', $2, now())",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(&hash)
    .execute(&app.pool)
    .await
    .expect("an account of the older rules");
    app.login_as(&app.client, "A..B@example.com", PASSWORD)
        .await;
    assert!(app.whoami_as(&app.client).await.is_some());
    let reset = app
        .post_form("/api/auth/forgot", &[("email", "a..b@example.com")])
        .await;
    assert!(reset.status().is_success(), "{}", reset.status());
    // The request is written after the answer (the answer never tells).
    let mut queued = 0_i64;
    for _ in 0..200 {
        queued = sqlx::query_scalar(
            "SELECT count(*) FROM mail_outbox
              WHERE to_address = 'a..b@example.com' AND template = 'reset_password'",
        )
        .fetch_one(&app.pool)
        .await
        .expect("count");
        if queued > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(queued, 1, "the reset was asked for the account");
}
