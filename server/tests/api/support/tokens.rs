//! API tokens for tests: one created in the console (shown once), a client
//! that sends it as `Bearer`, and a GET made with it.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::{TestApp, new_client};
use crate::support::course::Admin;

pub async fn create_token(app: &TestApp, admin: &Admin, scopes: &[&str]) -> String {
    let mut form = vec![
        ("tenant_id", admin.tenant.to_string()),
        ("name", format!("token {scopes:?}")),
    ];
    for scope in scopes {
        form.push((scope, "on".to_owned()));
    }
    let response = admin
        .client
        .post(format!("{}/api/admin/tokens/create", app.address))
        .form(&form)
        .send()
        .await
        .expect("create token");
    assert_eq!(response.status(), 200);
    let token: String = response.json().await.expect("token");
    assert!(token.starts_with("a1t_"), "{token}");
    token
}

pub async fn as_token(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = new_client()
        .request(method, format!("{}{path}", app.address))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub async fn get_as(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    new_client()
        .get(format!("{}{path}", app.address))
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
}
