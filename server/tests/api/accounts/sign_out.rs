//! Signing out, here and everywhere: after "sign out everywhere" no session
//! of the account is valid, however many there were and whatever login
//! races it; a request in flight during a sign-out, or a session change
//! racing it, never brings the session back.

use std::sync::Arc;

use engine::sessions::RedisSessionStore;
use futures::future::join_all;
use redis::AsyncCommands as _;
use serde_json::Value;
use sqlx::PgPool;
use tower_sessions::{Session, session::Id};

use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

/// Settings whose sign-in limits stay out of the way of load tests.
fn unthrottled() -> server::config::Settings {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.sign_in_per_email = 100_000;
    settings.throttle.sign_in_per_ip = 100_000;
    settings
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

/// The signed session cookie a client holds (`admitone_session=…`).
fn session_cookie_of(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("admitone_session="))
        .and_then(|v| v.split(';').next())
        .map(str::to_owned)
}

/// Who the given raw cookie is signed in as (a client without a jar).
async fn whoami_with_cookie(app: &TestApp, cookie: &str) -> Option<String> {
    let response = new_client()
        .get(format!("{}/api/auth/whoami", app.address))
        .header("cookie", cookie)
        .send()
        .await
        .expect("whoami");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    body.get("email")
        .and_then(|e| e.as_str())
        .map(str::to_owned)
}

/// The ids of every session record of this test.
async fn session_ids(app: &TestApp) -> Vec<Id> {
    let prefix = format!("{}:session:", app.redis.keys().prefix());
    let keys: Vec<String> = app
        .redis
        .conn()
        .keys(format!("{prefix}*"))
        .await
        .expect("keys");
    keys.iter()
        .map(|k| k[prefix.len()..].parse().expect("session id"))
        .collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_request_in_flight_during_sign_out_does_not_undo_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let login = app
        .post_form(
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    let cookie = session_cookie_of(&login).expect("session cookie");
    let ids = session_ids(&app).await;
    let [id] = ids[..] else {
        panic!("one session record");
    };

    // A request of this session is in flight: it has read the record…
    let in_flight = Session::new(
        Some(id),
        Arc::new(RedisSessionStore::new(app.redis.clone())),
        None,
    );
    assert!(
        in_flight
            .get::<Value>("auth")
            .await
            .expect("load")
            .is_some()
    );
    // …the user signs out meanwhile…
    let response = app.post_form("/api/auth/logout", &[]).await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(whoami_with_cookie(&app, &cookie).await, None);
    // …and the request finishes, saving what it changed.
    in_flight.insert("flash", "late").await.expect("insert");
    in_flight.save().await.expect("save");

    assert_eq!(
        whoami_with_cookie(&app, &cookie).await,
        None,
        "the old cookie stays signed out"
    );
}

/// The same over HTTP only: a request that changes the session (taking the
/// welcome message) races the sign-out, round after round.
#[sqlx::test(migrations = "../migrations")]
async fn a_session_change_racing_sign_out_never_revives_the_session(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.mail_per_ip = 1_000;
    let app = spawn_app_with(pool, settings).await;
    let mut revived = Vec::new();
    for round in 0..20 {
        let client = new_client();
        let email = format!("racer{round}@example.com");
        let token = crate::support::mail::signup_token(&app.pool, &email).await;
        let registered = crate::support::mail::finish_registration(&app, &client, &token).await;
        assert!(registered.status().is_success() || registered.status().is_redirection());
        let cookie = session_cookie_of(&registered).expect("cookie");
        let (taken, out) = tokio::join!(
            app.post_form_as(&client, "/api/flash/take", &[]),
            app.post_form_as(&client, "/api/auth/logout", &[]),
        );
        assert!(taken.status().is_success(), "{}", taken.status());
        assert!(out.status().is_success(), "{}", out.status());
        if whoami_with_cookie(&app, &cookie).await.is_some() {
            revived.push(round);
        }
    }
    assert!(
        revived.is_empty(),
        "signed in again after sign-out: {revived:?}"
    );
}
