//! Every error of `/api/v1` is an RFC 9457 problem document
//! (`application/problem+json`), whatever route and whatever layer refused:
//! the handler, an extractor, the cross-site check, the router itself.

use reqwest::{Method, StatusCode, header};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, spawn_app};

/// The answer's status and problem document, after checking its shape.
async fn problem_of(response: reqwest::Response, what: &str) -> (StatusCode, Value) {
    let status = response.status();
    let kind = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("body");
    assert!(
        status.is_client_error(),
        "{what}: expected a 4xx, got {status}: {text}"
    );
    assert_eq!(kind, "application/problem+json", "{what}: {status} {text}");
    let body: Value = serde_json::from_str(&text).expect("a JSON body");
    assert_eq!(body["status"], status.as_u16(), "{what}: {body}");
    for member in ["type", "title", "detail", "code"] {
        assert!(
            body[member].as_str().is_some_and(|v| !v.is_empty()),
            "{what}: `{member}` missing in {body}"
        );
    }
    assert!(
        body["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("/api/v1/docs#problem-")),
        "{what}: {body}"
    );
    (status, body)
}

/// The path with each `{parameter}` replaced by something no row has.
fn concrete(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        out.push_str(&Uuid::new_v4().to_string());
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

async fn send(
    app: &TestApp,
    method: &Method,
    path: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = new_client()
        .request(method.clone(), format!("{}{path}", app.address))
        .header(header::CONTENT_TYPE, "application/json")
        .body("{not json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("request")
}

#[sqlx::test(migrations = "../migrations")]
async fn every_documented_route_answers_its_4xx_as_a_problem_document(pool: PgPool) {
    let app = spawn_app(pool).await;
    let doc: Value = app
        .get("/api/v1/openapi.json")
        .await
        .json()
        .await
        .expect("document");
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("operations").keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let url = concrete(path);
            let what = format!("{method} {path}");
            // Nobody signed in, a body that is not JSON, ids no row has.
            let plain = send(&app, &method, &url, &[]).await;
            if plain.status().is_client_error() {
                problem_of(plain, &what).await;
            } else {
                // Only signing out is fine for anyone; it still refuses
                // another site.
                assert_eq!(path, "/api/v1/auth/logout", "{what}: {}", plain.status());
            }
            // An unknown API token.
            let token = send(&app, &method, &url, &[("authorization", "Bearer a1t_nope")]).await;
            assert!(
                !token.status().is_server_error(),
                "{what} with a bad token: {}",
                token.status()
            );
            if token.status().is_client_error() {
                problem_of(token, &format!("{what} with a bad token")).await;
            }
            if method != Method::GET {
                let (status, body) = problem_of(
                    send(
                        &app,
                        &method,
                        &url,
                        &[("origin", "https://elsewhere.example")],
                    )
                    .await,
                    &format!("{what} from another site"),
                )
                .await;
                assert_eq!(status, StatusCode::FORBIDDEN);
                assert_eq!(body["code"], "cross_site_request");
            }
            operations += 1;
        }
    }
    assert!(operations >= 13, "only {operations} operations documented");

    // A path no route has, and a method a route does not take.
    let (status, body) = problem_of(
        send(&app, &Method::GET, "/api/v1/no/such/thing", &[]).await,
        "an unknown path",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "no_such_route");
    let (status, body) = problem_of(
        send(&app, &Method::DELETE, "/api/v1/auth/login", &[]).await,
        "a method the route does not take",
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body["code"], "method_not_allowed");
    // A path segment that is not UTF-8: the router's own refusal.
    let (status, _) = problem_of(
        send(&app, &Method::GET, "/api/v1/shares/%FF", &[]).await,
        "a path that is not UTF-8",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
