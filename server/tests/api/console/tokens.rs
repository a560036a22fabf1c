//! API tokens: created in the console (shown once), accepted as `Bearer` by
//! every admin endpoint of `/api/v1` within their tenant and scopes, dead
//! once revoked or expired; a token with the `integrations` scope manages
//! tokens and webhooks but never mints one that does more than itself; each
//! token has its own allowance per minute.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::app::{new_client, redis_url, spawn_app, spawn_app_with, test_settings};
use crate::support::course::{admin, course};
use crate::support::tokens::{as_token, create_token};

#[sqlx::test(migrations = "../migrations")]
async fn tokens_act_within_their_tenant_and_scopes_until_revoked(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin_a = admin(&app).await;
    let admin_b = admin(&app).await;
    let other_share = course(&app, &admin_b, json!({})).await;
    let writer = create_token(&app, &admin_a, &["read", "write"]).await;
    let reader = create_token(&app, &admin_a, &["read"]).await;
    // Only SHA-256 digests are stored, never the tokens.
    let digests: Vec<Vec<u8>> = sqlx::query_scalar("SELECT digest FROM api_tokens")
        .fetch_all(&app.pool)
        .await
        .expect("digests");
    assert_eq!(digests.len(), 2);
    for token in [&writer, &reader] {
        let expected = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).to_vec();
        assert!(digests.contains(&expected));
    }
    assert!(
        digests
            .iter()
            .all(|d| d.len() == 32 && !d.windows(4).any(|w| w == b"a1t_"))
    );

    // The writer creates a share, issues codes and lists them.
    let (status, share) = as_token(
        &app,
        &writer,
        reqwest::Method::POST,
        &format!("/api/v1/tenants/{}/shares", admin_a.tenant),
        Some(json!({ "title": "From the shop", "status": "active" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{share}");
    let share_id = share["id"].as_str().expect("id").to_owned();
    let (status, batch) = as_token(
        &app,
        &writer,
        reqwest::Method::POST,
        &format!("/api/v1/shares/{share_id}/codes"),
        Some(json!({ "count": 3 })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{batch}");
    let (status, list) = as_token(
        &app,
        &reader,
        reqwest::Method::GET,
        &format!("/api/v1/shares/{share_id}/codes"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(list["codes"].as_array().expect("codes").len(), 3);
    // Audited as the admin who made the token.
    let actor: String = sqlx::query_scalar(
        "SELECT a.email FROM audit_log l JOIN accounts a ON a.id = l.actor_id WHERE l.action = 'share.created' AND l.target_id = $1::uuid",
    )
    .bind(&share_id)
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert!(actor.starts_with("admin-"), "{actor}");

    // Read-only cannot write; no token reaches another tenant.
    let (status, _) = as_token(
        &app,
        &reader,
        reqwest::Method::POST,
        &format!("/api/v1/shares/{share_id}/codes"),
        Some(json!({ "count": 1 })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_token(
        &app,
        &writer,
        reqwest::Method::GET,
        &format!("/api/v1/shares/{}/codes", other_share.share),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_token(
        &app,
        "a1t_not-a-real-token",
        reqwest::Method::GET,
        &format!("/api/v1/shares/{share_id}/codes"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let used: Option<time::OffsetDateTime> =
        sqlx::query_scalar("SELECT max(last_used_at) FROM api_tokens WHERE tenant_id = $1")
            .bind(admin_a.tenant)
            .fetch_one(&app.pool)
            .await
            .expect("last used");
    assert!(used.is_some(), "use is recorded");

    // Revoked: refused at once.
    let id: uuid::Uuid = sqlx::query_scalar(
        "SELECT id FROM api_tokens WHERE tenant_id = $1 AND 'write' = ANY(scopes)",
    )
    .bind(admin_a.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("token id");
    let response = admin_a
        .client
        .post(format!("{}/api/admin/tokens/revoke", app.address))
        .form(&[
            ("tenant_id", admin_a.tenant.to_string()),
            ("token_id", id.to_string()),
            ("confirm", "yes".to_owned()),
        ])
        .send()
        .await
        .expect("revoke");
    assert_eq!(response.status(), 200);
    let (status, _) = as_token(
        &app,
        &writer,
        reqwest::Method::GET,
        &format!("/api/v1/shares/{share_id}/codes"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Bad input: no scope, no name.
    let response = admin_a
        .client
        .post(format!("{}/api/admin/tokens/create", app.address))
        .form(&[
            ("tenant_id", admin_a.tenant.to_string()),
            ("name", "x".into()),
        ])
        .send()
        .await
        .expect("no scope");
    assert_eq!(response.status(), 422);
    let response = admin_a
        .client
        .post(format!("{}/api/admin/tokens/create", app.address))
        .form(&[
            ("tenant_id", admin_a.tenant.to_string()),
            ("name", " ".into()),
            ("read", "on".into()),
        ])
        .send()
        .await
        .expect("no name");
    assert_eq!(response.status(), 422);
}

/// Tokens and webhooks through the API: a token with the `integrations`
/// scope manages them, never mints a token that does more than itself or
/// outlives it, and an expired or revoked token is refused.
#[sqlx::test(migrations = "../migrations")]
async fn an_integrations_token_manages_tokens_and_webhooks(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let tenant = admin.tenant;
    let root = create_token(&app, &admin, &["read", "write", "integrations"]).await;
    let plain = create_token(&app, &admin, &["read", "write"]).await;
    let tokens_path = format!("/api/v1/tenants/{tenant}/tokens");

    // Without the scope: no tokens, no webhooks.
    for path in [
        tokens_path.clone(),
        format!("/api/v1/tenants/{tenant}/webhooks"),
    ] {
        let (status, body) = as_token(&app, &plain, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
    }

    // A child that expires tomorrow, with less than its parent.
    let tomorrow = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    let tomorrow_text = tomorrow
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let (status, child) = as_token(
        &app,
        &root,
        Method::POST,
        &tokens_path,
        Some(json!({ "name": "sync", "scopes": ["read", "integrations"], "expires_at": tomorrow_text })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{child}");
    let child_token = child["token"].as_str().expect("token").to_owned();
    assert_eq!(child["scopes"], json!(["integrations", "read"]));
    let (status, _) = as_token(
        &app,
        &child_token,
        Method::GET,
        &format!("/api/v1/tenants/{tenant}/shares"),
        None,
    )
    .await;
    assert_eq!(status, 200, "the child reads");

    // The child cannot mint more than itself, nor a token that outlives it.
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    for (body, what) in [
        (
            json!({ "name": "more", "scopes": ["write"], "expires_at": tomorrow_text }),
            "a scope it lacks",
        ),
        (json!({ "name": "longer", "scopes": ["read"] }), "no expiry"),
        (
            json!({ "name": "longer", "scopes": ["read"], "expires_at": (tomorrow + time::Duration::days(1)).format(&time::format_description::well_known::Rfc3339).expect("format") }),
            "a later expiry",
        ),
    ] {
        let (status, refused) =
            as_token(&app, &child_token, Method::POST, &tokens_path, Some(body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {refused}");
        assert_eq!(refused["code"], "token_beyond_caller", "{what}");
    }
    // Bad input: clear errors, nothing made.
    for (body, field) in [
        (json!({ "name": "x", "scopes": ["admin"] }), "scopes"),
        (json!({ "name": "x", "scopes": [] }), "scopes"),
        (json!({ "name": "", "scopes": ["read"] }), "name"),
        (
            json!({ "name": "x", "scopes": ["read"], "expires_at": "2020-01-01T00:00:00Z" }),
            "expires_at",
        ),
    ] {
        let (status, refused) = as_token(&app, &root, Method::POST, &tokens_path, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
        assert_eq!(refused["field"], field, "{refused}");
    }
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(after, before, "refusals made no token");

    // Listed with its expiry; once expired it is refused like a revoked one.
    let (_, list) = as_token(&app, &root, Method::GET, &tokens_path, None).await;
    let listed = list
        .as_array()
        .expect("tokens")
        .iter()
        .find(|t| t["name"] == "sync")
        .expect("the child is listed")
        .clone();
    assert!(listed["expires_at"].is_string(), "{listed}");
    assert!(
        !list.to_string().contains(&child_token),
        "a list never shows a token"
    );
    sqlx::query(
        "UPDATE api_tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day' WHERE name = 'sync'",
    )
    .execute(&app.pool)
    .await
    .expect("expire");
    let (status, _) = as_token(
        &app,
        &child_token,
        Method::GET,
        &format!("/api/v1/tenants/{tenant}/shares"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "an expired token");

    // A session revokes any token of its tenant; an id of no token is 404.
    let plain_id = list
        .as_array()
        .expect("tokens")
        .iter()
        .find(|t| t["scopes"] == json!(["read", "write"]))
        .expect("the plain token")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let revoke_path = |id: &str| format!("{}{tokens_path}/{id}/revoke", app.address);
    let revoked = admin
        .client
        .post(revoke_path(&plain_id))
        .send()
        .await
        .expect("revoke");
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    let (status, _) = as_token(
        &app,
        &plain,
        Method::GET,
        &format!("/api/v1/tenants/{tenant}/shares"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a revoked token");
    let unknown = admin
        .client
        .post(revoke_path(&uuid::Uuid::new_v4().to_string()))
        .send()
        .await
        .expect("revoke");
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);

    // A token revokes only itself and what it made; revoking it revokes
    // what it made, and theirs.
    let (status, second) = as_token(
        &app,
        &root,
        Method::POST,
        &tokens_path,
        Some(json!({ "name": "second", "scopes": ["read", "integrations"] })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second_token = second["token"].as_str().expect("token").to_owned();
    let (status, third) = as_token(
        &app,
        &second_token,
        Method::POST,
        &tokens_path,
        Some(json!({ "name": "third", "scopes": ["read"] })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{third}");
    let third_token = third["token"].as_str().expect("token").to_owned();
    let root_id: String = sqlx::query_scalar(
        "SELECT id::text FROM api_tokens WHERE tenant_id = $1 AND parent_id IS NULL AND 'integrations' = ANY(scopes)",
    )
    .bind(tenant)
    .fetch_one(&app.pool)
    .await
    .expect("root id");
    let (status, refused) = as_token(
        &app,
        &second_token,
        Method::POST,
        &format!("{tokens_path}/{root_id}/revoke"),
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the token that made it: {refused}"
    );
    assert_eq!(refused["code"], "token_beyond_caller");
    let (status, _) = as_token(
        &app,
        &root,
        Method::POST,
        &format!(
            "{tokens_path}/{}/revoke",
            second["id"].as_str().expect("id")
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for dead in [&second_token, &third_token] {
        let (status, _) = as_token(
            &app,
            dead,
            Method::GET,
            &format!("/api/v1/tenants/{tenant}/shares"),
            None,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "revoked with the token that made it"
        );
    }
    let via: Option<String> = sqlx::query_scalar(
        "SELECT details->>'via_token' FROM audit_log WHERE action = 'token.created' AND target_id = $1::uuid",
    )
    .bind(third["id"].as_str().expect("id"))
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(
        via.as_deref(),
        second["id"].as_str(),
        "the audit names the token that asked"
    );

    // Webhooks: add, list, refuse bad input, disable for good.
    let hooks = format!("/api/v1/tenants/{tenant}/webhooks");
    let (status, bad) = as_token(
        &app,
        &root,
        Method::POST,
        &hooks,
        Some(json!({ "url": "https://shop.example/hook", "events": ["code.exploded"] })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    let (status, bad) = as_token(
        &app,
        &root,
        Method::POST,
        &hooks,
        Some(json!({ "url": "ftp://shop.example/hook", "events": ["code.bound"] })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    let (status, created) = as_token(
        &app,
        &root,
        Method::POST,
        &hooks,
        Some(
            json!({ "url": "https://shop.example/hook", "events": ["code.bound", "code.revoked"] }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(
        created["secret"].as_str().is_some_and(|s| s.len() >= 32),
        "{created}"
    );
    let endpoint = created["id"].as_str().expect("id").to_owned();
    let (_, list) = as_token(&app, &root, Method::GET, &hooks, None).await;
    assert_eq!(list.as_array().expect("hooks").len(), 1, "{list}");
    assert_eq!(list[0]["events"], json!(["code.bound", "code.revoked"]));
    assert_eq!(list[0]["disabled_at"], Value::Null);
    assert!(
        !list
            .to_string()
            .contains(created["secret"].as_str().expect("secret"))
    );
    let (status, deliveries) = as_token(
        &app,
        &root,
        Method::GET,
        &format!("{hooks}/deliveries"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(deliveries, json!([]));
    let (status, _) = as_token(
        &app,
        &root,
        Method::POST,
        &format!(
            "{hooks}/{endpoint}/deliveries/{}/redeliver",
            uuid::Uuid::new_v4()
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = as_token(
        &app,
        &root,
        Method::POST,
        &format!("{hooks}/{endpoint}/disable"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, list) = as_token(&app, &root, Method::GET, &hooks, None).await;
    assert!(list[0]["disabled_at"].is_string(), "{list}");
    let audited: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'webhook.%' ORDER BY created_at",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audited.len(), 2, "{audited:?}");
}

/// Each token has its own allowance per minute: past it, 429 with the wait
/// and the limit in headers, as a problem document; other tokens go on.
#[sqlx::test(migrations = "../migrations")]
async fn each_api_token_is_throttled_on_its_own(pool: PgPool) {
    let mut settings = test_settings(&redis_url());
    settings.throttle.api_token_per_minute = 3;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let busy = create_token(&app, &admin, &["read"]).await;
    let calm = create_token(&app, &admin, &["read"]).await;
    let path = format!("/api/v1/tenants/{}/shares", admin.tenant);
    for _ in 0..3 {
        let (status, _) = as_token(&app, &busy, Method::GET, &path, None).await;
        assert_eq!(status, 200);
    }
    let refused = new_client()
        .get(format!("{}{path}", app.address))
        .bearer_auth(&busy)
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let header = |name: &str| {
        refused
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("ratelimit-limit").as_deref(), Some("3"));
    assert_eq!(header("ratelimit-remaining").as_deref(), Some("0"));
    let retry: u64 = header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        header("content-type").as_deref(),
        Some("application/problem+json")
    );
    let body: Value = refused.json().await.expect("problem");
    assert_eq!(body["code"], "rate_limited");
    let (status, _) = as_token(&app, &calm, Method::GET, &path, None).await;
    assert_eq!(status, 200, "another token is not slowed down");
}
