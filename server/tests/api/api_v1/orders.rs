//! Orders through the JSON API (`POST /api/v1/shares/{id}/orders`, `GET
//! /api/v1/orders/{source}/{order_id}`), against real PostgreSQL, Redis
//! and SMTP: an order issues its codes once (however often, however
//! concurrently it is delivered), mails them to the buyer through the
//! outbox, and a code addressed to the buyer binds to the buyer's
//! verified account alone. Every answer is checked against the database.

use std::time::Duration;

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client};
use crate::support::course::{self, Admin, admin, enter_code, error_of, learners, open};
use crate::support::mail::{MAIL_WAIT, sign_up, spawn_app_with_mail};
use crate::support::tokens::{as_token, create_token};

/// What an order left behind: orders, batches, codes and mails of codes.
#[derive(Debug, PartialEq, Eq)]
struct Written {
    orders: i64,
    batches: i64,
    codes: i64,
    mails: i64,
}

async fn written(app: &TestApp) -> Written {
    let count = |sql: &'static str| async move {
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&app.pool)
            .await
            .expect(sql)
    };
    Written {
        orders: count("SELECT count(*) FROM orders").await,
        batches: count("SELECT count(*) FROM code_batches").await,
        codes: count("SELECT count(*) FROM auth_codes").await,
        mails: count("SELECT count(*) FROM mail_outbox WHERE template = 'codes_sent'").await,
    }
}

async fn place(app: &TestApp, token: &str, share: Uuid, body: Value) -> (StatusCode, Value) {
    as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/shares/{share}/orders"),
        Some(body),
    )
    .await
}

/// A course (no quota: these tests count codes, not accesses) and a
/// token that may write.
async fn shop(app: &TestApp) -> (Admin, course::Course, String) {
    let admin = admin(app).await;
    let course = course::course(app, &admin, json!({ "quota": null })).await;
    let token = create_token(app, &admin, &["read", "write"]).await;
    (admin, course, token)
}

/// One seat bought: one code, addressed to the buyer and mailed to them.
/// A replay answers the same code and mails nothing; the same order id
/// with other details is refused. Another verified account that types the
/// code is refused (and the leak signal counts it); the buyer, once signed
/// up with the address, binds it and opens the course. The order then
/// reads back with the code bound to the buyer, and never shows the code.
#[sqlx::test(migrations = "../migrations")]
async fn an_order_mails_one_code_that_binds_to_its_buyer_alone(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (admin, course, token) = shop(&app).await;
    let order =
        json!({ "source": "stripe", "order_id": "cs_test_1", "email": "Buyer@Example.com" });

    let (status, placed) = place(&app, &token, course.share, order.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    assert_eq!(placed["replayed"], false);
    assert_eq!(placed["email"], "buyer@example.com", "case-folded");
    assert_eq!(
        (placed["addressed"].clone(), placed["mailed"].clone()),
        (json!(true), json!(true))
    );
    let code = placed["issued"][0]["code"]
        .as_str()
        .expect("the code")
        .to_owned();
    let code_id = placed["issued"][0]["id"]
        .as_str()
        .expect("its id")
        .to_owned();
    assert_eq!(placed["issued"].as_array().map(Vec::len), Some(1));
    let addressed: Option<String> =
        sqlx::query_scalar("SELECT addressed_to FROM auth_codes WHERE id = $1::uuid")
            .bind(&code_id)
            .fetch_one(&app.pool)
            .await
            .expect("the code's row");
    assert_eq!(addressed.as_deref(), Some("buyer@example.com"));

    let mail = sink
        .wait_for("buyer@example.com", "Your access code for", MAIL_WAIT)
        .await;
    assert!(
        mail.text.contains(&code),
        "the mail carries the code: {}",
        mail.text
    );
    assert!(mail.html.contains(&code));
    assert!(
        mail.link(&format!("/s/{}", course.slug)).is_some(),
        "the course's link"
    );
    // No row holds the code: the mail's names its id only.
    let params: Value =
        sqlx::query_scalar("SELECT params FROM mail_outbox WHERE template = 'codes_sent'")
            .fetch_one(&app.pool)
            .await
            .expect("the mail's row");
    assert!(
        !params.to_string().contains(&code.replace('-', "")),
        "{params}"
    );
    assert!(!params.to_string().contains(&code), "{params}");

    // The shop delivers the order again: the same answer, nothing new.
    let before = written(&app).await;
    assert_eq!(
        before,
        Written {
            orders: 1,
            batches: 1,
            codes: 1,
            mails: 1
        }
    );
    let (status, again) = place(&app, &token, course.share, order.clone()).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["id"], placed["id"]);
    assert_eq!(
        again["issued"][0]["code"],
        json!(code),
        "the same code again"
    );
    assert_eq!(written(&app).await, before);
    // Other details under the same order id, each on its own: a mix-up,
    // refused, and nothing written.
    let other_share = course::course(&app, &admin, json!({ "quota": null })).await;
    for (key, value) in [
        ("email", json!("someone-else@example.com")),
        ("quantity", json!(2)),
        ("addressed", json!(false)),
        ("mail", json!(false)),
        ("lang", json!("zh-TW")),
    ] {
        let mut other = order.clone();
        other[key] = value;
        if key == "quantity" {
            other["addressed"] = json!(false);
        }
        let (status, refused) = place(&app, &token, course.share, other).await;
        assert_eq!(
            (status, refused["code"].clone()),
            (StatusCode::CONFLICT, json!("order_conflict")),
            "{key}"
        );
    }
    let (status, refused) = place(&app, &token, other_share.share, order.clone()).await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("order_conflict")),
        "another share"
    );
    assert_eq!(written(&app).await, before);

    // Someone else typed the buyer's code.
    let mut others = learners(&app, 1).await;
    let (intruder, intruder_client) = others.pop().expect("a learner");
    let (status, error) =
        error_of(enter_code(&app, &intruder_client, &course.slug, &code).await).await;
    assert_eq!((status, error.as_str()), (409, "code_addressed_elsewhere"));
    let attempts: i32 =
        sqlx::query_scalar("SELECT foreign_attempts FROM auth_codes WHERE id = $1::uuid")
            .bind(&code_id)
            .fetch_one(&app.pool)
            .await
            .expect("attempts");
    assert_eq!(attempts, 1, "the leak signal counts the try");

    // The buyer signs up with the address and redeems.
    let buyer = new_client();
    sign_up(&app, &buyer, "buyer@example.com").await;
    let entered = enter_code(&app, &buyer, &course.slug, &code).await;
    assert!(
        entered.status().is_success(),
        "{}",
        entered.text().await.unwrap_or_default()
    );
    let opened = open(&app, &buyer, &course, None).await;
    assert_eq!(opened.status(), 200);
    let holder: Option<String> = sqlx::query_scalar(
        "SELECT a.email FROM auth_codes c JOIN accounts a ON a.id = c.bound_principal WHERE c.id = $1::uuid",
    )
    .bind(&code_id)
    .fetch_optional(&app.pool)
    .await
    .expect("the binding");
    assert_eq!(holder.as_deref(), Some("buyer@example.com"));
    let bound_to_intruder: i64 =
        sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE bound_principal = $1")
            .bind(intruder)
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(bound_to_intruder, 0);

    // The integrator reads the order back: bound, to the buyer; no code.
    let (status, read) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/stripe/cs_test_1",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["codes"][0]["state"], "bound");
    assert_eq!(read["codes"][0]["holder"], "buyer@example.com");
    assert!(!read.to_string().contains(&code), "{read}");
    // One mail, ever.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        sink.received_by("buyer@example.com")
            .iter()
            .filter(|m| m.subject.starts_with("Your access code"))
            .count(),
        1
    );
}

