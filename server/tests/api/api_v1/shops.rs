//! Shops' signed webhooks (`POST /hooks/shops/{tenant_id}/{id}`) and their admin API
//! (`/api/v1/tenants/{id}/shops…`), against real PostgreSQL and Redis:
//! each shop signs as its docs say (the signatures are made here with the
//! shops' own schemes, over the exact bytes sent), a sale issues its codes
//! once however often and however concurrently it is delivered, a refund
//! applies the share's policy, and every delivery (acted on, ignored or
//! refused) is stored with its reason. Every answer is checked against
//! the database.

use base64::Engine as _;
use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, spawn_app};
use crate::support::course::{self, Admin, admin};
use crate::support::tokens::{as_token, create_token};

use engine::shops::verify::hex_mac;

pub(crate) const STRIPE_SECRET: &str = "whsec_test_0123456789abcdef";

/// A tenant with a course (no quota) and a token for shops and orders.
pub(crate) async fn creator(app: &TestApp) -> (Admin, course::Course, String) {
    let admin = admin(app).await;
    let course = course::course(app, &admin, json!({ "quota": null })).await;
    let token = create_token(app, &admin, &["read", "write", "integrations"]).await;
    (admin, course, token)
}

/// Connects a shop and maps `product` to `share`: (shop id, its URL).
async fn connect(
    app: &TestApp,
    admin: &Admin,
    token: &str,
    body: Value,
    product: &str,
    share: Uuid,
) -> (Uuid, String) {
    let (status, shop) = as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops", admin.tenant),
        Some(body),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{shop}");
    let id: Uuid = shop["shop"]["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let url = on_test_server(app, shop["webhook_url"].as_str().expect("url"));
    map(app, admin, token, id, product, share).await;
    (id, url)
}

/// A `webhook_url` (under the configured `server.public_url`) as this
/// test's server serves it: its path and query at the test's address.
pub(crate) fn on_test_server(app: &TestApp, url: &str) -> String {
    let path = url
        .find("/hooks/")
        .map(|at| &url[at..])
        .expect("a hooks URL");
    assert!(url.starts_with("http"), "{url}");
    format!("{}{path}", app.address)
}

async fn map(app: &TestApp, admin: &Admin, token: &str, shop: Uuid, product: &str, share: Uuid) {
    let (status, mapped) = as_token(
        app,
        token,
        Method::PUT,
        &format!(
            "/api/v1/tenants/{}/shops/{shop}/products/{product}",
            admin.tenant
        ),
        Some(json!({ "share_id": share })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{mapped}");
}

/// A Stripe shop signing with [`STRIPE_SECRET`] whose payment link
/// `plink_course` sells `share`.
pub(crate) async fn stripe_shop(
    app: &TestApp,
    admin: &Admin,
    token: &str,
    share: Uuid,
) -> (Uuid, String) {
    let shop = json!({ "provider": "stripe", "name": "Main", "secret": STRIPE_SECRET });
    connect(app, admin, token, shop, "plink_course", share).await
}

/// Stripe's event for a charge of `payment_intent` refunded in full.
fn charge_refunded(event: &str, payment_intent: &str) -> Vec<u8> {
    json!({
        "id": event, "type": "charge.refunded",
        "data": { "object": { "id": "ch_1", "payment_intent": payment_intent, "refunded": true } }
    })
    .to_string()
    .into_bytes()
}

/// Posts `body` to a shop's URL with `headers`: the status and the answer.
pub(crate) async fn deliver(
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (StatusCode, Value) {
    let mut request = new_client().post(url).body(body.to_vec());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.expect("delivery");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Posts `body` signed now by Stripe's scheme under `secret`.
pub(crate) async fn deliver_stripe(url: &str, secret: &str, body: &[u8]) -> (StatusCode, Value) {
    deliver(url, &stripe_signature(secret, now(), body), body).await
}

/// Stripe's header for `body` at `t` under `secret`.
fn stripe_signature(secret: &str, t: i64, body: &[u8]) -> Vec<(&'static str, String)> {
    let v1 = hex_mac(secret, &[t.to_string().as_bytes(), b".", body]);
    vec![
        ("content-type", "application/json".to_owned()),
        ("stripe-signature", format!("t={t},v1={v1}")),
    ]
}

pub(crate) fn checkout(payment_intent: &str, email: &str, product: &str) -> Vec<u8> {
    json!({
        "id": format!("evt_{}", Uuid::new_v4().simple()),
        "type": "checkout.session.completed",
        "data": { "object": {
            "id": "cs_test", "mode": "payment", "payment_status": "paid",
            "payment_intent": payment_intent, "payment_link": product,
            "customer_details": { "email": email }, "metadata": {}
        }}
    })
    .to_string()
    .into_bytes()
}

/// How many of each a tenant has: orders, codes, mails of codes, and
/// stored deliveries by outcome.
async fn counts(app: &TestApp, tenant: Uuid) -> (i64, i64, i64, Vec<(String, i64)>) {
    let one = |sql: &'static str| async move {
        sqlx::query_scalar::<_, i64>(sql)
            .bind(tenant)
            .fetch_one(&app.pool)
            .await
            .expect(sql)
    };
    let outcomes = sqlx::query_as::<_, (String, i64)>(
        "SELECT outcome, count(*) FROM shop_events WHERE tenant_id = $1 GROUP BY 1 ORDER BY 1",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("outcomes");
    (
        one("SELECT count(*) FROM orders WHERE tenant_id = $1").await,
        one("SELECT count(*) FROM auth_codes WHERE tenant_id = $1").await,
        one(
            "SELECT count(*) FROM mail_outbox m WHERE m.template = 'codes_sent'
             AND EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = $1 AND o.mail_id = m.id)",
        )
        .await,
        outcomes,
    )
}

/// One paid Stripe checkout delivered 100 times at once (a shop's retries
/// racing): every delivery is answered 200, exactly one order with one
/// code addressed to the buyer and one mail exists, and all 100
/// deliveries are stored as acted on, naming that one order.
#[sqlx::test(migrations = "../migrations")]
async fn a_stripe_sale_delivered_a_hundred_times_at_once_issues_one_order(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (_, url) = connect(
        &app,
        &admin,
        &token,
        json!({ "provider": "stripe", "name": "Main account", "secret": STRIPE_SECRET }),
        "plink_course",
        course.share,
    )
    .await;
    let body = checkout("pi_race", "Buyer@Example.com", "plink_course");
    let headers = stripe_signature(STRIPE_SECRET, now(), &body);

    let answers = join_all((0..100).map(|_| deliver(&url, &headers, &body))).await;
    let mut orders = Vec::new();
    for (status, answer) in &answers {
        assert_eq!(*status, StatusCode::OK, "{answer}");
        assert_eq!(answer["outcome"], "acted", "{answer}");
        orders.push(answer["orders"][0].as_str().expect("order").to_owned());
    }
    orders.dedup();
    assert_eq!(orders.len(), 1, "every delivery names the one order");

    let (n_orders, codes, mails, outcomes) = counts(&app, admin.tenant).await;
    assert_eq!((n_orders, codes, mails), (1, 1, 1));
    assert_eq!(outcomes, vec![("acted".to_owned(), 100)]);
    let order_source: String =
        sqlx::query_scalar("SELECT order_source FROM shop_integrations WHERE tenant_id = $1")
            .bind(admin.tenant)
            .fetch_one(&app.pool)
            .await
            .expect("the shop's source");
    assert!(order_source.starts_with("stripe-"), "{order_source}");
    let (source, order_ref, buyer, addressed): (String, String, String, bool) = sqlx::query_as(
        "SELECT source, order_ref, buyer_email, addressed FROM orders WHERE tenant_id = $1",
    )
    .bind(admin.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("the order");
    assert_eq!(
        (
            source.as_str(),
            order_ref.as_str(),
            buyer.as_str(),
            addressed
        ),
        (order_source.as_str(), "pi_race", "buyer@example.com", true)
    );
    let addressed_to: Option<String> =
        sqlx::query_scalar("SELECT addressed_to FROM auth_codes WHERE tenant_id = $1")
            .bind(admin.tenant)
            .fetch_one(&app.pool)
            .await
            .expect("the code");
    assert_eq!(addressed_to.as_deref(), Some("buyer@example.com"));
    // The raw event is what was stored, byte for byte.
    let stored: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT DISTINCT body FROM shop_events WHERE tenant_id = $1")
            .bind(admin.tenant)
            .fetch_all(&app.pool)
            .await
            .expect("bodies");
    assert_eq!(stored, vec![body]);
}

/// What a shop must not get through: a wrong or missing signature, a
/// signature replayed after five minutes, a body that is not the shop's,
/// a product never connected. Each is refused with its own answer,
/// stored as refused with its reason, and issues nothing; an unknown or
/// disabled shop is a 404 that stores nothing. The product's sale, once
/// the product is connected, goes through on the shop's next retry.
#[sqlx::test(migrations = "../migrations")]
async fn refused_deliveries_issue_nothing_and_are_recorded_with_their_reason(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let body = checkout("pi_1", "buyer@example.com", "plink_course");

    // (headers, body, status, code)
    type Case<'a> = (Vec<(&'a str, String)>, Vec<u8>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            stripe_signature("whsec_someone_else_0123456", now(), &body),
            body.clone(),
            401,
            "bad_signature",
        ),
        (vec![], body.clone(), 401, "bad_signature"),
        (
            stripe_signature(STRIPE_SECRET, now() - 600, &body),
            body.clone(),
            401,
            "bad_signature",
        ),
        (
            stripe_signature(STRIPE_SECRET, now(), b"{\"type\":"),
            b"{\"type\":".to_vec(),
            422,
            "unreadable_event",
        ),
    ];
    for (headers, sent, status, code) in &cases {
        let (got, answer) = deliver(&url, headers, sent).await;
        assert_eq!(
            (got.as_u16(), answer["code"].as_str()),
            (*status, Some(*code)),
            "{answer}"
        );
    }
    // A product no one connected: refused, so the shop retries it.
    let other = checkout("pi_2", "buyer@example.com", "plink_other");
    let headers = stripe_signature(STRIPE_SECRET, now(), &other);
    let (status, answer) = deliver(&url, &headers, &other).await;
    assert_eq!(
        (status.as_u16(), answer["code"].as_str()),
        (422, Some("unknown_product"))
    );

    let (orders, codes, _, outcomes) = counts(&app, admin.tenant).await;
    assert_eq!((orders, codes), (0, 0), "a refused delivery issues nothing");
    assert_eq!(outcomes, vec![("refused".to_owned(), 5)]);
    let reasons: Vec<String> = sqlx::query_scalar(
        "SELECT reason FROM shop_events WHERE tenant_id = $1 ORDER BY received_at, id",
    )
    .bind(admin.tenant)
    .fetch_all(&app.pool)
    .await
    .expect("reasons");
    assert!(reasons[0].contains("does not match"), "{reasons:?}");
    assert!(reasons[1].contains("missing"), "{reasons:?}");
    assert!(reasons[2].contains("5 minutes"), "{reasons:?}");
    assert!(reasons[3].contains("cannot be read"), "{reasons:?}");
    assert!(
        reasons[4].contains("no product of this sale"),
        "{reasons:?}"
    );

    // The console's list says the same, newest first.
    let (status, events) = as_token(
        &app,
        &token,
        Method::GET,
        &format!("/api/v1/tenants/{}/shops/{shop}/events", admin.tenant),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let listed: Vec<&str> = events
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["outcome"].as_str().expect("outcome"))
        .collect();
    assert_eq!(listed, vec!["refused"; 5]);
    assert_eq!(events[0]["reason"].as_str(), Some(reasons[4].as_str()));

    // Connected now: the shop's retry of that sale goes through.
    map(&app, &admin, &token, shop, "plink_other", course.share).await;
    let headers = stripe_signature(STRIPE_SECRET, now(), &other);
    let (status, answer) = deliver(&url, &headers, &other).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(counts(&app, admin.tenant).await.0, 1);

    // No such shop, or a disabled one: 404, and nothing stored.
    let before = counts(&app, admin.tenant).await;
    let nowhere = format!(
        "{}/hooks/shops/{}/{}",
        app.address,
        admin.tenant,
        Uuid::new_v4()
    );
    let (status, answer) = deliver(&nowhere, &headers, &other).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let garbage = format!("{}/hooks/shops/{}/not-an-id", app.address, admin.tenant);
    let (status, answer) = deliver(&garbage, &headers, &other).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, _) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops/{shop}/disable", admin.tenant),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = deliver(&url, &headers, &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(counts(&app, admin.tenant).await, before);
}

/// A sale, then the shop's full refund, then a partial one: the full
/// refund applies the share's policy (the default revokes the unused
/// code) and is stored as acted on; the partial one is ignored and says
/// why; a dispute of the same order is answered as the refund it was.
#[sqlx::test(migrations = "../migrations")]
async fn a_stripe_refund_applies_the_shares_policy(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (_, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let sale = checkout("pi_r", "buyer@example.com", "plink_course");
    let (status, placed) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::OK, "{placed}");
    let order = placed["orders"][0].as_str().expect("order").to_owned();

    let charge = |kind: &str, refunded: bool| {
        json!({
            "id": format!("evt_{}", Uuid::new_v4().simple()), "type": kind,
            "data": { "object": { "id": "ch_1", "payment_intent": "pi_r", "refunded": refunded } }
        })
        .to_string()
        .into_bytes()
    };
    let partial = charge("charge.refunded", false);
    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &partial).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("ignored"))
    );
    assert!(answer["reason"].as_str().expect("why").contains("partial"));
    let revoked = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM auth_codes WHERE tenant_id = $1 AND revoked_at IS NOT NULL",
        )
        .bind(admin.tenant)
        .fetch_one(&app.pool)
        .await
        .expect("revoked")
    };
    assert_eq!(revoked().await, 0, "a partial refund takes no seat");

    let full = charge("charge.refunded", true);
    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &full).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("acted")),
        "{answer}"
    );
    assert_eq!(answer["orders"][0].as_str(), Some(order.as_str()));
    assert_eq!(revoked().await, 1);
    let (kind, reason): (String, Option<String>) =
        sqlx::query_as("SELECT refund_kind, refund_reason FROM orders WHERE tenant_id = $1")
            .bind(admin.tenant)
            .fetch_one(&app.pool)
            .await
            .expect("the refund");
    assert_eq!(
        (kind.as_str(), reason.as_deref()),
        ("refund", Some("refunded in stripe"))
    );

    // The dispute that follows finds the order refunded: nothing more.
    let dispute = charge("charge.dispute.created", false);
    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &dispute).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("acted"))
    );
    assert_eq!(revoked().await, 1);
}

