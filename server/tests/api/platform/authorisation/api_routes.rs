//! The JSON API's half of the cross-tenant matrix, generated from the
//! OpenAPI document: every operation tagged `admin` or `integrations`,
//! through both doors (the admin
//! of tenant A's session, and A's API token with every scope), naming
//! tenant B's objects under A's own tenant (or, for an operation that
//! names only a tenant, naming B's tenant). Each is refused, names none of
//! B's objects, answers exactly as for objects that exist nowhere (no
//! oracle), and B's rows stay as they were; then B's own owner makes each
//! same call and gets through, so the refusals are authorisation, not
//! broken calls. An operation added to the API without a line in
//! [`operations`] fails the test.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::{Target, world};
use crate::support::app::{TestApp, spawn_app};
use crate::support::course::PNG;

/// What an operation sends.
#[derive(Clone)]
enum Body {
    None,
    Json(Value),
    /// The logo: a PNG as `application/octet-stream`'s body.
    Png,
    /// A resource upload (multipart, a small video).
    Upload,
}

/// Every admin operation of `/api/v1` with a body valid for `t`, in the
/// order B's owner calls them (a call that ends an object comes after the
/// calls that still need it).
fn operations(t: Target) -> Vec<(Method, &'static str, Body)> {
    let until = json!({ "until": "2099-01-01T00:00:00Z" });
    let expiry = json!({ "expires_at": "2099-01-01T00:00:00Z" });
    vec![
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/shares",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/shares",
            Body::Json(json!({ "title": "Another course" })),
        ),
        (Method::GET, "/api/v1/shares/{share_id}", Body::None),
        (
            Method::PUT,
            "/api/v1/shares/{share_id}",
            Body::Json(json!({ "title": "Renamed", "slug": "course-b", "status": "active" })),
        ),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/status",
            Body::Json(json!({ "status": "active" })),
        ),
        (Method::GET, "/api/v1/shares/{share_id}/batches", Body::None),
        (Method::GET, "/api/v1/shares/{share_id}/codes", Body::None),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/codes",
            Body::Json(json!({ "count": 2, "label": "x" })),
        ),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/imports",
            Body::Json(json!({ "label": "shop", "codes": ["SHOP-0001", "SHOP-0002"] })),
        ),
        (
            Method::GET,
            "/api/v1/shares/{share_id}/learners",
            Body::None,
        ),
        (
            Method::GET,
            "/api/v1/shares/{share_id}/learners.csv",
            Body::None,
        ),
        (Method::GET, "/api/v1/shares/{share_id}/records", Body::None),
        (
            Method::GET,
            "/api/v1/shares/{share_id}/records.csv",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/extend-access",
            Body::Json(until.clone()),
        ),
        (
            Method::GET,
            "/api/v1/shares/{share_id}/resources",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/resources",
            Body::Upload,
        ),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/resources/{resource_id}",
            Body::Json(json!({ "title": "New" })),
        ),
        (
            Method::DELETE,
            "/api/v1/shares/{share_id}/resources/{doomed_id}",
            Body::None,
        ),
        (Method::GET, "/api/v1/batches/{batch_id}", Body::None),
        (
            Method::GET,
            "/api/v1/batches/{batch_id}/codes.csv",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/batches/{batch_id}/expiry",
            Body::Json(expiry.clone()),
        ),
        (
            Method::GET,
            "/api/v1/batches/{imported_id}/import",
            Body::None,
        ),
        (Method::GET, "/api/v1/codes/{code_id}", Body::None),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/codes/find",
            Body::Json(json!({ "code": t.plain })),
        ),
        (
            Method::POST,
            "/api/v1/codes/{code_id}/extend-access",
            Body::Json(until),
        ),
        (
            Method::POST,
            "/api/v1/codes/{spare_id}/expiry",
            Body::Json(expiry),
        ),
        (Method::POST, "/api/v1/codes/{spare_id}/replace", Body::None),
        (
            Method::POST,
            "/api/v1/codes/{leaked_id}/revoke-and-replace",
            Body::Json(json!({ "reason": "posted on a forum" })),
        ),
        (
            Method::POST,
            "/api/v1/codes/{code_id}/unbind",
            Body::Json(json!({ "reason": "test" })),
        ),
        (Method::POST, "/api/v1/codes/{code_id}/revoke", Body::None),
        (
            Method::POST,
            "/api/v1/shares/{share_id}/orders",
            Body::Json(
                json!({ "source": "shop", "order_id": "b-2", "email": "buyer-b2@example.com",
                        "mail": false }),
            ),
        ),
        (Method::GET, "/api/v1/orders/shop/{order_id}", Body::None),
        (
            Method::GET,
            "/api/v1/shares/{share_id}/refund-policy",
            Body::None,
        ),
        (
            Method::PUT,
            "/api/v1/shares/{share_id}/refund-policy",
            Body::Json(json!({ "action": "revoke", "bound_grace_hours": 24 })),
        ),
        (
            Method::POST,
            "/api/v1/orders/shop/{order_id}/refund",
            Body::Json(json!({ "reason": "test" })),
        ),
        (
            Method::POST,
            "/api/v1/batches/{mailable_id}/send",
            Body::Json(json!({ "addresses": ["reader-b@example.com"] })),
        ),
        (
            Method::GET,
            "/api/v1/batches/{mailable_id}/recipients",
            Body::None,
        ),
        (Method::POST, "/api/v1/codes/{mailed_id}/resend", Body::None),
        (
            Method::POST,
            "/api/v1/codes/{mailed_id}/revoke-and-resend",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/batches/{batch_id}/revoke-unused",
            Body::None,
        ),
        (Method::GET, "/api/v1/tenants/{tenant_id}/audit", Body::None),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/branding",
            Body::None,
        ),
        (
            Method::PUT,
            "/api/v1/tenants/{tenant_id}/branding",
            Body::Json(json!({ "name": "Tenant B", "accent": "#2e7d32" })),
        ),
        (
            Method::PUT,
            "/api/v1/tenants/{tenant_id}/branding/logo",
            Body::Png,
        ),
        (
            Method::DELETE,
            "/api/v1/tenants/{tenant_id}/branding/logo",
            Body::None,
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/transfers",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/transfers/{approve_id}/approve",
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/transfers/{refuse_id}/refuse",
            Body::Json(json!({ "reason": "cannot verify" })),
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/tokens",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/tokens",
            Body::Json(json!({ "name": "ci", "scopes": ["read"] })),
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/tokens/{token_id}/revoke",
            Body::None,
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/webhooks",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/webhooks",
            Body::Json(json!({ "url": "https://hooks.example.com/b", "events": ["code.bound"] })),
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/webhooks/deliveries",
            Body::None,
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}",
            Body::None,
        ),
        (
            Method::PUT,
            "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}",
            Body::Json(json!({ "url": "https://hooks.example.com/b2", "events": ["code.bound"] })),
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}/deliveries/{event_id}/redeliver",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/webhooks/{doomed_hook_id}/disable",
            Body::None,
        ),
        (Method::GET, "/api/v1/tenants/{tenant_id}/shops", Body::None),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/shops",
            Body::Json(
                json!({ "provider": "stripe", "name": "B's other", "secret": "whsec_b_other_0123456789" }),
            ),
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}",
            Body::None,
        ),
        (
            Method::GET,
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/events",
            Body::None,
        ),
        (
            Method::PUT,
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/products/{product}",
            Body::Json(json!({ "share_id": t.share })),
        ),
        (
            Method::DELETE,
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/products/{product}",
            Body::None,
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/secret",
            Body::Json(json!({ "secret": "whsec_b_rotated_0123456789" })),
        ),
        (
            Method::POST,
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/disable",
            Body::None,
        ),
    ]
}

