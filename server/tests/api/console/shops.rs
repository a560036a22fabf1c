//! The console's shops page: a connected shop, its webhook address, which
//! product is which course, and its deliveries with what came of each (a
//! sale acted on, a forged one refused with its reason), as the owner
//! reads them; a member who may not manage integrations is refused.

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::PgPool;

use crate::api_v1::shops::{
    STRIPE_SECRET, checkout, creator, deliver, deliver_stripe, stripe_shop,
};
use crate::support::app::spawn_app;
use crate::support::console::page;

#[sqlx::test(migrations = "../migrations")]
async fn the_shops_page_shows_each_delivery_and_what_came_of_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let (status, _) = deliver_stripe(
        &url,
        STRIPE_SECRET,
        &checkout("pi_paid", "buyer@example.com", "plink_course"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let forged = checkout("pi_forged", "thief@example.com", "plink_course");
    let (status, _) = deliver(
        &url,
        &[
            ("stripe-signature", "t=1,v1=00".to_owned()),
            ("content-type", "application/json".to_owned()),
        ],
        &forged,
    )
    .await;
    assert!(status.is_client_error(), "{status}");

    let response = admin
        .client
        .get(format!("{}/api/admin/shops", app.address))
        .query(&[("tenant_id", admin.tenant.to_string())])
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let view: Value = response.json().await.expect("json");
    let shops = view["shops"].as_array().expect("shops");
    assert_eq!(shops.len(), 1, "{view}");
    assert_eq!(shops[0]["id"], shop.to_string());
    assert_eq!(shops[0]["provider"], "stripe");
    assert!(
        shops[0]["webhook_url"]
            .as_str()
            .is_some_and(|u| u.ends_with(&format!("/hooks/shops/{}/{shop}", admin.tenant))),
        "{view}"
    );
    assert_eq!(shops[0]["products"][0]["product_ref"], "plink_course");
    assert_eq!(shops[0]["products"][0]["share"], course.share.to_string());
    let outcomes: Vec<(&str, Option<&str>)> = shops[0]["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["outcome"].as_str().expect("outcome"),
                e["reason"].as_str(),
            )
        })
        .collect();
    assert_eq!(outcomes.len(), 2, "{view}");
    assert_eq!(outcomes[1].0, "acted", "the sale, oldest last: {view}");
    assert_eq!(outcomes[0].0, "refused", "{view}");
    assert!(
        outcomes[0].1.is_some_and(|r| !r.is_empty()),
        "a refusal says why: {view}"
    );

    // The page, server-rendered: the shop, its product's course, both rows.
    let (status, html) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}/shops", admin.tenant),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&format!(r#"data-shop="{shop}""#)), "{html}");
    assert!(html.contains("plink_course"), "{html}");
    assert!(html.contains(r#"data-outcome="refused""#), "{html}");
    assert!(html.contains(r#"data-outcome="acted""#), "{html}");
    assert!(
        html.contains("Refused") && html.contains("Acted on"),
        "{html}"
    );
}
