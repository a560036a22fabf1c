//! The shops page's forms (`/api/admin/shops/…`): a creator connects a
//! shop, maps and forgets its products, replaces its secret and disables
//! it from the console, as the API does. Each step is proven by what the
//! shop's own signed deliveries then do (an order placed or refused) and
//! read back in SQL; a refused form changes nothing and audits nothing.

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::api_v1::shops::{checkout, creator, deliver, deliver_stripe, on_test_server};
use crate::support::app::{TestApp, spawn_app};
use crate::support::console::{form, page};
use crate::support::course::Admin;

const SECRET: &str = "whsec_console_0123456789abcdef";
const NEW_SECRET: &str = "whsec_console_replaced_0123456789";

/// A server function called as the hydrated page calls it: the status and
/// its JSON answer.
async fn call(
    app: &TestApp,
    admin: &Admin,
    endpoint: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, Value) {
    let tenant = admin.tenant.to_string();
    let mut all = vec![("tenant_id", tenant.as_str())];
    all.extend_from_slice(fields);
    let response = admin
        .client
        .post(format!("{}/api/admin/shops/{endpoint}", app.address))
        .form(&all)
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn orders(app: &TestApp, tenant: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM orders WHERE tenant_id = $1")
        .bind(tenant)
        .fetch_one(&app.pool)
        .await
        .expect("orders")
}

/// The tenant's audit actions about shops, oldest first.
async fn audited(app: &TestApp, tenant: Uuid) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'shop.%'
         ORDER BY created_at, id",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("audit")
}