/// A hundred deliveries of one order at once (a shop retrying, several
/// instances): exactly one issues, every other answers it as a replay
/// with the same codes, and one mail is queued.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_concurrent_deliveries_of_one_order_issue_once(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let order = json!({ "source": "lemonsqueezy", "order_id": "1001", "email": "team@example.com",
                        "quantity": 5 });
    let answers =
        join_all((0..100).map(|_| place(&app, &token, course.share, order.clone()))).await;
    let created = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .count();
    let replayed = answers
        .iter()
        .filter(|(s, body)| *s == StatusCode::OK && body["replayed"] == true)
        .count();
    assert_eq!(
        (created, replayed),
        (1, 99),
        "{:?}",
        answers.iter().map(|(s, _)| *s).collect::<Vec<_>>()
    );
    let codes = |body: &Value| -> Vec<String> {
        body["issued"]
            .as_array()
            .expect("issued")
            .iter()
            .map(|c| c["code"].as_str().expect("code").to_owned())
            .collect()
    };
    let first = codes(&answers[0].1);
    assert_eq!(first.len(), 5);
    assert!(
        answers.iter().all(|(_, body)| codes(body) == first),
        "every answer names the same codes"
    );
    assert_eq!(
        written(&app).await,
        Written {
            orders: 1,
            batches: 1,
            codes: 5,
            mails: 1
        }
    );
    let addressed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE addressed_to IS NOT NULL")
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(addressed, 0, "several codes are not addressed by default");
}

