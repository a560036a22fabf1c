//! The holes of issue 14 ("security holes found by reading"), each shown by
//! a test against the real server, PostgreSQL and Redis.

use std::{sync::Arc, time::Duration};

use engine::{
    coordination::ThrottleScope,
    sessions::RedisSessionStore,
    throttle::{Decision, FixedWindow, Limit},
};
use redis::AsyncCommands as _;
use serde_json::Value;
use sqlx::PgPool;
use tower_sessions::{
    Session, SessionStore as _,
    session::{Id, Record},
};

use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

/// A throttle counter that ends in 450 ms: Redis `TTL` says 0 there.
async fn counter_ending_soon(app: &TestApp, key: &str, count: u32) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(count)
        .arg("PX")
        .arg(450)
        .query_async(&mut app.redis.conn())
        .await
        .expect("SET PX");
}

/// Sets a counter ending soon and hits it. On a loaded machine the counter
/// may expire before the hit arrives (the hit then starts a new window,
/// count 1): that attempt proves nothing and is made again.
async fn hit_at_the_edge(
    app: &TestApp,
    throttle: &FixedWindow,
    key: &str,
    count: u32,
    limit: Limit,
) -> Decision {
    for _ in 0..5 {
        counter_ending_soon(app, key, count).await;
        let decision = throttle
            .hit(&app.redis, key, limit)
            .await
            .expect("the window's last 500 ms are no error");
        if decision != (Decision::Allowed { count: 1 }) {
            return decision;
        }
    }
    panic!("the counter expired before every one of 5 hits");
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
    let decision = hit_at_the_edge(&app, &throttle, &under, 1, limit).await;
    assert_eq!(decision, Decision::Allowed { count: 2 });

    // Over the limit at the edge: refused for a whole second, never 0 s.
    let over = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "over@example.com");
    let decision = hit_at_the_edge(&app, &throttle, &over, 3, limit).await;
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
        (-2..=450).contains(&pttl) && pttl != -1,
        "the window was not extended (or made endless): {pttl}"
    );

    // Through the sign-in form: 429 with Retry-After: 1, not 503. A 401
    // means the counter expired before the request (a new window): again.
    let key = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "edge@example.com");
    let mut refused = None;
    for _ in 0..5 {
        counter_ending_soon(&app, &key, 10).await;
        let response = app
            .post_form(
                "/api/auth/login",
                &[("email", "edge@example.com"), ("password", PASSWORD)],
            )
            .await;
        if response.status() != 401 {
            refused = Some(response);
            break;
        }
    }
    let response = refused.expect("the counter expired before every one of 5 requests");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "1");
}

/// A login attempt as it arrives through proxies: one `X-Forwarded-For`
/// line per entry of `forwarded_for`, in order.
async fn login_through_proxy(app: &TestApp, forwarded_for: &[&str]) -> reqwest::Response {
    let mut request = new_client()
        .post(format!("{}/api/auth/login", app.address))
        .form(&[("email", "nobody@example.com"), ("password", PASSWORD)]);
    for line in forwarded_for {
        request = request.header("x-forwarded-for", *line);
    }
    request.send().await.expect("request")
}

fn behind_one_proxy(sign_in_per_ip: u32) -> server::config::Settings {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.server.trusted_proxy_hops = 1;
    settings.throttle.sign_in_per_ip = sign_in_per_ip;
    settings
}

#[sqlx::test(migrations = "../migrations")]
async fn behind_one_proxy_the_proxy_appended_address_is_throttled(pool: PgPool) {
    let app = spawn_app_with(pool, behind_one_proxy(2)).await;
    // The client forges a first line (a new address each time); the proxy
    // appends its own line with the address it saw.
    for attempt in 0..3 {
        let forged = format!("198.51.100.{attempt}");
        let response = login_through_proxy(&app, &[&forged, "203.0.113.7"]).await;
        let expected = if attempt < 2 { 401 } else { 429 };
        assert_eq!(response.status(), expected, "attempt {attempt}");
    }
    let keys = app.redis.keys();
    let counted: Option<i64> = app
        .redis
        .conn()
        .get(keys.throttle(ThrottleScope::SignInIp, "203.0.113.7"))
        .await
        .expect("get");
    assert_eq!(counted, Some(3), "counted against the proxy-seen address");
    let forged: bool = app
        .redis
        .conn()
        .exists(keys.throttle(ThrottleScope::SignInIp, "198.51.100.0"))
        .await
        .expect("exists");
    assert!(!forged, "a forged address is never counted");
}

/// The answers to one login attempt from each address, in turn.
async fn statuses(app: &TestApp, addresses: &[&str]) -> Vec<u16> {
    let mut statuses = Vec::new();
    for address in addresses {
        statuses.push(
            login_through_proxy(app, &[*address])
                .await
                .status()
                .as_u16(),
        );
    }
    statuses
}

