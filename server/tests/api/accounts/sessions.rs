//! Sessions: the cookie is HttpOnly and SameSite=Lax, Secure over HTTPS,
//! and rotated at sign-in; a session ends at its absolute lifetime however
//! active; the session store never recreates a deleted session.

use std::sync::Arc;

use engine::sessions::RedisSessionStore;
use redis::AsyncCommands as _;
use serde_json::Value;
use sqlx::PgPool;
use tower_sessions::{
    Session, SessionStore as _,
    session::{Id, Record},
};

use crate::support::app::{spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

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
async fn the_session_cookie_is_a_secure_host_cookie_when_served_over_https(pool: PgPool) {
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
        .find(|v| v.starts_with("__Host-admitone_session="))
        .expect("the session cookie, named __Host- over https")
        .to_owned();
    // What the prefix promises a browser: set by this host alone, for the
    // whole site, over https only (no subdomain can plant or read it).
    assert!(cookie.contains("Secure"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains("Domain"), "{cookie}");
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
