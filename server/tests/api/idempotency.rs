//! `Idempotency-Key` on the JSON API's creates: a retry creates nothing new
//! and gets the original answer, secrets included, while it is held; a key
//! is one request's; many retries racing create exactly one object.
//! Checked against the database after each step.

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app};
use crate::support::course::admin;
use crate::support::tokens::create_token;

async fn create(
    app: &TestApp,
    token: &str,
    path: &str,
    key: Option<&str>,
    body: Value,
) -> (StatusCode, Option<String>, Value) {
    let mut request = new_client()
        .request(Method::POST, format!("{}{path}", app.address))
        .bearer_auth(token)
        .json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (
        status,
        replayed,
        response.json().await.unwrap_or(Value::Null),
    )
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

#[sqlx::test(migrations = "../migrations")]
async fn a_retry_with_the_same_key_gets_the_original_answer_and_creates_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let token = create_token(&app, &admin, &["read", "write", "integrations"]).await;
    let shares = format!("/api/v1/tenants/{}/shares", admin.tenant);

    let first = create(
        &app,
        &token,
        &shares,
        Some("order-1"),
        json!({ "title": "Once" }),
    )
    .await;
    assert_eq!(first.0, StatusCode::CREATED, "{}", first.2);
    assert_eq!(first.1, None, "the first answer is not a replay");
    let again = create(
        &app,
        &token,
        &shares,
        Some("order-1"),
        json!({ "title": "Once" }),
    )
    .await;
    assert_eq!(again.0, StatusCode::CREATED);
    assert_eq!(again.1.as_deref(), Some("true"));
    assert_eq!(again.2, first.2, "the original answer, byte for byte");
    assert_eq!(
        count(&app, "SELECT count(*) FROM shares WHERE title = 'Once'").await,
        1
    );

    // The same key for another request: refused on the header, nothing made.
    let (status, _, refused) = create(
        &app,
        &token,
        &shares,
        Some("order-1"),
        json!({ "title": "Twice" }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["code"], "idempotency_key_reused");
    assert_eq!(refused["field"], "Idempotency-Key");
    let (status, _, refused) = create(
        &app,
        &token,
        &shares,
        Some(&"k".repeat(256)),
        json!({ "title": "Twice" }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["field"], "Idempotency-Key");
    assert_eq!(
        count(&app, "SELECT count(*) FROM shares WHERE title = 'Twice'").await,
        0
    );

    // A failed attempt frees its key: fixed, the retry runs.
    let (status, _, _) = create(
        &app,
        &token,
        &shares,
        None,
        json!({ "title": "Taken", "slug": "taken" }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _, refused) = create(
        &app,
        &token,
        &shares,
        Some("order-2"),
        json!({ "title": "Mine", "slug": "taken" }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused["code"], "slug_taken");
    let (status, _, _) = create(
        &app,
        &token,
        &shares,
        Some("order-2"),
        json!({ "title": "Mine", "slug": "mine" }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "the key was released");

    // A token's answer carries its secret: the retry gets the same token.
    let tokens = format!("/api/v1/tenants/{}/tokens", admin.tenant);
    let body = json!({ "name": "shop", "scopes": ["read"] });
    let minted = create(&app, &token, &tokens, Some("mint-1"), body.clone()).await;
    assert_eq!(minted.0, StatusCode::CREATED, "{}", minted.2);
    let replayed = create(&app, &token, &tokens, Some("mint-1"), body.clone()).await;
    assert_eq!(replayed.2["token"], minted.2["token"]);
    assert_eq!(
        count(&app, "SELECT count(*) FROM api_tokens WHERE name = 'shop'").await,
        1
    );

    // Once the answer is no longer held, the retry hears what was created.
    let (tenant, actor, stored_key): (uuid::Uuid, uuid::Uuid, String) = sqlx::query_as(
        "SELECT tenant_id, actor_id, key FROM idempotency_keys WHERE key LIKE 'token:%:mint-1'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("claim");
    let held = app
        .redis
        .keys()
        .idempotent_answer(tenant, actor, &stored_key);
    let _: () = redis::cmd("DEL")
        .arg(&held)
        .query_async(&mut app.redis.conn())
        .await
        .expect("forget the answer");
    let (status, _, gone) = create(&app, &token, &tokens, Some("mint-1"), body).await;
    assert_eq!(status, StatusCode::CONFLICT, "{gone}");
    assert_eq!(gone["code"], "idempotent_answer_gone");
    let id = minted.2["id"].as_str().expect("id");
    assert!(
        gone["detail"].as_str().is_some_and(|d| d.contains(id)),
        "{gone}"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM api_tokens WHERE name = 'shop'").await,
        1
    );

    // An upload: the retry stores nothing new.
    let share = first.2["id"].as_str().expect("share").to_owned();
    let upload = || {
        let part = reqwest::multipart::Part::bytes(b"0123456789".to_vec())
            .file_name("lesson.mp4")
            .mime_str("video/mp4")
            .expect("mime");
        new_client()
            .post(format!("{}/api/v1/shares/{share}/resources", app.address))
            .bearer_auth(&token)
            .header("Idempotency-Key", "upload-1")
            .multipart(
                reqwest::multipart::Form::new()
                    .text("title", "Lesson")
                    .part("file", part),
            )
            .send()
    };
    let first_upload = upload().await.expect("upload");
    assert_eq!(first_upload.status(), StatusCode::CREATED);
    let first_upload: Value = first_upload.json().await.expect("resource");
    let second_upload = upload().await.expect("upload");
    assert_eq!(second_upload.status(), StatusCode::CREATED);
    let second_upload: Value = second_upload.json().await.expect("resource");
    assert_eq!(first_upload["id"], second_upload["id"]);
    let stored: i64 =
        sqlx::query_scalar("SELECT count(*) FROM resources WHERE share_id = $1::uuid")
            .bind(&share)
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(stored, 1);

    // Keys are per login: the same member's session with the same key and
    // request creates its own (a token's answer never reaches it).
    let from_session = admin
        .client
        .post(format!("{}{tokens}", app.address))
        .header("Idempotency-Key", "mint-1")
        .json(&json!({ "name": "shop", "scopes": ["read"] }))
        .send()
        .await
        .expect("session");
    assert_eq!(from_session.status(), StatusCode::CREATED);
    assert!(from_session.headers().get("idempotent-replayed").is_none());
    let from_session: Value = from_session.json().await.expect("token");
    assert_ne!(from_session["token"], minted.2["token"]);

    // Keys are per member: another admin's same key is theirs.
    let other = admin_in(&app, admin.tenant).await;
    let (status, replayed, _) = create(
        &app,
        &other,
        &shares,
        Some("order-1"),
        json!({ "title": "Once" }),
    )
    .await;
    assert_eq!((status, replayed), (StatusCode::CREATED, None));
}

/// A second owner of the same tenant, and their token.
async fn admin_in(app: &TestApp, tenant: uuid::Uuid) -> String {
    let email = format!("second-{}@example.com", uuid::Uuid::new_v4());
    let account = app
        .create_account(&email, crate::support::course::PASSWORD)
        .await;
    sqlx::query(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner')",
    )
    .bind(tenant)
    .bind(account.0)
    .execute(&app.pool)
    .await
    .expect("member");
    let client = new_client();
    app.login_as(&client, &email, crate::support::course::PASSWORD)
        .await;
    let second = crate::support::course::Admin { client, tenant };
    create_token(app, &second, &["read", "write"]).await
}

#[sqlx::test(migrations = "../migrations")]
async fn many_retries_racing_create_exactly_one(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let token = create_token(&app, &admin, &["read", "write", "integrations"]).await;
    let hooks = format!("/api/v1/tenants/{}/webhooks", admin.tenant);
    let body = json!({ "url": "https://shop.example/hook", "events": ["code.bound"] });
    let answers =
        join_all((0..16).map(|_| create(&app, &token, &hooks, Some("hook-1"), body.clone()))).await;
    let created: Vec<&Value> = answers
        .iter()
        .filter(|(status, _, _)| *status == StatusCode::CREATED)
        .map(|(_, _, body)| body)
        .collect();
    assert!(!created.is_empty(), "one attempt ran");
    for (status, _, body) in &answers {
        assert!(
            *status == StatusCode::CREATED
                || (*status == StatusCode::CONFLICT && body["code"] == "idempotency_key_in_flight"),
            "{status}: {body}"
        );
    }
    assert!(
        created
            .iter()
            .all(|b| b["id"] == created[0]["id"] && b["secret"] == created[0]["secret"])
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM webhook_endpoints").await,
        1,
        "exactly one endpoint"
    );
}
