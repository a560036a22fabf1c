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
    // Every route the router mounts, with every method it answers, is in
    // the document: read from the router's own source, so a route added
    // there without its documentation fails here.
    let routes = routes_of(include_str!("../../../src/routes/api/mod.rs"));
    assert!(
        routes.len() > 40,
        "the router's routes were read: {routes:?}"
    );
    for (path, methods) in &routes {
        // The document and its page, and the catch-all 404, describe
        // themselves.
        if matches!(
            path.as_str(),
            "/api/v1/openapi.json" | "/api/v1/docs" | "/api/v1/{*rest}"
        ) {
            continue;
        }
        let documented = paths
            .get(path)
            .unwrap_or_else(|| panic!("{path} is not in the OpenAPI document"));
        for method in methods {
            assert!(
                documented.get(method.as_str()).is_some(),
                "{} {path} is not in the OpenAPI document",
                method.to_uppercase()
            );
        }
    }
    // And nothing is documented that the router does not mount.
    for path in paths.keys() {
        assert!(
            routes.iter().any(|(routed, _)| routed == path),
            "{path} is documented but not routed"
        );
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

/// The routes of a router's source: each `.route("path", …)` call and the
/// methods (`get(`, `post(`, `put(`, `delete(`, `patch(`) its method router
/// chains.
fn routes_of(source: &str) -> Vec<(String, Vec<String>)> {
    let mut routes = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(".route(") {
        rest = &rest[at + ".route(".len()..];
        let Some(open) = rest.find('"') else { break };
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        let path = after[..close].to_owned();
        // The call's text, up to its closing parenthesis.
        let (mut depth, mut end) = (1_i32, 0);
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let call = &rest[..end];
        let methods: Vec<String> = ["get", "post", "put", "delete", "patch"]
            .into_iter()
            .filter(|m| {
                call.match_indices(&format!("{m}("))
                    .any(|(i, _)| !call[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            })
            .map(str::to_owned)
            .collect();
        routes.push((path, methods));
    }
    routes
}

#[test]
fn routes_are_read_with_their_methods() {
    let source = r#"Router::new()
        .route("/a", get(x::y).post(z))
        .route(
            "/b/{id}",
            axum::routing::put(p).delete(q).layer(DefaultBodyLimit::max(target(1))),
        )"#;
    assert_eq!(
        routes_of(source),
        [
            ("/a".to_owned(), vec!["get".to_owned(), "post".to_owned()]),
            (
                "/b/{id}".to_owned(),
                vec!["put".to_owned(), "delete".to_owned()]
            ),
        ]
    );
}
