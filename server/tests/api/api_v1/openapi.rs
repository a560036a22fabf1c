//! The OpenAPI document describes every route of the JSON API.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::spawn_app;

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