/// The document's spelling of an operation's path (the table names some
/// parameters after the object they take, `{doomed_id}` for a
/// `{resource_id}` the table removes).
fn documented(path: &str) -> String {
    path.replace("{doomed_id}", "{resource_id}")
        .replace("{mailable_id}", "{batch_id}")
        .replace("/orders/shop/{order_id}", "/orders/{source}/{order_id}")
        .replace("{imported_id}", "{batch_id}")
        .replace("{spare_id}", "{code_id}")
        .replace("{leaked_id}", "{code_id}")
        .replace("{mailed_id}", "{code_id}")
        .replace("{approve_id}", "{transfer_id}")
        .replace("{refuse_id}", "{transfer_id}")
        .replace("{doomed_hook_id}", "{endpoint_id}")
}

/// Which of B's objects each parameter of the table takes.
fn objects_of(t: Target) -> Vec<(&'static str, Uuid)> {
    vec![
        ("{share_id}", t.share),
        ("{resource_id}", t.resource),
        ("{doomed_id}", t.doomed),
        ("{batch_id}", t.batch),
        ("{mailable_id}", t.mailable),
        ("{mailed_id}", t.mailed),
        ("{order_id}", t.order),
        ("{imported_id}", t.imported),
        ("{code_id}", t.code),
        ("{spare_id}", t.spare),
        ("{leaked_id}", t.leaked),
        ("{approve_id}", t.transfer_to_approve),
        ("{refuse_id}", t.transfer_to_refuse),
        ("{token_id}", t.token),
        ("{endpoint_id}", t.hook),
        ("{doomed_hook_id}", t.doomed_hook),
        ("{event_id}", t.dead_event),
        ("{shop_id}", t.shop),
        ("{product}", t.product),
    ]
}