/// Several codes in one mail, each distinct, each usable by whoever
/// enters it first; a code of the order reads back as bound to them.
#[sqlx::test(migrations = "../migrations")]
async fn an_order_of_several_codes_mails_them_all_to_hand_out(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, placed) = place(
        &app,
        &token,
        course.share,
        json!({ "source": "gumroad", "order_id": "sale-7", "email": "school@example.com",
                "quantity": 3, "lang": "zh-CN" }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    let codes: Vec<String> = placed["issued"]
        .as_array()
        .expect("issued")
        .iter()
        .map(|c| c["code"].as_str().expect("code").to_owned())
        .collect();
    let mut distinct = codes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3);
    let mail = sink
        .wait_for("school@example.com", "兑换码", MAIL_WAIT)
        .await;
    for code in &codes {
        assert!(mail.text.contains(code.as_str()), "{code} in {}", mail.text);
    }
    let people = learners(&app, 2).await;
    for ((_, client), code) in people.iter().zip(&codes) {
        let entered = enter_code(&app, client, &course.slug, code).await;
        assert!(
            entered.status().is_success(),
            "{}",
            entered.text().await.unwrap_or_default()
        );
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    let (_, read) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/gumroad/sale-7",
        None,
    )
    .await;
    let states: Vec<&str> = read["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c["state"].as_str().expect("state"))
        .collect();
    assert_eq!(
        states.iter().filter(|s| **s == "bound").count(),
        2,
        "{read}"
    );
    assert_eq!(
        states.iter().filter(|s| **s == "unused").count(),
        1,
        "{read}"
    );
}

/// Bad input gets a clear answer naming its field, and writes nothing;
/// another tenant's share and another tenant's order are refused like
/// unknown ones.
#[sqlx::test(migrations = "../migrations")]
async fn a_bad_order_is_refused_and_writes_nothing(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let good = json!({ "source": "stripe", "order_id": "cs_1", "email": "b@example.com" });
    let with = |key: &str, value: Value| {
        let mut body = good.clone();
        body[key] = value;
        body
    };
    for (body, field) in [
        (with("source", json!("Stripe")), "source"),
        (with("source", json!("")), "source"),
        (with("order_id", json!("  ")), "order_id"),
        (with("order_id", json!("x".repeat(201))), "order_id"),
        (with("email", json!("not an address")), "email"),
        (with("quantity", json!(0)), "quantity"),
        (with("quantity", json!(1001)), "quantity"),
        (with("lang", json!("fr")), "lang"),
        (
            {
                let mut body = with("quantity", json!(3));
                body["addressed"] = json!(true);
                body
            },
            "addressed",
        ),
    ] {
        let (status, answer) = place(&app, &token, course.share, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["field"], field, "{body}: {answer}");
    }
    let (status, _) = place(&app, &token, course.share, json!({ "source": "stripe" })).await;
    assert_eq!(status.as_u16() / 100, 4, "a body without its fields");
    let (status, _) = place(&app, &token, Uuid::now_v7(), good.clone()).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "an unknown share answers as another tenant's does"
    );

    // Another tenant's admin, their share and their order.
    let (_, theirs, their_token) = shop(&app).await;
    let (status, _) = place(&app, &token, theirs.share, good.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another tenant's share");
    assert_eq!(
        written(&app).await,
        Written {
            orders: 0,
            batches: 0,
            codes: 0,
            mails: 0
        },
        "nothing refused wrote anything"
    );
    let (status, _) = place(&app, &their_token, theirs.share, good.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/stripe/cs_1",
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "another tenant's order answers as an unknown one"
    );
    let (status, _) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/stripe/cs_unknown",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The same shop order id in two tenants: two orders, one each.
    let (status, _) = place(&app, &token, course.share, good).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(written(&app).await.orders, 2);
}

/// A replay's answer carries the codes only for the member who placed the
/// order, within 15 minutes: later it carries their states alone. A
/// `read` token may read an order but not place one; `mail: false` queues
/// no mail and hands the codes to the caller; the language is answered as
/// asked, never as the buyer's account has it.
#[sqlx::test(migrations = "../migrations")]
async fn an_orders_codes_are_handed_over_once_and_to_its_placer(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (admin, course, token) = shop(&app).await;
    let order = json!({ "source": "shop", "order_id": "o-1", "email": "b@example.com",
                        "quantity": 2, "mail": false });
    let (status, placed) = place(&app, &token, course.share, order.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    assert_eq!(placed["mailed"], false);
    assert_eq!(placed["lang"], Value::Null, "not asked, not told");
    assert!(placed["issued"][1]["code"].is_string(), "{placed}");
    assert_eq!(written(&app).await.mails, 0, "nothing mailed");

    let (status, again) = place(&app, &token, course.share, order.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        again["issued"][0]["code"], placed["issued"][0]["code"],
        "a retry, at once"
    );

    sqlx::query("UPDATE orders SET created_at = now() - interval '16 minutes'")
        .execute(&app.pool)
        .await
        .expect("backdating the order");
    let (status, later) = place(&app, &token, course.share, order.clone()).await;
    assert_eq!(status, StatusCode::OK, "{later}");
    assert_eq!(later["replayed"], true);
    assert_eq!(later["issued"][0]["code"], Value::Null, "{later}");
    assert_eq!(later["issued"][0]["id"], placed["issued"][0]["id"]);
    assert!(
        !later
            .to_string()
            .contains(placed["issued"][0]["code"].as_str().expect("code"))
    );

    let reader = create_token(&app, &admin, &["read"]).await;
    let (status, _) = place(
        &app,
        &reader,
        course.share,
        json!({ "source": "shop", "order_id": "o-2", "email": "c@example.com" }),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a read token places nothing");
    let (status, read) =
        as_token(&app, &reader, Method::GET, "/api/v1/orders/shop/o-1", None).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["quantity"], 2);
    assert_eq!(written(&app).await.orders, 1);
}
