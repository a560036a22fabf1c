//! The code table tells who a code concerns beyond its holder: an
//! addressed code shows (and is found by) the one address it binds to,
//! and a code a refund took back shows the learner it released; the CSV
//! carries both. Driven as a shop and its buyer would: an order placed
//! through the API, redeemed by its addressee, refunded.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::code_table::table;
use crate::support::app::{TestApp, spawn_app};
use crate::support::course::{Admin, admin, course, enter_code, learners, open};
use crate::support::tokens::{as_token, create_token};

/// The console page's HTML.
async fn page(app: &TestApp, admin: &Admin, share: Uuid) -> String {
    admin
        .client
        .get(format!(
            "{}/admin/t/{}/s/{share}/codes",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("html")
}

#[sqlx::test(migrations = "../migrations")]
async fn the_code_table_names_a_codes_addressee_and_the_learner_a_refund_released(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "quota": null })).await;
    let token = create_token(&app, &admin, &["read", "write"]).await;
    let (status, order) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/shares/{}/orders", course.share),
        Some(json!({ "source": "shop", "order_id": "o-1", "email": "Ann@Example.com", "mail": false })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{order}");
    let plain = order["issued"][0]["code"]
        .as_str()
        .expect("the code")
        .to_owned();
    let id = order["issued"][0]["id"].clone();

    // Before she redeems it: the address beside the code, and a search
    // by the address finds it.
    let found = table(&app, &admin, course.share, "&q=ann%40example").await;
    let rows = found["codes"].as_array().expect("codes");
    assert_eq!(rows.len(), 1, "{found}");
    assert_eq!(
        (
            rows[0]["id"].clone(),
            rows[0]["addressed_to"].clone(),
            rows[0]["bound_email"].clone()
        ),
        (id.clone(), json!("ann@example.com"), Value::Null)
    );
    let nobody = table(&app, &admin, course.share, "&q=bob%40example").await;
    assert_eq!(nobody["codes"], json!([]), "{nobody}");
    let html = page(&app, &admin, course.share).await;
    assert!(html.contains("For ann@example.com only"), "{html}");

    // She redeems it; then the order is refunded (no policy: at once),
    // which takes her seat back.
    let (ann, client) = learners(&app, 1).await.pop().expect("a learner");
    sqlx::query("UPDATE accounts SET email = 'ann@example.com' WHERE id = $1")
        .bind(ann)
        .execute(&app.pool)
        .await
        .expect("her address");
    assert!(
        enter_code(&app, &client, &course.slug, &plain)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    let bound = table(&app, &admin, course.share, "").await;
    assert_eq!(bound["codes"][0]["bound_email"], "ann@example.com");
    let (status, refund) = as_token(
        &app,
        &token,
        Method::POST,
        "/api/v1/orders/shop/o-1/refund",
        Some(json!({ "reason": "changed her mind" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{refund}");

    let after = table(&app, &admin, course.share, "").await;
    let row = &after["codes"][0];
    assert_eq!(
        (
            row["state"].clone(),
            row["bound_email"].clone(),
            row["former_email"].clone()
        ),
        (json!("revoked"), Value::Null, json!("ann@example.com")),
        "{after}"
    );
    let html = page(&app, &admin, course.share).await;
    assert!(
        html.contains("Released from ann@example.com by a refund"),
        "{html}"
    );
    assert!(
        !html.contains("For ann@example.com only"),
        "a revoked code binds to nobody: {html}"
    );

    let csv = admin
        .client
        .get(format!(
            "{}/admin/t/{}/s/{}/codes.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("csv");
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert!(
        lines[0].ends_with(",addressed_to,former_learner_email"),
        "{csv}"
    );
    assert!(
        lines[1].ends_with(",ann@example.com,ann@example.com"),
        "{csv}"
    );
}
