//! Teams: who administers a tenant and with which role. Shared here: a
//! tenant with its owner signed in, a form post, and the roles the tenant
//! holds.

mod invitations;
mod owners;

use engine::tenants::{TenantName, TenantSlug, ensure_tenant_with_owner};
use serde_json::Value;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client};

const PASSWORD: &str = "correct horse battery";

/// A tenant whose owner is signed in with the returned client.
async fn tenant_with_owner(app: &TestApp, email: &str) -> (Uuid, reqwest::Client) {
    let owner = app.create_account(email, PASSWORD).await;
    let (tenant, _) = ensure_tenant_with_owner(
        &app.pool,
        &TenantSlug::parse("acme").expect("slug"),
        &TenantName::parse("Acme Courses").expect("name"),
        owner,
    )
    .await
    .expect("tenant");
    let client = new_client();
    app.login_as(&client, email, PASSWORD).await;
    (tenant.0, client)
}

async fn post(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, Value) {
    let response = app.post_form_as(client, path, form).await;
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

async fn roles(app: &TestApp, tenant: Uuid) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT a.email, m.role FROM tenant_members m JOIN accounts a ON a.id = m.account_id
         WHERE m.tenant_id = $1 ORDER BY a.email",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("roles")
}
