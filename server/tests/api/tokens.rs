//! API tokens: created in the console (shown once), accepted as `Bearer` by
//! every admin endpoint of `/api/v1` within their tenant and scopes, dead
//! once revoked.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::app::spawn_app;
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

#[sqlx::test(migrations = "../migrations")]
async fn the_openapi_document_describes_every_route_of_the_json_api(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/api/v1/openapi.json").await;
    assert_eq!(response.status(), 200);
    let doc: Value = response.json().await.expect("json");
    assert!(doc["openapi"].as_str().expect("version").starts_with("3."));
    let paths = doc["paths"].as_object().expect("paths");
    for path in [
        "/api/v1/auth/register",
        "/api/v1/auth/login",
        "/api/v1/auth/logout",
        "/api/v1/tenants/{tenant_id}/shares",
        "/api/v1/shares/{share_id}/status",
        "/api/v1/shares/{share_id}/resources",
        "/api/v1/shares/{share_id}/codes",
        "/api/v1/codes/{code_id}/revoke",
        "/api/v1/codes/{code_id}/unbind",
        "/api/v1/s/{slug}",
        "/api/v1/s/{slug}/code",
        "/api/v1/s/{slug}/resources/{resource_id}/open",
        "/api/v1/s/{slug}/resources/{resource_id}/content",
    ] {
        assert!(paths.contains_key(path), "{path} is documented");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for schema in [
        "Share",
        "CodeView",
        "ErrorBody",
        "IssuedBatch",
        "ShareInput",
    ] {
        assert!(
            doc["components"]["schemas"][schema].is_object(),
            "{schema} is a schema"
        );
    }
    let docs = app.get("/api/v1/docs").await;
    assert_eq!(docs.status(), 200);
    let html = docs.text().await.expect("html");
    assert!(
        html.contains("POST /api/v1/shares/{share_id}/codes"),
        "{html}"
    );
}
