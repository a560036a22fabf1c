//! The console's shops page: a connected shop, its webhook address, which
//! product is which course, and its deliveries with what came of each (a
//! sale acted on, a forged one refused with its reason), as the owner
//! reads them; a member who may not manage integrations is refused.

use reqwest::{Method, StatusCode};
use serde_json::Value;
use sqlx::PgPool;

use crate::api_v1::shops::{
    STRIPE_SECRET, checkout, creator, deliver, deliver_stripe, stripe_shop,
};
use crate::support::app::{redis_url, spawn_app, spawn_app_with, test_settings};
use crate::support::console::page;
use crate::support::tokens::as_token;

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
    // Signed, for a product no course is connected to: refused, and why.
    let (status, _) = deliver_stripe(
        &url,
        STRIPE_SECRET,
        &checkout("pi_other", "buyer@example.com", "plink_unknown"),
    )
    .await;
    assert!(status.is_client_error(), "{status}");
    // More forged deliveries than the page lists: they do not hide the
    // shop's own, and are counted apart.
    let forged = checkout("pi_forged", "thief@example.com", "plink_course");
    for _ in 0..51 {
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
    }

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
        outcomes[0].1.is_some_and(|r| r.contains("connect")),
        "a refusal says why: {view}"
    );
    assert_eq!(shops[0]["unsigned_last_day"], 51, "{view}");
    assert!(shops[0]["unsigned_latest"].is_string(), "{view}");

    // The view holds no secret and no buyer's address.
    let text = view.to_string();
    assert!(!text.contains(STRIPE_SECRET), "{view}");
    assert!(
        !text.contains("buyer@example.com") && !text.contains("thief@example.com"),
        "{view}"
    );
    let title: String = sqlx::query_scalar("SELECT title FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("the course's title");
    assert_eq!(shops[0]["products"][0]["course"], title.as_str(), "{view}");

    // A Gumroad shop (its drawn secret is in the answer's address alone)
    // and a disabled one.
    let (status, gumroad) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops", admin.tenant),
        Some(serde_json::json!({ "provider": "gumroad", "name": "Gumroad" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{gumroad}");
    let drawn = gumroad["secret"]
        .as_str()
        .expect("a drawn secret")
        .to_owned();
    let (status, old) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops", admin.tenant),
        Some(
            serde_json::json!({ "provider": "lemonsqueezy", "name": "Old shop",
                                 "secret": "old-shop-secret-0123456789" }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{old}");
    let old_id = old["shop"]["id"].as_str().expect("id").to_owned();
    let (status, disabled) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops/{old_id}/disable", admin.tenant),
        None,
    )
    .await;
    assert!(status.is_success(), "{status} {disabled}");

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
    assert!(
        html.contains("51 deliveries with a missing or wrong signature"),
        "{html}"
    );
    assert!(html.contains(&title), "the course by its title: {html}");
    // Gumroad's address needs its secret, which only the API showed.
    assert!(!html.contains(&drawn), "{html}");
    assert_eq!(html.matches("shop-gumroad-secret").count(), 1, "{html}");
    // The disabled shop's address is marked as accepting nothing.
    assert!(html.contains(r#"data-disabled="true""#), "{html}");
    assert_eq!(
        html.matches(r#"class="flash warning shop-disabled""#)
            .count(),
        1,
        "{html}"
    );
    assert!(html.contains("accepts no delivery any more"), "{html}");
    assert!(!html.contains("old-shop-secret"), "{html}");
}

/// Where `server.public_url` has a path, the shop's address is still the
/// server's own `/hooks/shops/…` on its origin (where the server answers
/// it), and the API and the console give the same one.
#[sqlx::test(migrations = "../migrations")]
async fn the_api_and_the_console_give_one_webhook_address(pool: PgPool) {
    let mut settings = test_settings(&redis_url());
    settings.server.public_url = "http://127.0.0.1:3000/courses/".into();
    let app = spawn_app_with(pool, settings).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, _) = stripe_shop(&app, &admin, &token, course.share).await;
    let (status, read) = as_token(
        &app,
        &token,
        Method::GET,
        &format!("/api/v1/tenants/{}/shops/{shop}", admin.tenant),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    let expected = format!("http://127.0.0.1:3000/hooks/shops/{}/{shop}", admin.tenant);
    assert_eq!(read["webhook_url"], expected.as_str(), "{read}");
    let view: Value = admin
        .client
        .get(format!("{}/api/admin/shops", app.address))
        .query(&[("tenant_id", admin.tenant.to_string())])
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(view["shops"][0]["webhook_url"], expected.as_str(), "{view}");
}