/// Lemon Squeezy (hex `X-Signature`), Shopify (base64
/// `X-Shopify-Hmac-Sha256`, one order per line of a connected product,
/// an order of other things ignored) and Gumroad
/// (the secret in the URL) each place and refund orders by their own
/// scheme, and each refuses another scheme's signature.
#[sqlx::test(migrations = "../migrations")]
async fn lemon_squeezy_shopify_and_gumroad_place_and_refund_by_their_own_schemes(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let order_state = |source: &'static str, order_ref: String| {
        let pool = app.pool.clone();
        let tenant = admin.tenant;
        async move {
            sqlx::query_scalar::<_, bool>(
                "SELECT refunded_at IS NOT NULL FROM orders
                 WHERE tenant_id = $1 AND source LIKE $2 || '-%' AND order_ref = $3",
            )
            .bind(tenant)
            .bind(source)
            .bind(order_ref)
            .fetch_optional(&pool)
            .await
            .expect("order")
        }
    };

    // Lemon Squeezy.
    let lemon_secret = "ls_signing_secret_abcdef";
    let (_, url) = connect(
        &app,
        &admin,
        &token,
        json!({ "provider": "lemonsqueezy", "name": "LS", "secret": lemon_secret }),
        "42",
        course.share,
    )
    .await;
    let lemon = |event: &str, status: &str| {
        json!({ "meta": { "event_name": event }, "data": { "id": "9001", "attributes": {
            "status": status, "user_email": "ls-buyer@example.com",
            "first_order_item": { "product_id": 42, "quantity": 1 } } } })
        .to_string()
        .into_bytes()
    };
    let signed = |body: &[u8]| vec![("x-signature", hex_mac(lemon_secret, &[body]))];
    let paid = lemon("order_created", "paid");
    assert_eq!(deliver(&url, &signed(&paid), &paid).await.0, StatusCode::OK);
    assert_eq!(
        order_state("lemonsqueezy", "9001".into()).await,
        Some(false)
    );
    let base64_instead = vec![(
        "x-signature",
        base64::engine::general_purpose::STANDARD.encode(hex_mac(lemon_secret, &[&paid])),
    )];
    assert_eq!(
        deliver(&url, &base64_instead, &paid).await.0,
        StatusCode::UNAUTHORIZED
    );
    let refunded = lemon("order_refunded", "refunded");
    assert_eq!(
        deliver(&url, &signed(&refunded), &refunded).await.0,
        StatusCode::OK
    );
    assert_eq!(order_state("lemonsqueezy", "9001".into()).await, Some(true));

    // Shopify: two products in one order, one of them a course.
    let shopify_secret = "shpss_app_secret_abcdef";
    let (_, url) = connect(
        &app,
        &admin,
        &token,
        json!({ "provider": "shopify", "name": "Store", "secret": shopify_secret }),
        "632910392",
        course.share,
    )
    .await;
    let shopify = |topic: &str, body: Value| {
        let body = body.to_string().into_bytes();
        let mac =
            <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(shopify_secret.as_bytes())
                .expect("key");
        let digest = hmac::Mac::finalize(hmac::Mac::chain_update(mac, &body)).into_bytes();
        let headers = vec![
            ("x-shopify-topic", topic.to_owned()),
            ("x-shopify-event-id", Uuid::new_v4().to_string()),
            (
                "x-shopify-hmac-sha256",
                base64::engine::general_purpose::STANDARD.encode(digest),
            ),
        ];
        (headers, body)
    };
    let (headers, body) = shopify(
        "orders/paid",
        json!({ "id": 5001, "email": "shop-buyer@example.com", "line_items": [
            { "id": 71, "product_id": 632910392, "quantity": 1 },
            { "id": 72, "product_id": 111, "quantity": 3 } ] }),
    );
    let (status, answer) = deliver(&url, &headers, &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["orders"].as_array().map(Vec::len),
        Some(1),
        "the T-shirt is not a course"
    );
    assert_eq!(order_state("shopify", "5001:71".into()).await, Some(false));
    assert_eq!(order_state("shopify", "5001:72".into()).await, None);
    let (headers, body) = shopify(
        "refunds/create",
        json!({ "order_id": 5001, "refund_line_items": [
            { "line_item_id": 71, "quantity": 1,
              "line_item": { "id": 71, "product_id": 632910392, "quantity": 1 } } ] }),
    );
    assert_eq!(deliver(&url, &headers, &body).await.0, StatusCode::OK);
    // An order of the store's other things only: none of AdmitOne's
    // business, answered 200 (a store must not see its webhook fail).
    let (headers, body) = shopify(
        "orders/paid",
        json!({ "id": 5002, "email": "shop-buyer@example.com", "line_items": [
            { "id": 81, "product_id": 111, "quantity": 1 } ] }),
    );
    let (status, answer) = deliver(&url, &headers, &body).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("ignored")),
        "{answer}"
    );
    assert_eq!(order_state("shopify", "5001:71".into()).await, Some(true));

    // Gumroad: AdmitOne draws the secret; the URL carries it.
    let (status, shop) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops", admin.tenant),
        Some(json!({ "provider": "gumroad", "name": "Gumroad" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{shop}");
    let secret = shop["secret"].as_str().expect("a drawn secret");
    let with_secret = on_test_server(&app, shop["webhook_url"].as_str().expect("url"));
    assert!(
        with_secret.ends_with(&format!("?secret={secret}")),
        "{with_secret}"
    );
    let id: Uuid = shop["shop"]["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    map(&app, &admin, &token, id, "gum-1", course.share).await;
    let form = [(
        "content-type",
        "application/x-www-form-urlencoded".to_owned(),
    )];
    let sale = b"sale_id=G1&product_id=gum-1&email=gum%40example.com&quantity=1&refunded=false";
    let without = with_secret.split('?').next().expect("base").to_owned();
    assert_eq!(
        deliver(&without, &form, sale).await.0,
        StatusCode::UNAUTHORIZED
    );
    let wrong = format!("{without}?secret={}", "0".repeat(48));
    assert_eq!(
        deliver(&wrong, &form, sale).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(deliver(&with_secret, &form, sale).await.0, StatusCode::OK);
    assert_eq!(order_state("gumroad", "G1".into()).await, Some(false));
    let refund = b"sale_id=G1&product_id=gum-1&email=gum%40example.com&refunded=true";
    assert_eq!(deliver(&with_secret, &form, refund).await.0, StatusCode::OK);
    assert_eq!(order_state("gumroad", "G1".into()).await, Some(true));
}

/// A rotated secret: the new one verifies at once, the one before for a
/// day (deliveries the shop signed with it), and not after. The secret
/// is never answered by a read.
#[sqlx::test(migrations = "../migrations")]
async fn a_rotated_secret_keeps_the_previous_one_for_a_day(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let next = "whsec_next_secret_0123456789";
    let (status, rotated) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops/{shop}/secret", admin.tenant),
        Some(json!({ "secret": next })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_eq!(
        rotated["secret"],
        Value::Null,
        "a pasted secret is not answered back"
    );
    assert!(rotated["shop"]["previous_secret_until"].is_string());
    for (i, secret) in [next, STRIPE_SECRET].into_iter().enumerate() {
        let sale = checkout(&format!("pi_rot_{i}"), "buyer@example.com", "plink_course");
        let (status, answer) = deliver_stripe(&url, secret, &sale).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    sqlx::query(
        "UPDATE shop_integrations SET previous_until = now() - interval '1 second' WHERE id = $1",
    )
    .bind(shop)
    .execute(&app.pool)
    .await
    .expect("a day later");
    let sale = checkout("pi_rot_late", "buyer@example.com", "plink_course");
    let (status, _) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(counts(&app, admin.tenant).await.0, 2);

    let (status, read) = as_token(
        &app,
        &token,
        Method::GET,
        &format!("/api/v1/tenants/{}/shops/{shop}", admin.tenant),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!read.to_string().contains("whsec_"), "{read}");
    assert_eq!(read["products"][0]["product"], "plink_course");
}

/// Bad input to the admin API is refused with its field and changes
/// nothing: an unknown provider, no secret for a shop that signs with its
/// own, a secret too short, another tenant's share for a product.
#[sqlx::test(migrations = "../migrations")]
async fn connecting_a_shop_refuses_bad_input(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, _, token) = creator(&app).await;
    let (other, other_course, _) = creator(&app).await;
    let path = format!("/api/v1/tenants/{}/shops", admin.tenant);
    for (body, field) in [
        (
            json!({ "provider": "paypal", "name": "x", "secret": STRIPE_SECRET }),
            "provider",
        ),
        (json!({ "provider": "stripe", "name": "x" }), "secret"),
        (
            json!({ "provider": "stripe", "name": "x", "secret": "short" }),
            "secret",
        ),
        (
            json!({ "provider": "stripe", "name": "", "secret": STRIPE_SECRET }),
            "name",
        ),
    ] {
        let (status, answer) = as_token(&app, &token, Method::POST, &path, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(answer["field"], field, "{answer}");
    }
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM shop_integrations")
            .fetch_one(&app.pool)
            .await
            .expect("count")
    };
    assert_eq!(count().await, 0);
    let (status, shop) = as_token(
        &app,
        &token,
        Method::POST,
        &path,
        Some(json!({ "provider": "stripe", "name": "x", "secret": STRIPE_SECRET })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = shop["shop"]["id"].as_str().expect("id");
    let (status, _) = as_token(
        &app,
        &token,
        Method::PUT,
        &format!("{path}/{id}/products/p1"),
        Some(json!({ "share_id": other_course.share })),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant's share is no share here"
    );
    let mapped: i64 = sqlx::query_scalar("SELECT count(*) FROM shop_products")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(mapped, 0);
    let _ = other;
}

/// Connecting a shop, mapping its products or setting its secret decides
/// what its deliveries issue: a token that may manage integrations but
/// not courses (`integrations` without `write`) can read shops and
/// change none of that.
#[sqlx::test(migrations = "../migrations")]
async fn only_a_member_who_manages_courses_may_say_what_a_shop_issues(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, _) = connect(
        &app,
        &admin,
        &token,
        json!({ "provider": "gumroad", "name": "Gumroad" }),
        "gum-1",
        course.share,
    )
    .await;
    // Without `integrations`, nothing of shops at all.
    let courses_only = create_token(&app, &admin, &["read", "write"]).await;
    let (status, _) = as_token(
        &app,
        &courses_only,
        Method::POST,
        &format!("/api/v1/tenants/{}/shops", admin.tenant),
        Some(json!({ "provider": "gumroad", "name": "Mine" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let narrow = create_token(&app, &admin, &["read", "integrations"]).await;
    let base = format!("/api/v1/tenants/{}/shops", admin.tenant);
    let before = counts(&app, admin.tenant).await;
    for (method, path, body) in [
        (
            Method::POST,
            base.clone(),
            Some(json!({ "provider": "gumroad", "name": "Mine" })),
        ),
        (
            Method::PUT,
            format!("{base}/{shop}/products/gum-2"),
            Some(json!({ "share_id": course.share })),
        ),
        (
            Method::DELETE,
            format!("{base}/{shop}/products/gum-1"),
            None,
        ),
        (
            Method::POST,
            format!("{base}/{shop}/secret"),
            Some(json!({})),
        ),
        (Method::POST, format!("{base}/{shop}/disable"), None),
    ] {
        let (status, answer) = as_token(&app, &narrow, method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
    }
    let (status, _) = as_token(&app, &narrow, Method::GET, &format!("{base}/{shop}"), None).await;
    assert_eq!(status, StatusCode::OK);
    let shops: i64 =
        sqlx::query_scalar("SELECT count(*) FROM shop_integrations WHERE disabled_at IS NULL")
            .fetch_one(&app.pool)
            .await
            .expect("shops");
    let products: i64 = sqlx::query_scalar("SELECT count(*) FROM shop_products")
        .fetch_one(&app.pool)
        .await
        .expect("products");
    assert_eq!((shops, products), (1, 1));
    assert_eq!(counts(&app, admin.tenant).await, before);
}

/// The refund comes first (the sale was refused: its product was not
/// connected yet), then the sale's retry once it is: the order is placed
/// and refunded at once, so no seat is sold for money given back.
#[sqlx::test(migrations = "../migrations")]
async fn a_refund_that_comes_before_its_sale_is_applied_when_the_sale_is_placed(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (shop, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let sale = checkout("pi_early", "buyer@example.com", "plink_late");
    let (status, _) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let refund = charge_refunded("evt_refund", "pi_early");
    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &refund).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("ignored")),
        "{answer}"
    );
    assert!(
        answer["reason"].as_str().expect("why").contains("kept"),
        "{answer}"
    );

    map(&app, &admin, &token, shop, "plink_late", course.share).await;
    let (status, answer) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (refunded, live): (bool, i64) = sqlx::query_as(
        "SELECT o.refunded_at IS NOT NULL,
                (SELECT count(*) FROM auth_codes c WHERE c.tenant_id = o.tenant_id
                   AND c.batch_id = o.batch_id AND c.revoked_at IS NULL)
         FROM orders o WHERE o.tenant_id = $1 AND o.order_ref = 'pi_early'",
    )
    .bind(admin.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("the order");
    assert_eq!(
        (refunded, live),
        (true, 0),
        "placed and refunded, no live code"
    );
}

/// A shop's refunds reach its own orders alone: a second Stripe account
/// of the tenant (or whoever holds its secret) cannot refund the first's
/// sale, and a shop's URL under another tenant finds nothing.
#[sqlx::test(migrations = "../migrations")]
async fn a_shop_refunds_its_own_orders_alone(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (first, url) = connect(
        &app,
        &admin,
        &token,
        json!({ "provider": "stripe", "name": "First", "secret": STRIPE_SECRET }),
        "plink_course",
        course.share,
    )
    .await;
    let other_secret = "whsec_second_account_0123456";
    let (_, other_url) = connect(
        &app,
        &admin,
        &token,
        json!({ "provider": "stripe", "name": "Second", "secret": other_secret }),
        "plink_other",
        course.share,
    )
    .await;
    let sale = checkout("pi_mine", "buyer@example.com", "plink_course");
    let (status, _) = deliver_stripe(&url, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::OK);
    let refund = charge_refunded("evt_forged", "pi_mine");
    let (status, answer) = deliver_stripe(&other_url, other_secret, &refund).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (StatusCode::OK, Some("ignored")),
        "{answer}"
    );
    let refunded: bool = sqlx::query_scalar(
        "SELECT refunded_at IS NOT NULL FROM orders WHERE tenant_id = $1 AND order_ref = 'pi_mine'",
    )
    .bind(admin.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("the order");
    assert!(!refunded, "another shop's refund reached this order");
    // Nor does an order placed through the API take a shop's source.
    let source: String = sqlx::query_scalar(
        "SELECT order_source FROM shop_integrations WHERE tenant_id = $1 AND id = $2",
    )
    .bind(admin.tenant)
    .bind(first)
    .fetch_one(&app.pool)
    .await
    .expect("the first shop's source");
    let (status, answer) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/shares/{}/orders", course.share),
        Some(json!({ "source": source, "order_id": "pi_api", "email": "x@example.com" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["field"], "source", "{answer}");

    // The first shop under another tenant's path: no such shop.
    let (elsewhere, _, _) = creator(&app).await;
    let before = counts(&app, admin.tenant).await;
    let wrong_tenant = format!("{}/hooks/shops/{}/{first}", app.address, elsewhere.tenant);
    let (status, _) = deliver_stripe(&wrong_tenant, STRIPE_SECRET, &sale).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(counts(&app, admin.tenant).await, before);
    assert_eq!(counts(&app, elsewhere.tenant).await, (0, 0, 0, vec![]));
}

/// Anyone may post to a shop's URL: two hundred forged deliveries at once
/// are all refused, and at most sixty a minute are stored, none with what
/// was sent (the console shows that they came, not their bodies); none
/// waits for another to be counted (a flood holds no connection waiting).
#[sqlx::test(migrations = "../migrations")]
async fn a_flood_of_forged_deliveries_stores_sixty_a_minute_without_their_bodies(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, course, token) = creator(&app).await;
    let (_, url) = stripe_shop(&app, &admin, &token, course.share).await;
    let body = vec![b'x'; 64 * 1024];
    let forged = stripe_signature("whsec_not_the_secret_0123456", now(), &body);
    let answers = join_all((0..200).map(|_| deliver(&url, &forged, &body))).await;
    assert!(
        answers
            .iter()
            .all(|(status, _)| *status == StatusCode::UNAUTHORIZED)
    );
    let stored = || async {
        sqlx::query_as::<_, (i64, i64)>(
            "SELECT count(*), count(*) FILTER (WHERE body <> '') FROM shop_events WHERE tenant_id = $1",
        )
        .bind(admin.tenant)
        .fetch_one(&app.pool)
        .await
        .expect("stored")
    };
    // At once, each waits for no other: the count may stop short (the
    // ones that found the count busy are logged, not stored), never past.
    let (burst, with_body) = stored().await;
    assert!(
        (1..=engine::shops::intake::REFUSED_PER_MINUTE).contains(&burst),
        "{burst}"
    );
    assert_eq!(with_body, 0);
    // One after another, the minute fills up to the cap and no further.
    for _ in 0..70 {
        let (status, _) = deliver(&url, &forged, &body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        stored().await,
        (engine::shops::intake::REFUSED_PER_MINUTE, 0)
    );
    assert_eq!(counts(&app, admin.tenant).await.0, 0);
}
