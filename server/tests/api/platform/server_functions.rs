//! How server functions answer what they refuse: a cross-site post is
//! refused (in the shape the page's wasm reads) and changes nothing, not
//! even a throttle count; one still unanswered at the request's deadline is
//! a 503 the page reads as "busy, try again".

use app::error::AppError;
use engine::{coordination::ThrottleScope, outcome::ErrorKind};
use redis::AsyncCommands as _;
use sqlx::PgPool;

use crate::support::app::{spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

#[sqlx::test(migrations = "../migrations")]
async fn cross_site_posts_are_refused_and_change_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let response = app
        .client
        .post(format!("{}/api/auth/login", app.address))
        .header("origin", "https://evil.example")
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 403);
    // In the shape the page's wasm reads (`server::server_fn_errors`).
    let error: AppError = response.json().await.expect("an AppError");
    assert!(
        matches!(&error, AppError::Refused { kind: ErrorKind::Forbidden, reason, .. } if reason == "cross_site_request"),
        "{error:?}"
    );
    assert_eq!(app.whoami_as(&app.client).await, None);
    let key = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "ada@example.com");
    let exists: bool = app.redis.conn().exists(&key).await.expect("exists");
    assert!(!exists, "not even an attempt was counted");

    // The same request from this site's own origin works.
    let response = app
        .client
        .post(format!("{}/api/auth/login", app.address))
        .header("origin", app.address.clone())
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("request");
    assert!(response.status().is_success(), "{}", response.status());
}

/// A server function still unanswered at the request's deadline is a 503
/// the page reads as "busy, try again" (an `AppError`, with `Retry-After`),
/// not a body its wasm cannot decode and would show as a decoding error.
#[sqlx::test(migrations = "../migrations")]
async fn a_server_function_past_its_deadline_answers_an_error_the_page_reads(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.server.request_timeout_secs = 1;
    settings.settlement.transaction_timeout_ms = 300;
    settings.settlement.reservation_ttl_ms = 200;
    settings.validate().expect("valid settings");
    let app = spawn_app_with(pool.clone(), settings).await;
    app.create_account("ada@example.com", PASSWORD).await;
    // Sign-in reads the account: hold every read of `accounts` past the
    // deadline.
    let mut lock = pool.begin().await.expect("begin");
    sqlx::query("LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .expect("lock");
    let response = app
        .client
        .post(format!("{}/api/auth/login", app.address))
        .header("accept", "application/json")
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("request");
    // The same form posted without JavaScript reads a page.
    let plain = app
        .client
        .post(format!("{}/api/auth/login", app.address))
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("request");
    lock.rollback().await.expect("rollback");
    assert_eq!(plain.status(), 503);
    let kind = plain.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(kind.starts_with("text/html"), "{kind}");
    assert!(
        plain
            .text()
            .await
            .expect("text")
            .contains("taking too long")
    );
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let error: AppError = response.json().await.expect("an AppError");
    assert!(matches!(error, AppError::Unavailable { .. }), "{error:?}");
    assert!(error.is_retryable());
    // Nothing was decided: the same sign-in goes through now.
    let again = app
        .client
        .post(format!("{}/api/auth/login", app.address))
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("request");
    assert!(again.status().is_success(), "{}", again.status());
}

/// A server function reads its own request, never a page rendering beside
/// it: many Chinese pages render while learners sign in, half from English
/// browsers and half from Taiwanese ones, and each account remembers its
/// own sign-in's language for its notices (each starts in the other one,
/// so a sign-in that remembers nothing fails too).
#[sqlx::test(migrations = "../migrations")]
async fn a_server_function_reads_its_own_request_not_a_page_rendering_beside_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    // (email, the language its browser asks for, the one it starts in)
    let learners: Vec<(String, &str, &str)> = (0..8)
        .map(|i| {
            let (asks, starts) = if i % 2 == 0 {
                ("en", "zh-TW")
            } else {
                ("zh-TW", "en")
            };
            (format!("learner{i}@example.com"), asks, starts)
        })
        .collect();
    for (email, _, _) in &learners {
        app.create_account(email, PASSWORD).await;
    }
    // 4 rounds of 8 sign-ins from one address: within `sign_in_per_ip` (50).
    for _round in 0..4 {
        for (email, _, starts) in &learners {
            sqlx::query("UPDATE accounts SET lang = $2 WHERE email = $1")
                .bind(email)
                .bind(*starts)
                .execute(&app.pool)
                .await
                .expect("reset the language");
        }
        let mut pages = Vec::new();
        for _ in 0..24 {
            let (client, url) = (app.client.clone(), format!("{}/", app.address));
            pages.push(async move {
                let page = client
                    .get(url)
                    .header("accept", "text/html")
                    .header("accept-language", "zh-CN")
                    .send()
                    .await
                    .expect("page");
                assert!(page.status().is_success(), "{}", page.status());
                let html = page.text().await.expect("body");
                assert!(html.contains(r#"<html lang="zh-CN""#), "a Chinese page");
            });
        }
        let sign_ins = learners.iter().map(|(email, asks, _)| {
            let address = app.address.clone();
            async move {
                let client = reqwest::Client::builder()
                    .cookie_store(true)
                    .build()
                    .expect("client");
                let response = client
                    .post(format!("{address}/api/auth/login"))
                    .header("origin", address.clone())
                    .header("accept-language", *asks)
                    .form(&[("email", email.as_str()), ("password", PASSWORD)])
                    .send()
                    .await
                    .expect("sign in");
                assert!(response.status().is_success(), "{}", response.status());
            }
        });
        futures::future::join(
            futures::future::join_all(pages),
            futures::future::join_all(sign_ins),
        )
        .await;
        for (email, asks, _) in &learners {
            let lang: String = sqlx::query_scalar("SELECT lang FROM accounts WHERE email = $1")
                .bind(email)
                .fetch_one(&app.pool)
                .await
                .expect("account");
            assert_eq!(lang, *asks, "{email} signed in from a {asks} browser");
        }
    }
}