/// Connected, mapped, forgotten, re-keyed and disabled from the console:
/// each step shows in what the shop's own signed deliveries then do.
#[sqlx::test(migrations = "../migrations")]
async fn a_shop_connected_from_the_console_places_its_sales_and_stops_when_disabled(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, _) = creator(&app).await;
    let share = course.share.to_string();

    let (status, connected) = call(
        &app,
        &admin,
        "connect",
        &[
            ("provider", "stripe"),
            ("name", "Main store"),
            ("secret", SECRET),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{connected}");
    assert_eq!(connected["holds_secret"], false, "{connected}");
    let shop: Uuid = connected["shop"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let url = on_test_server(&app, connected["webhook_url"].as_str().expect("url"));
    assert!(
        url.ends_with(&format!("/hooks/shops/{}/{shop}", admin.tenant)),
        "{url}"
    );
    let (provider, name): (String, String) = sqlx::query_as(
        "SELECT provider, name FROM shop_integrations WHERE tenant_id = $1 AND id = $2",
    )
    .bind(admin.tenant)
    .bind(shop)
    .fetch_one(&app.pool)
    .await
    .expect("the shop");
    assert_eq!((provider.as_str(), name.as_str()), ("stripe", "Main store"));

    // Called as the hydrated page calls it, the answer is said there:
    // nothing is left for the next page.
    let here = format!("/admin/t/{}/shops", admin.tenant);
    let (_, html) = page(&app.address, &admin.client, &here).await;
    assert!(!html.contains("Shop connected"), "{html}");

    // A sale before its product is mapped is refused; after, it places.
    let sale = |pi: &str| checkout(pi, "buyer@example.com", "plink_console");
    let (status, _) = deliver_stripe(&url, SECRET, &sale("pi_early")).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(orders(&app, admin.tenant).await, 0);
    let shop_id = shop.to_string();
    let (status, mapped) = call(
        &app,
        &admin,
        "products/map",
        &[
            ("shop_id", &shop_id),
            ("product", " plink_console "),
            ("share_id", &share),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{mapped}");
    let sells: Uuid = sqlx::query_scalar(
        "SELECT share_id FROM shop_products WHERE integration_id = $1 AND product_ref = 'plink_console'",
    )
    .bind(shop)
    .fetch_one(&app.pool)
    .await
    .expect("the product, trimmed");
    assert_eq!(sells, course.share);
    let (status, _) = deliver_stripe(&url, SECRET, &sale("pi_one")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(orders(&app, admin.tenant).await, 1);

    // A new secret verifies at once (the one before for its day).
    let (status, rotated) = call(
        &app,
        &admin,
        "secret",
        &[("shop_id", &shop_id), ("secret", NEW_SECRET)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_eq!(rotated["shop"], shop_id.as_str(), "{rotated}");
    assert!(
        !rotated.to_string().contains(NEW_SECRET),
        "a given secret is not echoed: {rotated}"
    );
    assert_eq!(rotated["holds_secret"], false, "{rotated}");
    assert_eq!(
        rotated["webhook_url"], connected["webhook_url"],
        "Stripe's address stays"
    );
    let (status, _) = deliver_stripe(&url, NEW_SECRET, &sale("pi_two")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        deliver_stripe(&url, "whsec_never_this_one_0123456", &sale("pi_forged")).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(orders(&app, admin.tenant).await, 2);

    // Forgotten: its later sales are refused.
    let (status, forgot) = call(
        &app,
        &admin,
        "products/forget",
        &[("shop_id", &shop_id), ("product", "plink_console")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{forgot}");
    let (status, _) = deliver_stripe(&url, NEW_SECRET, &sale("pi_three")).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(orders(&app, admin.tenant).await, 2);

    // The page offers the card's forms, the course chosen by its title
    // and link (none chosen for the creator).
    let (status, html) = page(&app.address, &admin.client, &here).await;
    assert_eq!(status, StatusCode::OK);
    let title: String = sqlx::query_scalar("SELECT title FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("the title");
    assert!(
        html.contains(&format!(r#"<option value="{share}">{title} · /s/"#)),
        "{html}"
    );
    assert!(html.contains(r#"<option value="" selected"#), "{html}");
    for form in ["shop-map", "shop-secret", "shop-disable", "shop-connect"] {
        assert!(html.contains(form), "{form}: {html}");
    }

    // Disabling needs the box ticked; then the address accepts nothing.
    let (status, refused) = call(&app, &admin, "disable", &[("shop_id", &shop_id)]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["Invalid"]["field"], "confirm", "{refused}");
    let disabled = || async {
        sqlx::query_scalar::<_, bool>(
            "SELECT disabled_at IS NOT NULL FROM shop_integrations WHERE id = $1",
        )
        .bind(shop)
        .fetch_one(&app.pool)
        .await
        .expect("the shop")
    };
    assert!(!disabled().await);
    let (status, done) = call(
        &app,
        &admin,
        "disable",
        &[("shop_id", &shop_id), ("confirm", "yes")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(disabled().await);
    let (status, _) = deliver_stripe(&url, NEW_SECRET, &sale("pi_four")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(orders(&app, admin.tenant).await, 2);

    assert_eq!(
        audited(&app, admin.tenant).await,
        [
            "shop.connected",
            "shop.product_mapped",
            "shop.secret_rotated",
            "shop.product_unmapped",
            "shop.disabled"
        ]
    );
    // A disabled shop's card offers no map, secret or disable form.
    let (status, html) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}/shops", admin.tenant),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(r#"data-disabled="true""#), "{html}");
    assert!(
        !html.contains("shop-map") && !html.contains("shop-secret\""),
        "{html}"
    );
}

/// Without JavaScript, a Gumroad shop's drawn secret is said once on the
/// page the form returns to, in the address to give Gumroad: that address
/// places a sale, the next page load shows it no more, and a replaced
/// secret is said the same way while the one before keeps working.
#[sqlx::test(migrations = "../migrations")]
async fn without_javascript_a_drawn_secret_is_said_once_and_works(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, _) = creator(&app).await;
    let here = format!("/admin/t/{}/shops", admin.tenant);
    let tenant = admin.tenant.to_string();
    let response = form(
        &app.address,
        &admin.client,
        &here,
        "/api/admin/shops/connect",
        &[
            ("tenant_id", &tenant),
            ("provider", "gumroad"),
            ("name", "Gumroad"),
            ("secret", ""),
        ],
    )
    .await;
    back_to(&response, &here);
    let (_, html) = page(&app.address, &admin.client, &here).await;
    let said = address_said(&html);
    let (base, secret) = said
        .split_once("?secret=")
        .expect("the address holds the secret");
    assert_eq!(secret.len(), 48, "{said}");
    let (_, again) = page(&app.address, &admin.client, &here).await;
    assert!(!again.contains(secret), "shown once: {again}");

    let shop: Uuid = base.rsplit('/').next().expect("id").parse().expect("uuid");
    let shop_id = shop.to_string();
    let share = course.share.to_string();
    let response = form(
        &app.address,
        &admin.client,
        &here,
        "/api/admin/shops/products/map",
        &[
            ("tenant_id", &tenant),
            ("shop_id", &shop_id),
            ("product", "gum-1"),
            ("share_id", &share),
        ],
    )
    .await;
    back_to(&response, &here);
    let (_, html) = page(&app.address, &admin.client, &here).await;
    assert!(
        html.contains("Product gum-1 now sells"),
        "the mapping is said: {html}"
    );

    let ping = |sale: &str| {
        format!("sale_id={sale}&product_id=gum-1&email=gum%40example.com&quantity=1&refunded=false")
    };
    let form_type = [(
        "content-type",
        "application/x-www-form-urlencoded".to_owned(),
    )];
    let first = on_test_server(&app, &said);
    assert_eq!(
        deliver(&first, &form_type, ping("G1").as_bytes()).await.0,
        StatusCode::OK
    );
    assert_eq!(orders(&app, admin.tenant).await, 1);

    // Replaced without a secret given: another one is drawn and said.
    let response = form(
        &app.address,
        &admin.client,
        &here,
        "/api/admin/shops/secret",
        &[
            ("tenant_id", &tenant),
            ("shop_id", &shop_id),
            ("secret", ""),
        ],
    )
    .await;
    back_to(&response, &here);
    let (_, html) = page(&app.address, &admin.client, &here).await;
    let replaced = address_said(&html);
    assert_ne!(replaced, said);
    assert!(replaced.starts_with(base), "{replaced}");
    let second = on_test_server(&app, &replaced);
    assert_eq!(
        deliver(&second, &form_type, ping("G2").as_bytes()).await.0,
        StatusCode::OK
    );
    assert_eq!(
        deliver(&first, &form_type, ping("G3").as_bytes()).await.0,
        StatusCode::OK,
        "the one before, for its day"
    );
    let forged = format!("{base}?secret={}", "0".repeat(48));
    let forged = on_test_server(&app, &forged);
    assert_eq!(
        deliver(&forged, &form_type, ping("G4").as_bytes()).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(orders(&app, admin.tenant).await, 3);
}

/// A plain form's answer: a redirect to the page it was sent from.
#[track_caller]
fn back_to(response: &reqwest::Response, here: &str) {
    assert!(response.status().is_redirection(), "{}", response.status());
    let location = response
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or_default();
    assert!(location.trim_end_matches('?').ends_with(here), "{location}");
}

/// The shop address a one-time message on the page says.
fn address_said(html: &str) -> String {
    let at = html.find("/hooks/shops/").expect("an address on the page");
    let start = html[..at].rfind("http").expect("its origin");
    html[start..]
        .split(|c: char| c.is_whitespace() || c == '<' || c == '"')
        .next()
        .expect("the address")
        .to_owned()
}

/// Every bad form is refused with its field named, and changes nothing:
/// no shop, product or secret, no audit row; another tenant's shop is not
/// found from here.
#[sqlx::test(migrations = "../migrations")]
async fn a_bad_shop_form_is_refused_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, _) = creator(&app).await;
    let share = course.share.to_string();
    let cases: [(&[(&str, &str)], &str); 6] = [
        (
            &[("provider", "paypal"), ("name", "X"), ("secret", SECRET)],
            "provider",
        ),
        (
            &[("provider", "stripe"), ("name", "  "), ("secret", SECRET)],
            "name",
        ),
        (
            &[
                ("provider", "stripe"),
                ("name", &"n".repeat(81)),
                ("secret", SECRET),
            ],
            "name",
        ),
        (
            &[("provider", "stripe"), ("name", "X"), ("secret", "short")],
            "secret",
        ),
        (
            &[("provider", "stripe"), ("name", "X"), ("secret", "")],
            "secret",
        ),
        (
            &[
                ("provider", "shopify"),
                ("name", "X"),
                ("secret", "has spaces in it 0123456789"),
            ],
            "secret",
        ),
    ];
    for (fields, field) in cases {
        let (status, error) = call(&app, &admin, "connect", fields).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{fields:?}: {error}"
        );
        assert_eq!(error["Invalid"]["field"], field, "{fields:?}: {error}");
    }
    let shops = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM shop_integrations")
            .fetch_one(&app.pool)
            .await
            .expect("count")
    };
    assert_eq!(shops().await, 0);

    let (_, connected) = call(
        &app,
        &admin,
        "connect",
        &[("provider", "stripe"), ("name", "Main"), ("secret", SECRET)],
    )
    .await;
    let shop = connected["shop"].as_str().expect("id").to_owned();
    let url = on_test_server(&app, connected["webhook_url"].as_str().expect("url"));
    // One product mapped, which the refused forms below leave as it is.
    let (status, kept) = call(
        &app,
        &admin,
        "products/map",
        &[
            ("shop_id", &shop),
            ("product", "p-kept"),
            ("share_id", &share),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let before = audited(&app, admin.tenant).await;

    let long = "p".repeat(201);
    let elsewhere = creator(&app).await.1.share.to_string();
    let unknown = Uuid::new_v4().to_string();
    for (fields, expected) in [
        (
            vec![
                ("shop_id", shop.as_str()),
                ("product", long.as_str()),
                ("share_id", share.as_str()),
            ],
            "product",
        ),
        (
            vec![
                ("shop_id", shop.as_str()),
                ("product", "a\u{7}b"),
                ("share_id", share.as_str()),
            ],
            "product",
        ),
        (
            vec![
                ("shop_id", shop.as_str()),
                ("product", "p1"),
                ("share_id", ""),
            ],
            "share_id",
        ),
        (
            vec![
                ("shop_id", shop.as_str()),
                ("product", "p1"),
                ("share_id", elsewhere.as_str()),
            ],
            "not found",
        ),
        (
            vec![
                ("shop_id", unknown.as_str()),
                ("product", "p1"),
                ("share_id", share.as_str()),
            ],
            "not found",
        ),
    ] {
        let (status, error) = call(&app, &admin, "products/map", &fields).await;
        if expected == "not found" {
            assert_eq!(status, StatusCode::NOT_FOUND, "{fields:?}: {error}");
        } else {
            assert_eq!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{fields:?}: {error}"
            );
            assert_eq!(error["Invalid"]["field"], expected, "{fields:?}: {error}");
        }
    }
    let (status, _) = call(
        &app,
        &admin,
        "products/forget",
        &[("shop_id", &shop), ("product", "never-mapped")],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, error) = call(
        &app,
        &admin,
        "secret",
        &[("shop_id", &shop), ("secret", "short")],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["Invalid"]["field"], "secret", "{error}");
    let (status, error) = call(
        &app,
        &admin,
        "secret",
        &[("shop_id", &shop), ("secret", "")],
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "Stripe's secret is never drawn: {error}"
    );

    // Another tenant's owner reaches none of this shop.
    let (stranger, _, _) = creator(&app).await;
    for (endpoint, fields) in [
        (
            "secret",
            vec![("shop_id", shop.as_str()), ("secret", NEW_SECRET)],
        ),
        (
            "products/map",
            vec![
                ("shop_id", shop.as_str()),
                ("product", "p1"),
                ("share_id", share.as_str()),
            ],
        ),
        (
            "disable",
            vec![("shop_id", shop.as_str()), ("confirm", "yes")],
        ),
        (
            "products/forget",
            vec![("shop_id", shop.as_str()), ("product", "p-kept")],
        ),
    ] {
        let (status, error) = call(&app, &stranger, endpoint, &fields).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{endpoint}: {error}");
    }

    assert_eq!(audited(&app, admin.tenant).await, before, "nothing audited");
    assert_eq!(shops().await, 1);
    let products: Vec<(String, Uuid)> =
        sqlx::query_as("SELECT product_ref, share_id FROM shop_products")
            .fetch_all(&app.pool)
            .await
            .expect("products");
    assert_eq!(products, [("p-kept".to_owned(), course.share)]);
    let disabled: bool =
        sqlx::query_scalar("SELECT disabled_at IS NOT NULL FROM shop_integrations")
            .fetch_one(&app.pool)
            .await
            .expect("the shop");
    assert!(!disabled);
    // The shop still signs with the secret it was connected with, and its
    // product still sells the course.
    let sale = checkout("pi_x", "buyer@example.com", "p-kept");
    let (status, answer) = deliver_stripe(&url, SECRET, &sale).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(orders(&app, admin.tenant).await, 1);
}

/// A Gumroad secret typed in (the creator's own, with characters a URL
/// must encode) is in the address the console and the API say, since
/// Gumroad's pings carry it there: that address places a sale, and so
/// does the address a typed replacement gives.
#[sqlx::test(migrations = "../migrations")]
async fn a_typed_gumroad_secret_is_in_the_address_said(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let typed = "typed&secret#0123456789+=/?";
    let (status, connected) = call(
        &app,
        &admin,
        "connect",
        &[
            ("provider", "gumroad"),
            ("name", "Gumroad"),
            ("secret", typed),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{connected}");
    assert_eq!(connected["holds_secret"], true, "{connected}");
    let said = connected["webhook_url"].as_str().expect("url").to_owned();
    assert_eq!(secret_in(&said), typed, "{said}");
    let shop = connected["shop"].as_str().expect("id").to_owned();
    let share = course.share.to_string();
    let (status, _) = call(
        &app,
        &admin,
        "products/map",
        &[
            ("shop_id", &shop),
            ("product", "gum-1"),
            ("share_id", &share),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let form_type = [(
        "content-type",
        "application/x-www-form-urlencoded".to_owned(),
    )];
    let ping = |sale: &str| {
        format!("sale_id={sale}&product_id=gum-1&email=gum%40example.com&quantity=1&refunded=false")
    };
    let (status, answer) = deliver(
        &on_test_server(&app, &said),
        &form_type,
        ping("T1").as_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");

    let retyped = "another secret 0123456789 %41";
    let (status, rotated) = call(
        &app,
        &admin,
        "secret",
        &[
            ("shop_id", &shop),
            ("secret", "another-secret-0123456789-%41"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_eq!(rotated["holds_secret"], true, "{rotated}");
    let replaced = rotated["webhook_url"].as_str().expect("url").to_owned();
    assert_eq!(secret_in(&replaced), "another-secret-0123456789-%41");
    let (status, answer) = deliver(
        &on_test_server(&app, &replaced),
        &form_type,
        ping("T2").as_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(orders(&app, admin.tenant).await, 2);
    // Spaces are not a secret's: refused, as the API refuses them.
    let (status, _) = call(
        &app,
        &admin,
        "secret",
        &[("shop_id", &shop), ("secret", retyped)],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // The API says the same address for a secret it was given.
    let (status, api) = crate::support::tokens::as_token(
        &app,
        &token,
        reqwest::Method::POST,
        &format!("/api/v1/tenants/{}/shops", admin.tenant),
        Some(serde_json::json!({ "provider": "gumroad", "name": "Second", "secret": typed })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{api}");
    assert_eq!(
        api["secret"],
        Value::Null,
        "a given secret is not answered: {api}"
    );
    assert_eq!(
        secret_in(api["webhook_url"].as_str().expect("url")),
        typed,
        "{api}"
    );
}

/// The secret an address's query carries, decoded.
fn secret_in(address: &str) -> String {
    let url = reqwest::Url::parse(address).expect("a URL");
    assert_eq!(url.fragment(), None, "{address}");
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    assert_eq!(pairs.len(), 1, "{address}");
    assert_eq!(pairs[0].0, "secret", "{address}");
    pairs[0].1.clone()
}

/// Without JavaScript a card's refused form returns to the page, which
/// says why at its top; nothing changed.
#[sqlx::test(migrations = "../migrations")]
async fn without_javascript_a_refused_card_form_says_why(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, _) = creator(&app).await;
    let (_, connected) = call(
        &app,
        &admin,
        "connect",
        &[("provider", "stripe"), ("name", "Main"), ("secret", SECRET)],
    )
    .await;
    let shop = connected["shop"].as_str().expect("id").to_owned();
    let here = format!("/admin/t/{}/shops", admin.tenant);
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let long = "p".repeat(201);
    let response = form(
        &app.address,
        &admin.client,
        &here,
        "/api/admin/shops/products/map",
        &[
            ("tenant_id", &tenant),
            ("shop_id", &shop),
            ("product", &long),
            ("share_id", &share),
        ],
    )
    .await;
    assert!(response.status().is_redirection(), "{}", response.status());
    let location = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert!(location.contains(&here), "{location}");
    let back = if location.starts_with("http") {
        location.clone()
    } else {
        format!("{}{location}", app.address)
    };
    let html = admin
        .client
        .get(back)
        .header("accept", "text/html")
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("body");
    assert!(html.contains("shop-refused"), "{location}: {html}");
    assert!(
        html.contains("A product id is 1 to 200 visible characters."),
        "{html}"
    );
    let products: i64 = sqlx::query_scalar("SELECT count(*) FROM shop_products")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(products, 0);
}
