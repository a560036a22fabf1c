//! Tenant branding, on real PostgreSQL, Redis and SMTP: an owner sets the
//! tenant's name, accent colour, support address and logo. Shared here:
//! setting and reading the branding, uploading a logo, and a tenant
//! branded as "Acme".

mod changes;
mod logo;
mod shown;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::app::TestApp;
use crate::support::course::{Admin, PNG, put_json};

fn branding_path(tenant: Uuid) -> String {
    format!("/api/v1/tenants/{tenant}/branding")
}

async fn set_branding(app: &TestApp, owner: &Admin, body: Value) -> reqwest::Response {
    put_json(app, &owner.client, &branding_path(owner.tenant), body).await
}

async fn put_logo(app: &TestApp, owner: &Admin, bytes: Vec<u8>, mime: &str) -> reqwest::Response {
    owner
        .client
        .put(format!(
            "{}{}/logo",
            app.address,
            branding_path(owner.tenant)
        ))
        .header("content-type", mime)
        .body(bytes)
        .send()
        .await
        .expect("request")
}

async fn branding_of(app: &TestApp, owner: &Admin) -> Value {
    let response = app
        .get_as(&owner.client, &branding_path(owner.tenant))
        .await;
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
}

/// Everything a change could touch: the tenant's row, its logo and the
/// audit log.
async fn stored(
    app: &TestApp,
    tenant: Uuid,
) -> (String, Option<String>, Option<String>, Option<Uuid>, i64) {
    sqlx::query_as(
        "SELECT t.name, t.brand_accent, t.support_email, l.id,
                (SELECT count(*) FROM audit_log WHERE tenant_id = t.id)
         FROM tenants t LEFT JOIN tenant_logos l ON l.tenant_id = t.id WHERE t.id = $1",
    )
    .bind(tenant)
    .fetch_one(&app.pool)
    .await
    .expect("stored")
}

async fn page(app: &TestApp, client: &reqwest::Client, path: &str) -> String {
    let response = app.get_page_as(client, path).await;
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.expect("page")
}

/// Acme's branding, with a logo; returns the logo's URL.
async fn brand_acme(app: &TestApp, owner: &Admin) -> String {
    let response = set_branding(
        app,
        owner,
        json!({ "name": " Acme Academy ", "accent": "#2E7D32", "support_email": "Help@Acme.test" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["name"], "Acme Academy");
    assert_eq!(body["accent"], "#2e7d32", "stored lower case");
    assert_eq!(body["support_email"], "help@acme.test");
    assert_eq!(body["logo_url"], Value::Null);
    let response = put_logo(app, owner, PNG.to_vec(), "image/png").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    let logo = body["logo_url"].as_str().expect("a logo").to_owned();
    assert!(logo.starts_with("/brand/logo/"), "{logo}");
    assert!(
        !logo.contains(&owner.tenant.to_string()),
        "no tenant id on public pages"
    );
    logo
}

async fn logo_form(app: &TestApp, owner: &Admin, bytes: Vec<u8>) -> reqwest::Response {
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name("logo.png")
        .mime_str("image/png")
        .expect("mime");
    owner
        .client
        .post(format!("{}/admin/t/{}/logo", app.address, owner.tenant))
        .multipart(reqwest::multipart::Form::new().part("logo", part))
        .send()
        .await
        .expect("request")
}
