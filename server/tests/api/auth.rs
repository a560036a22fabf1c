use app::error::AppError;
use engine::{coordination::ThrottleScope, outcome::ErrorKind};
use futures::future::join_all;
use redis::AsyncCommands as _;
use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

/// Settings whose sign-in limits stay out of the way of load tests.
fn unthrottled() -> server::config::Settings {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.sign_in_per_email = 100_000;
    settings.throttle.sign_in_per_ip = 100_000;
    settings
}

#[sqlx::test(migrations = "../migrations")]
async fn register_login_logout_login_again(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app
        .post_form(
            "/api/auth/register",
            &[
                ("email", " Ada@Example.com "),
                ("display_name", "Ada"),
                ("password", PASSWORD),
                ("password_confirm", PASSWORD),
            ],
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(
        app.whoami_as(&app.client).await.as_deref(),
        Some("ada@example.com")
    );

    let response = app.post_form("/api/auth/logout", &[]).await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(app.whoami_as(&app.client).await, None);

    app.login_as(&app.client, "ADA@example.com", PASSWORD).await;
    assert_eq!(
        app.whoami_as(&app.client).await.as_deref(),
        Some("ada@example.com")
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn registration_rejects_bad_input_field_by_field_and_writes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("taken@example.com", PASSWORD).await;
    let cases: [(&str, &str, &str, &str, &str); 5] = [
        ("not-an-email", "Ada", PASSWORD, PASSWORD, "email"),
        ("new@example.com", "   ", PASSWORD, PASSWORD, "display_name"),
        ("new@example.com", "Ada", "short", "short", "password"),
        (
            "new@example.com",
            "Ada",
            PASSWORD,
            "different password",
            "password_confirm",
        ),
        ("taken@example.com", "Ada", PASSWORD, PASSWORD, "email"),
    ];
    for (email, name, password, confirm, field) in cases {
        let response = app
            .post_form(
                "/api/auth/register",
                &[
                    ("email", email),
                    ("display_name", name),
                    ("password", password),
                    ("password_confirm", confirm),
                ],
            )
            .await;
        assert_eq!(response.status(), 422, "{email} {name} {field}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["Invalid"]["field"], field, "{body}");
    }
    let accounts: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(accounts, 1, "only the pre-existing account");
    assert_eq!(app.whoami_as(&app.client).await, None);
}

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

    let key = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "victim@example.com");
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

#[sqlx::test(migrations = "../migrations")]
async fn registration_is_throttled_per_ip(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.register_per_ip = 2;
    let app = spawn_app_with(pool, settings).await;
    for i in 0..3 {
        let email = format!("user{i}@example.com");
        let response = app
            .post_form_as(
                &new_client(),
                "/api/auth/register",
                &[
                    ("email", &email),
                    ("display_name", "User"),
                    ("password", PASSWORD),
                    ("password_confirm", PASSWORD),
                ],
            )
            .await;
        if i < 2 {
            assert!(response.status().is_success(), "{i}: {}", response.status());
        } else {
            assert_eq!(response.status(), 429);
            assert!(response.headers().contains_key("retry-after"));
        }
    }
    let accounts: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(accounts, 2, "the refused registration wrote nothing");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_session_cookie_is_http_only_lax_and_rotated_at_sign_in(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let cookie_of = |r: &reqwest::Response| {
        r.headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("admitone_session="))
            .map(str::to_owned)
    };
    // An anonymous session first (signing out leaves a flash message in one).
    let anonymous = app.post_form("/api/auth/logout", &[]).await;
    let before = cookie_of(&anonymous).expect("anonymous session cookie");
    let login = app
        .post_form(
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    let after = cookie_of(&login).expect("new session cookie");
    for cookie in [&before, &after] {
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        assert!(cookie.contains("SameSite=Lax"), "{cookie}");
        assert!(!cookie.contains("Secure"), "plain http in tests: {cookie}");
    }
    let value = |c: &str| c.split(';').next().map(str::to_owned);
    assert_ne!(
        value(&before),
        value(&after),
        "the session id changes at sign-in"
    );
}

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

#[sqlx::test(migrations = "../migrations")]
async fn changing_the_password_keeps_this_session_and_ends_the_others(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let other = new_client();
    app.login_as(&app.client, "ada@example.com", PASSWORD).await;
    app.login_as(&other, "ada@example.com", PASSWORD).await;

    let wrong = app
        .post_form(
            "/api/auth/change-password",
            &[
                ("current_password", "not the password"),
                ("new_password", "a brand new password"),
                ("new_password_confirm", "a brand new password"),
            ],
        )
        .await;
    assert_eq!(wrong.status(), 422);
    assert!(
        app.whoami_as(&other).await.is_some(),
        "a refused change ends nothing"
    );

    let ok = app
        .post_form(
            "/api/auth/change-password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "a brand new password"),
                ("new_password_confirm", "a brand new password"),
            ],
        )
        .await;
    assert!(ok.status().is_success(), "{}", ok.status());
    assert!(
        app.whoami_as(&app.client).await.is_some(),
        "this session stays"
    );
    assert_eq!(app.whoami_as(&other).await, None, "the other session ended");
    let fresh = new_client();
    let old = app
        .post_form_as(
            &fresh,
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(old.status(), 401);
    app.login_as(&fresh, "ada@example.com", "a brand new password")
        .await;
}

#[sqlx::test(migrations = "../migrations")]
async fn fifty_concurrent_logins_then_logout_all_leave_no_valid_session(pool: PgPool) {
    let app = spawn_app_with(pool, unthrottled()).await;
    app.create_account("busy@example.com", PASSWORD).await;
    let clients: Vec<reqwest::Client> = (0..50).map(|_| new_client()).collect();
    join_all(
        clients
            .iter()
            .map(|c| app.login_as(c, "busy@example.com", PASSWORD)),
    )
    .await;
    let valid = join_all(clients.iter().map(|c| app.whoami_as(c))).await;
    assert!(valid.iter().all(Option::is_some), "all 50 signed in");

    let response = app
        .post_form_as(&clients[0], "/api/auth/logout-all", &[])
        .await;
    assert!(response.status().is_success(), "{}", response.status());

    let valid = join_all(clients.iter().map(|c| app.whoami_as(c))).await;
    assert_eq!(
        valid.iter().filter(|v| v.is_some()).count(),
        0,
        "zero valid sessions"
    );
}

/// A login racing with logout-all: whatever the interleaving, the session it
/// yields is valid exactly when its sign-in read the account *after* the
/// revocation (its epoch is the current one); a sign-in that read it before
/// never survives.
#[sqlx::test(migrations = "../migrations")]
async fn a_login_racing_logout_all_never_survives_it(pool: PgPool) {
    let app = spawn_app_with(pool, unthrottled()).await;
    let account = app.create_account("race@example.com", PASSWORD).await;
    let mut survivors = 0;
    let mut revoked = 0;
    for round in 0..100 {
        let revoker = new_client();
        app.login_as(&revoker, "race@example.com", PASSWORD).await;
        let racer = new_client();
        let (_, response) = tokio::join!(
            app.login_as(&racer, "race@example.com", PASSWORD),
            app.post_form_as(&revoker, "/api/auth/logout-all", &[]),
        );
        assert!(
            response.status().is_success(),
            "round {round}: {}",
            response.status()
        );

        let epoch: i64 = sqlx::query_scalar("SELECT session_epoch FROM accounts WHERE id = $1")
            .bind(account.0)
            .fetch_one(&app.pool)
            .await
            .expect("epoch");
        let stamped = racer_epoch(&app, account.0).await;
        let valid = app.whoami_as(&racer).await.is_some();
        assert_eq!(
            valid,
            stamped == epoch,
            "round {round}: session stamped {stamped}, account at {epoch}, valid {valid}"
        );
        if valid {
            survivors += 1;
        } else {
            revoked += 1;
        }
        assert_eq!(
            app.whoami_as(&revoker).await,
            None,
            "round {round}: the revoker is out"
        );
        // Clean the round's sessions so the next one reads only its own.
        let keys: Vec<String> = app
            .redis
            .conn()
            .keys(format!("{}:session:*", app.redis.keys().prefix()))
            .await
            .expect("keys");
        for key in keys {
            let _: i64 = app.redis.conn().del(key).await.expect("del");
        }
    }
    // Both outcomes are legitimate; report the mix.
    eprintln!("race: {survivors} logins came after the revocation, {revoked} before");

    // The interleaving that matters, pinned: logout-all is in flight (its
    // revocation waits on a row lock this test holds) while a login
    // completes. Once logout-all has answered, that login's session is
    // signed out, whatever it was stamped with.
    for round in 0..5 {
        let revoker = new_client();
        app.login_as(&revoker, "race@example.com", PASSWORD).await;
        let mut lock = app.pool.begin().await.expect("begin");
        sqlx::query("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE")
            .bind(account.0)
            .execute(&mut *lock)
            .await
            .expect("lock the account");
        let logout_all = tokio::spawn({
            let (revoker, url) = (
                revoker.clone(),
                format!("{}/api/auth/logout-all", app.address),
            );
            async move {
                revoker
                    .post(url)
                    .form(&Vec::<(String, String)>::new())
                    .send()
                    .await
            }
        });
        wait_for_lock_waiter(&app.pool, "UPDATE accounts SET session_epoch").await;

        let racer = new_client();
        app.login_as(&racer, "race@example.com", PASSWORD).await;
        assert_eq!(
            app.whoami_as(&racer).await.as_deref(),
            Some("race@example.com"),
            "round {round}: the racing login completed while logout-all was in flight"
        );
        lock.rollback().await.expect("unlock");
        let response = logout_all
            .await
            .expect("logout-all task")
            .expect("logout-all");
        assert!(
            response.status().is_success(),
            "round {round}: {}",
            response.status()
        );
        assert_eq!(
            app.whoami_as(&racer).await,
            None,
            "round {round}: a login that completed during logout-all does not survive it"
        );
        assert_eq!(
            app.whoami_as(&revoker).await,
            None,
            "round {round}: the revoker is out"
        );
        // A login after logout-all answered stays signed in: the racer was
        // signed out by the revocation, not by a broken sign-in.
        let after = new_client();
        app.login_as(&after, "race@example.com", PASSWORD).await;
        assert_eq!(
            app.whoami_as(&after).await.as_deref(),
            Some("race@example.com"),
            "round {round}: a later login is valid"
        );
    }
}

/// Waits until a statement starting with `statement` waits for a lock in
/// this test's database.
async fn wait_for_lock_waiter(pool: &PgPool, statement: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'
               AND starts_with(ltrim(query), $1)",
        )
        .bind(statement)
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no statement {statement:?} ever waited for the lock"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The epoch stamped in the one signed-in session record of this round.
async fn racer_epoch(app: &crate::support::app::TestApp, account: uuid::Uuid) -> i64 {
    let keys: Vec<String> = app
        .redis
        .conn()
        .keys(format!("{}:session:*", app.redis.keys().prefix()))
        .await
        .expect("keys");
    let mut epochs = Vec::new();
    for key in keys {
        let body: Option<String> = app.redis.conn().get(&key).await.expect("get");
        let Some(body) = body else { continue };
        let record: Value = serde_json::from_str(&body).expect("record json");
        if let Some(auth) = record["data"].get("auth")
            && auth["account"] == Value::String(account.to_string())
        {
            epochs.push(auth["epoch"].as_i64().expect("epoch"));
        }
    }
    // The revoker's session was flushed; what is left is the racer's.
    assert_eq!(epochs.len(), 1, "exactly one signed-in record: {epochs:?}");
    epochs[0]
}

#[sqlx::test(migrations = "../migrations")]
async fn a_session_ends_at_its_absolute_lifetime_however_active(pool: PgPool) {
    let app = spawn_app(pool).await;
    let account = app.create_account("old@example.com", PASSWORD).await;
    app.login_as(&app.client, "old@example.com", PASSWORD).await;
    assert!(app.whoami_as(&app.client).await.is_some());

    // Move the recorded sign-in back past the absolute lifetime (30 days).
    let keys: Vec<String> = app
        .redis
        .conn()
        .keys(format!("{}:session:*", app.redis.keys().prefix()))
        .await
        .expect("keys");
    let mut moved = 0;
    for key in keys {
        let body: String = app.redis.conn().get(&key).await.expect("get");
        let mut record: Value = serde_json::from_str(&body).expect("json");
        if record["data"]["auth"]["account"] == Value::String(account.0.to_string()) {
            let long_ago = time::OffsetDateTime::now_utc().unix_timestamp() - 31 * 24 * 3600;
            record["data"]["auth"]["signed_in_at"] = Value::from(long_ago);
            let ttl: i64 = app.redis.conn().ttl(&key).await.expect("ttl");
            let _: () = app
                .redis
                .conn()
                .set_ex(&key, record.to_string(), u64::try_from(ttl).expect("ttl"))
                .await
                .expect("set");
            moved += 1;
        }
    }
    assert_eq!(moved, 1);
    assert_eq!(
        app.whoami_as(&app.client).await,
        None,
        "expired however active"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn the_session_cookie_is_secure_when_served_over_https(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.server.public_url = "https://courses.example.com".into();
    let app = spawn_app_with(pool, settings).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let login = app
        .post_form(
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    let cookie = login
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("admitone_session="))
        .expect("session cookie")
        .to_owned();
    assert!(cookie.contains("Secure"), "{cookie}");
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