/// `path` with `{tenant_id}` as `tenant` and every other parameter as
/// `object` says.
fn concrete(path: &str, tenant: Uuid, object: impl Fn(&str) -> String) -> String {
    let mut out = path.replace("{tenant_id}", &tenant.to_string());
    while let Some(start) = out.find('{') {
        let end = out[start..].find('}').expect("closing brace") + start;
        let parameter = out[start..=end].to_owned();
        out.replace_range(start..=end, &object(&parameter));
    }
    out
}

/// Whether `path` or `body` names an object (not only a tenant).
fn names_an_object(path: &str, body: &Body) -> bool {
    path.replace("{tenant_id}", "").contains('{')
        || matches!(body, Body::Json(value) if value.get("code").is_some())
}

/// The body with B's code text replaced by a fresh one (for the call
/// about objects that exist nowhere).
fn elsewhere(body: &Body) -> Body {
    match body {
        Body::Json(value) if value.get("code").is_some() => {
            let mut value = value.clone();
            value["code"] = json!(engine::codes::PlainCode::generate().display());
            Body::Json(value)
        }
        other => other.clone(),
    }
}

/// A door into the API: a signed-in browser's session, or a bearer token.
#[derive(Clone, Copy)]
enum Door<'a> {
    Session(&'a reqwest::Client),
    Token(&'a str),
}

/// Sends one call; the status and the answer's text, without what names
/// the request itself (a problem's `instance`).
async fn send(
    app: &TestApp,
    door: Door<'_>,
    method: &Method,
    path: &str,
    body: &Body,
) -> (u16, String) {
    let url = format!("{}{path}", app.address);
    let mut request = match door {
        Door::Session(client) => client.request(method.clone(), url),
        Door::Token(token) => crate::support::app::new_client()
            .request(method.clone(), url)
            .bearer_auth(token),
    };
    request = match body {
        Body::None => request,
        Body::Json(value) => request.json(value),
        Body::Png => request
            .header("content-type", "application/octet-stream")
            .body(PNG.to_vec()),
        Body::Upload => {
            let part = reqwest::multipart::Part::bytes(vec![0u8; 64])
                .file_name("lesson.mp4")
                .mime_str("video/mp4")
                .expect("mime");
            request.multipart(
                reqwest::multipart::Form::new()
                    .text("title", "Lesson")
                    .part("file", part),
            )
        }
    };
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let text = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(mut problem)) => {
            problem.remove("instance");
            Value::Object(problem).to_string()
        }
        _ => text,
    };
    (status, text)
}