#[sqlx::test(migrations = "../migrations")]
async fn addresses_in_one_ipv6_64_share_a_limit(pool: PgPool) {
    let app = spawn_app_with(pool, behind_one_proxy(2)).await;
    assert_eq!(
        statuses(
            &app,
            &[
                "2001:db8:aa:bb::1",
                "2001:db8:aa:bb:1234:5678:9abc:def0",
                "2001:db8:aa:bb::ffff",
            ]
        )
        .await,
        [401, 401, 429],
        "one /64 is one subscriber"
    );
    assert_eq!(
        statuses(&app, &["2001:db8:aa:cc::1"]).await,
        [401],
        "the next /64 is someone else"
    );
    assert_eq!(
        statuses(&app, &["::ffff:192.0.2.9", "192.0.2.9", "192.0.2.9"]).await,
        [401, 401, 429],
        "an IPv4-mapped address is its IPv4 address"
    );
}

async fn change_password(app: &TestApp, current: &str) -> reqwest::Response {
    app.post_form(
        "/api/auth/change-password",
        &[
            ("current_password", current),
            ("new_password", "a brand new password"),
            ("new_password_confirm", "a brand new password"),
        ],
    )
    .await
}

#[sqlx::test(migrations = "../migrations")]
async fn change_password_is_throttled_per_account_and_the_password_stays(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.sign_in_per_email = 3;
    let app = spawn_app_with(pool, settings).await;
    app.create_account("ada@example.com", PASSWORD).await;
    app.login_as(&app.client, "ada@example.com", PASSWORD).await;

    for i in 0..3 {
        assert_eq!(
            change_password(&app, "not the password").await.status(),
            422,
            "{i}"
        );
    }
    // The 4th attempt is refused before any password work, even the right one.
    let refused = change_password(&app, PASSWORD).await;
    assert_eq!(refused.status(), 429);
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!(retry_after >= 1, "{retry_after}");
    let body: Value = refused.json().await.expect("json");
    assert!(
        body["RateLimited"]["message"]
            .as_str()
            .expect("message")
            .contains("Try again in"),
        "{body}"
    );

    // Nothing changed: the old password still signs in, the new one does not.
    let fresh = new_client();
    let new = app
        .post_form_as(
            &fresh,
            "/api/auth/login",
            &[
                ("email", "ada@example.com"),
                ("password", "a brand new password"),
            ],
        )
        .await;
    assert_eq!(new.status(), 401);
    app.login_as(&fresh, "ada@example.com", PASSWORD).await;
    assert!(
        app.whoami_as(&app.client).await.is_some(),
        "still signed in"
    );
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
async fn the_session_store_never_recreates_a_deleted_session(pool: PgPool) {
    let app = spawn_app(pool).await;
    let store = RedisSessionStore::new(app.redis.clone());
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut record = Record {
        id: Id::default(),
        data: Default::default(),
        expiry_date: expiry,
    };
    store.create(&mut record).await.expect("create");
    record.data.insert("n".into(), Value::from(1));
    store.save(&record).await.expect("save an existing record");
    let loaded = store.load(&record.id).await.expect("load").expect("exists");
    assert_eq!(loaded.data["n"], 1, "a save updates");

    store.delete(&record.id).await.expect("delete");
    record.data.insert("n".into(), Value::from(2));
    store.save(&record).await.expect("a late save is no error");
    assert!(
        store.load(&record.id).await.expect("load").is_none(),
        "a save after delete does not bring the session back"
    );
    let exists: bool = app
        .redis
        .conn()
        .exists(app.redis.keys().session(&record.id.to_string()))
        .await
        .expect("exists");
    assert!(!exists);

    // A session's first save still creates it (tower-sessions calls
    // `create` for a session without a stored record).
    let session = Session::new(None, Arc::new(store.clone()), None);
    session.insert("n", 3).await.expect("insert");
    session.save().await.expect("first save");
    let id = session.id().expect("an id after the first save");
    let loaded = store.load(&id).await.expect("load").expect("created");
    assert_eq!(loaded.data["n"], 3);
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
    settings.throttle.register_per_ip = 1_000;
    let app = spawn_app_with(pool, settings).await;
    let mut revived = Vec::new();
    for round in 0..20 {
        let client = new_client();
        let email = format!("racer{round}@example.com");
        let registered = app
            .post_form_as(
                &client,
                "/api/auth/register",
                &[
                    ("email", &email),
                    ("display_name", "Racer"),
                    ("password", PASSWORD),
                    ("password_confirm", PASSWORD),
                ],
            )
            .await;
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
