//! `Idempotency-Key` on the JSON API's creates: a retry creates nothing new
//! and gets the original answer, secrets included, while it is held (then,
//! for a batch, a 409 naming it); a key is one request's; many retries
//! racing create exactly one object. Checked against the database after
//! each step.

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with};
use crate::support::course::{self, admin, error_of, load_settings};
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

/// Retrying "issue N codes" with the same Idempotency-Key issues nothing
/// new and answers the original result, codes included, while they are
/// held (a client that lost the answer gets its codes back); after that, a
/// 409 naming the batch.
#[sqlx::test(migrations = "../migrations")]
async fn issuing_a_batch_is_idempotent_per_key(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({})).await;
    let issue_with = |key: &'static str, count: u32| {
        admin
            .client
            .post(format!(
                "{}/api/v1/shares/{}/codes",
                app.address, course.share
            ))
            .header("idempotency-key", key)
            .json(&json!({ "count": count }))
            .send()
    };
    let results = join_all((0..5).map(|_| issue_with("batch-1", 10))).await;
    let mut answers = Vec::new();
    for response in results {
        let response = response.expect("request");
        assert_eq!(response.status(), 201, "every try gets the batch");
        answers.push(response.json::<serde_json::Value>().await.expect("json"));
    }
    let original = answers[0].clone();
    assert_eq!(original["count"], 10);
    assert_eq!(original["codes"].as_array().map(Vec::len), Some(10));
    for answer in &answers {
        assert_eq!(answer, &original, "the original result, codes included");
    }
    let codes: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(codes, 10, "one batch for five concurrent tries");
    // A later retry, too.
    let later = issue_with("batch-1", 10).await.expect("request");
    assert_eq!(later.status(), 201);
    assert_eq!(
        later.json::<serde_json::Value>().await.expect("json"),
        original
    );

    let other = course::course(&app, &admin, json!({})).await;
    let reused = admin
        .client
        .post(format!(
            "{}/api/v1/shares/{}/codes",
            app.address, other.share
        ))
        .header("idempotency-key", "batch-1")
        .json(&json!({ "count": 10 }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        error_of(reused).await,
        (422, "idempotency_key_reused".into())
    );

    // Once the held answer is gone (HANDOVER_TTL), a retry hears which
    // batch its key issued, and still issues nothing.
    let batch: uuid::Uuid = serde_json::from_value(original["batch_id"].clone()).expect("id");
    let owner: uuid::Uuid = sqlx::query_scalar("SELECT created_by FROM code_batches WHERE id = $1")
        .bind(batch)
        .fetch_one(&app.pool)
        .await
        .expect("owner");
    let held: i64 = redis::cmd("DEL")
        .arg(app.redis.keys().handover(owner, batch, "api-answer"))
        .query_async(&mut app.redis.conn())
        .await
        .expect("DEL");
    assert_eq!(held, 1, "the answer was held in Redis");
    let expired = issue_with("batch-1", 10).await.expect("request");
    assert_eq!(
        error_of(expired).await,
        (409, "batch_already_issued".into())
    );
    assert_eq!(
        issue_with("batch-2", 3).await.expect("request").status(),
        201
    );

    // The admin revoked a lost batch's codes: a late retry does not get
    // them back as if fresh.
    let third = issue_with("batch-3", 2).await.expect("request");
    assert_eq!(third.status(), 201);
    let third: serde_json::Value = third.json().await.expect("json");
    let third_batch: uuid::Uuid = serde_json::from_value(third["batch_id"].clone()).expect("id");
    let tenant: uuid::Uuid = sqlx::query_scalar("SELECT tenant_id FROM code_batches WHERE id = $1")
        .bind(third_batch)
        .fetch_one(&app.pool)
        .await
        .expect("tenant");
    engine::batches::revoke_unused_of_batch(
        &app.pool,
        engine::tenants::TenantId(tenant),
        engine::accounts::AccountId(owner),
        third_batch,
    )
    .await
    .expect("revoke");
    assert_eq!(
        error_of(issue_with("batch-3", 2).await.expect("request")).await,
        (409, "batch_already_issued".into())
    );
}

/// A key is one login's: two tokens of one member (given to two shops, say)
/// that happen to send the same `Idempotency-Key` are two requests. The
/// second issues a batch of its own; it never hears the first's plain
/// codes. The session's key is a third login's. A retry by the first token
/// still gets its own answer.
#[sqlx::test(migrations = "../migrations")]
async fn an_idempotency_key_never_crosses_logins(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({})).await;
    let shop_a = create_token(&app, &admin, &["read", "write"]).await;
    let shop_b = create_token(&app, &admin, &["read", "write"]).await;
    let path = format!("/api/v1/shares/{}/codes", course.share);
    let body = json!({ "count": 2 });
    let (status, _, first) = create(&app, &shop_a, &path, Some("order-1001"), body.clone()).await;
    assert_eq!(status, 201, "{first}");
    let (status, _, second) = create(&app, &shop_b, &path, Some("order-1001"), body.clone()).await;
    assert_eq!(status, 201, "{second}");
    assert_ne!(second["batch_id"], first["batch_id"], "a batch of its own");
    let codes_of = |answer: &Value| -> Vec<String> {
        answer["codes"]
            .as_array()
            .expect("codes")
            .iter()
            .map(|c| c["code"].as_str().expect("code").to_owned())
            .collect()
    };
    for code in codes_of(&second) {
        assert!(!codes_of(&first).contains(&code), "another login's code");
    }
    let by_session = admin
        .client
        .post(format!("{}{path}", app.address))
        .header("idempotency-key", "order-1001")
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(by_session.status(), 201);
    let by_session: Value = by_session.json().await.expect("json");
    assert_ne!(by_session["batch_id"], first["batch_id"]);
    assert_ne!(by_session["batch_id"], second["batch_id"]);
    let (status, _, again) = create(&app, &shop_a, &path, Some("order-1001"), body).await;
    assert_eq!(status, 201);
    assert_eq!(
        again, first,
        "a retry of the first login is answered as before"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM code_batches").await,
        3,
        "three logins, three batches"
    );
    // The other creates are keyed by login too (a share).
    let shares = format!("/api/v1/tenants/{}/shares", admin.tenant);
    let (a, _, share_a) =
        create(&app, &shop_a, &shares, Some("s-1"), json!({ "title": "A" })).await;
    let (b, replayed, share_b) =
        create(&app, &shop_b, &shares, Some("s-1"), json!({ "title": "A" })).await;
    assert_eq!((a, b), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(replayed, None, "not another login's answer");
    assert_ne!(share_a["id"], share_b["id"]);
}