/// A token of tenant A with every scope, made through A's console.
async fn token_of_a(app: &TestApp, admin_a: &reqwest::Client, tenant_a: Uuid) -> String {
    let response = admin_a
        .post(format!("{}/api/admin/tokens/create", app.address))
        .form(&[
            ("tenant_id", tenant_a.to_string()),
            ("name", "A's everything".to_owned()),
            ("read", "on".to_owned()),
            ("write", "on".to_owned()),
            ("integrations", "on".to_owned()),
        ])
        .send()
        .await
        .expect("create a token");
    assert_eq!(response.status(), 200);
    response.json().await.expect("the token")
}

#[sqlx::test(migrations = "../migrations")]
async fn every_api_operation_refuses_another_tenants_objects_through_both_doors(pool: PgPool) {
    let app = spawn_app(pool).await;
    let w = world(&app).await;
    let table = operations(w.target);

    // The table is the document: every admin operation, no more.
    let doc: Value = app
        .get("/api/v1/openapi.json")
        .await
        .json()
        .await
        .expect("the OpenAPI document");
    // A tenant's operations are the ones tagged for its admins or its
    // integrations (the others are a learner's or anyone's), whatever
    // their path.
    let mut documented_ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("operations") {
            let tags = operation["tags"]
                .as_array()
                .expect("every operation is tagged");
            if tags.iter().any(|t| t == "admin" || t == "integrations") {
                documented_ops.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    let listed: BTreeSet<(String, String)> = table
        .iter()
        .map(|(method, path, _)| (method.to_string(), documented(path)))
        .collect();
    assert_eq!(
        documented_ops, listed,
        "every admin operation of the OpenAPI document is in operations()"
    );

    let objects = objects_of(w.target);
    let object = |parameter: &str| {
        objects
            .iter()
            .find(|(name, _)| *name == parameter)
            .map(|(_, id)| id.to_string())
            .unwrap_or_else(|| panic!("no object for {parameter}"))
    };
    let b_names = w.target.objects();
    let token_a = token_of_a(&app, &w.admin_a, w.tenant_a).await;
    // Both of A's doors open A's own tenant: the refusals below are about
    // B, not a door that opens nothing.
    let own = format!("/api/v1/tenants/{}/shares", w.tenant_a);
    for door in [Door::Session(&w.admin_a), Door::Token(&token_a)] {
        let (status, text) = send(&app, door, &Method::GET, &own, &Body::None).await;
        assert_eq!(status, 200, "{text}");
    }
    let before = super::server_functions::snapshot(&app.pool).await;
    for (method, path, body) in &table {
        // A's own tenant with B's objects; an operation that names only a
        // tenant is tried with B's tenant instead.
        let (tenant, nowhere_tenant) = if names_an_object(path, body) {
            (w.tenant_a, w.tenant_a)
        } else {
            (w.tenant_b, Uuid::new_v4())
        };
        let mixed = concrete(path, tenant, object);
        let nowhere = concrete(path, nowhere_tenant, |_| Uuid::new_v4().to_string());
        for (door, name) in [
            (Door::Session(&w.admin_a), "A's session"),
            (Door::Token(&token_a), "A's token"),
        ] {
            let what = format!("{method} {path} by {name}");
            let (status, text) = send(&app, door, method, &mixed, body).await;
            assert!(status == 403 || status == 404, "{what}: {status} {text}");
            for b in &b_names {
                assert!(!text.contains(b.as_str()), "{what} named B's {b}: {text}");
            }
            assert_eq!(
                send(&app, door, method, &nowhere, &elsewhere(body)).await,
                (status, text),
                "{what}: B's objects are told apart from objects that exist nowhere"
            );
        }
    }
    assert_eq!(
        super::server_functions::snapshot(&app.pool).await,
        before,
        "refused calls changed nothing"
    );

    // Control: B's own owner, the same calls on B's tenant, gets through
    // (or finds the object in a state that refuses the call: a 409, or a
    // 410 for plain codes handed over already; only a found object gets
    // either).
    for (method, path, body) in &table {
        let own = concrete(path, w.tenant_b, object);
        let (status, text) = send(&app, Door::Session(&w.admin_b), method, &own, body).await;
        assert!(
            (200..300).contains(&status) || status == 409 || status == 410,
            "B's owner, {method} {path}: {status} {text}"
        );
    }
}
