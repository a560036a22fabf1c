//! Response headers that keep plain codes and secrets out of caches.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::course::{admin, course, post_json};
use crate::helpers::spawn_app;

/// A plain HTML form post, as a browser without JavaScript sends it.
async fn plain_form(
    address: &str,
    client: &reqwest::Client,
    from: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(format!("{address}{path}"))
        .header("accept", "text/html")
        .header("referer", format!("{address}{from}"))
        .header("origin", address)
        .form(fields)
        .send()
        .await
        .expect("request")
}

async fn html_page(address: &str, client: &reqwest::Client, path: &str) -> reqwest::Response {
    client
        .get(format!("{address}{path}"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("request")
}

fn assert_no_store(response: &reqwest::Response, what: &str) {
    let value = response
        .headers()
        .get("cache-control")
        .unwrap_or_else(|| panic!("{what}: no Cache-Control"))
        .to_str()
        .expect("ascii");
    assert!(value.contains("no-store"), "{what}: Cache-Control {value}");
}

#[sqlx::test(migrations = "../migrations")]
async fn every_answer_showing_plain_codes_or_secrets_is_no_store(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let tenant = admin.tenant.to_string();
    let share = course.share.to_string();
    let share_page = format!("/admin/t/{tenant}/s/{share}");

    // /api/v1 issuing: the codes are in the answer.
    let issued = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{share}/codes"),
        json!({ "count": 2 }),
    )
    .await;
    assert_eq!(issued.status(), StatusCode::CREATED);
    assert_no_store(&issued, "POST /api/v1/shares/{id}/codes");

    // The console: the issued-codes page (with its printable cards), then
    // the CSV.
    let response = plain_form(
        &app.address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("count", "3"),
            ("label", ""),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let result_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let page = html_page(&app.address, &admin.client, &result_page).await;
    assert_eq!(page.status(), 200);
    assert_no_store(&page, "issued-codes page");
    let html = page.text().await.expect("html");
    assert!(html.contains("plain-code"), "{html}");
    assert!(html.contains("class=\"qr\""), "no printable cards: {html}");
    let csv = html_page(
        &app.address,
        &admin.client,
        &format!("{result_page}/codes.csv"),
    )
    .await;
    assert_eq!(csv.status(), 200);
    assert_no_store(&csv, "codes CSV");

    // API tokens: the server function's answer, and the page a browser
    // without JavaScript is sent back to (the token as a one-time message).
    let token = admin
        .client
        .post(format!("{}/api/admin/tokens/create", app.address))
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("name", "ci"),
            ("read", "on"),
        ])
        .send()
        .await
        .expect("token");
    assert_eq!(token.status(), 200);
    assert_no_store(&token, "token creation (server function)");
    let tokens_page = format!("/admin/t/{tenant}/tokens");
    let redirect = plain_form(
        &app.address,
        &admin.client,
        &tokens_page,
        "/api/admin/tokens/create",
        &[("tenant_id", &tenant), ("name", "ci2"), ("write", "on")],
    )
    .await;
    assert!(redirect.status().is_redirection(), "{}", redirect.status());
    assert_no_store(&redirect, "token creation (form)");
    let shown = html_page(&app.address, &admin.client, &tokens_page).await;
    assert_no_store(&shown, "tokens page with the new token");
    assert!(shown.text().await.expect("html").contains("a1t_"));

    // Webhook signing secrets, both ways.
    let hook = admin
        .client
        .post(format!("{}/api/admin/webhooks/create", app.address))
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("url", "https://hooks.example.com/in"),
            ("code_bound", "on"),
        ])
        .send()
        .await
        .expect("webhook");
    assert_eq!(hook.status(), 200);
    assert_no_store(&hook, "webhook creation (server function)");
    let hooks_page = format!("/admin/t/{tenant}/webhooks");
    let redirect = plain_form(
        &app.address,
        &admin.client,
        &hooks_page,
        "/api/admin/webhooks/create",
        &[
            ("tenant_id", &tenant),
            ("url", "https://hooks.example.com/other"),
            ("code_bound", "on"),
        ],
    )
    .await;
    assert!(redirect.status().is_redirection(), "{}", redirect.status());
    let shown = html_page(&app.address, &admin.client, &hooks_page).await;
    assert_no_store(&shown, "webhooks page with the new secret");
    assert!(shown.text().await.expect("html").contains("whsec_"));
}
