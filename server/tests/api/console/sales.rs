//! The console's sales page (`/admin/t/{tenant}/s/{share}/sales`): the
//! share's refund policy set from a form, and each order with what became
//! of its codes and what its refund did (seats taken back, seats waiting
//! for the grace's end, orders only flagged), read back against the
//! database; a bad policy is refused field by field and changes nothing.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app};
use crate::support::console::{form, page};
use crate::support::course::{self, Admin, admin, enter_code, learners, open};
use crate::support::tokens::{as_token, create_token};

/// Places an order of `quantity` codes the caller hands out itself; the
/// codes' plain texts.
async fn order(
    app: &TestApp,
    token: &str,
    share: Uuid,
    order_id: &str,
    quantity: usize,
) -> Vec<String> {
    let (status, placed) = as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/shares/{share}/orders"),
        Some(json!({ "source": "stripe", "order_id": order_id, "email": format!("{order_id}@example.com"),
                     "quantity": quantity, "mail": false, "addressed": false })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    placed["issued"]
        .as_array()
        .expect("issued")
        .iter()
        .map(|c| c["code"].as_str().expect("code").to_owned())
        .collect()
}

async fn refund(app: &TestApp, token: &str, order_id: &str, kind: &str) {
    let (status, body) = as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/orders/stripe/{order_id}/refund"),
        Some(json!({ "kind": kind, "reason": "asked by the buyer" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Sets the share's policy through the console's form (as JSON: no
/// `accept: text/html`).
async fn set_policy(
    app: &TestApp,
    admin: &Admin,
    share: Uuid,
    fields: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut form = vec![
        ("tenant_id", admin.tenant.to_string()),
        ("share_id", share.to_string()),
    ];
    form.extend(fields.iter().map(|(k, v)| (*k, (*v).to_owned())));
    let response = admin
        .client
        .post(format!("{}/api/admin/sales/refund-policy", app.address))
        .form(&form)
        .send()
        .await
        .expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn sales(
    app: &TestApp,
    admin: &Admin,
    share: Uuid,
    query: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut args = vec![
        ("tenant_id", admin.tenant.to_string()),
        ("share_id", share.to_string()),
    ];
    args.extend(query.iter().map(|(k, v)| (*k, (*v).to_owned())));
    let response = admin
        .client
        .get(format!("{}/api/admin/sales", app.address))
        .query(&args)
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.json().await.expect("json"))
}

async fn stored_policy(app: &TestApp, share: Uuid) -> Option<(String, i32)> {
    sqlx::query_as("SELECT action, bound_grace_hours FROM refund_policies WHERE share_id = $1")
        .bind(share)
        .fetch_optional(&app.pool)
        .await
        .expect("policy")
}

fn refs(view: &Value) -> Vec<&str> {
    view["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .map(|o| o["order_ref"].as_str().expect("order_ref"))
        .collect()
}

fn order_of<'a>(view: &'a Value, order_ref: &str) -> &'a Value {
    view["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .find(|o| o["order_ref"] == order_ref)
        .unwrap_or_else(|| panic!("{order_ref} in {view}"))
}

#[sqlx::test(migrations = "../migrations")]
async fn the_sales_page_shows_what_each_refund_did_to_its_orders_codes(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({ "quota": null })).await;
    let token = create_token(&app, &admin, &["read", "write"]).await;

    // No policy set: the page says what a refund does by default.
    let (status, view) = sales(&app, &admin, course.share, &[]).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(
        (
            view["policy_action"].clone(),
            view["policy_grace_hours"].clone()
        ),
        (json!("revoke"), json!(0))
    );
    assert_eq!(view["orders"], json!([]));

    let (status, body) = set_policy(
        &app,
        &admin,
        course.share,
        &[("action", "revoke"), ("bound_grace_hours", "48")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        stored_policy(&app, course.share).await,
        Some(("revoke".into(), 48))
    );

    let kept = order(&app, &token, course.share, "cs_kept", 2).await;
    let waiting = order(&app, &token, course.share, "cs_waiting", 2).await;
    order(&app, &token, course.share, "cs_flagged", 1).await;
    // One learner holds a code of the order refunded under the grace, and
    // one holds a code of the order that is never refunded.
    let mut people = learners(&app, 2).await;
    for ((_, client), code) in people.iter_mut().zip([&waiting[0], &kept[0]]) {
        assert!(
            enter_code(&app, client, &course.slug, code)
                .await
                .status()
                .is_success()
        );
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    refund(&app, &token, "cs_waiting", "refund").await;
    // A code of the kept order lapsed unused (its own date passed).
    sqlx::query(
        "UPDATE auth_codes SET expires_at = now() - interval '1 minute'
         WHERE id = (SELECT c.id FROM auth_codes c JOIN orders o ON o.batch_id = c.batch_id
                     WHERE o.order_ref = 'cs_kept' AND c.bound_principal IS NULL)",
    )
    .execute(&app.pool)
    .await
    .expect("a lapsed code");
    // The policy changes: the next refund only flags, the earlier keeps
    // what was done to it.
    let (status, body) = set_policy(
        &app,
        &admin,
        course.share,
        &[("action", "flag"), ("bound_grace_hours", "48")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        stored_policy(&app, course.share).await,
        Some(("flag".into(), 0))
    );
    refund(&app, &token, "cs_flagged", "chargeback").await;

    let (status, view) = sales(&app, &admin, course.share, &[]).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(
        (
            view["policy_action"].clone(),
            view["policy_grace_hours"].clone()
        ),
        (json!("flag"), json!(0))
    );
    assert_eq!(
        view["totals"],
        json!({ "orders": 3, "seats": 5, "refunded": 2, "flagged": 1, "grace_pending": 1 })
    );
    // Newest first.
    assert_eq!(refs(&view), ["cs_flagged", "cs_waiting", "cs_kept"]);
    let counts = |o: &Value| {
        (
            o["unused"].as_i64().expect("unused"),
            o["bound"].as_i64().expect("bound"),
            o["revoked"].as_i64().expect("revoked"),
            o["expired"].as_i64().expect("expired"),
        )
    };
    let kept_row = order_of(&view, "cs_kept");
    assert_eq!(counts(kept_row), (0, 1, 0, 1), "one in use, one lapsed");
    assert_eq!(kept_row["refund"], Value::Null);
    assert_eq!(kept_row["buyer_email"], "cs_kept@example.com");
    let waiting_row = order_of(&view, "cs_waiting");
    assert_eq!(
        counts(waiting_row),
        (0, 1, 1, 0),
        "the unused one revoked at once"
    );
    assert_eq!(waiting_row["refund"]["kind"], "refund");
    assert_eq!(waiting_row["refund"]["action"], "revoke");
    assert_eq!(waiting_row["refund"]["reason"], "asked by the buyer");
    assert!(
        waiting_row["refund"]["revoke_bound_at"].is_string(),
        "{waiting_row}"
    );
    assert_eq!(waiting_row["refund"]["bound_revoked_at"], Value::Null);
    let flagged_row = order_of(&view, "cs_flagged");
    assert_eq!(counts(flagged_row), (1, 0, 0, 0), "nothing revoked");
    assert_eq!(flagged_row["refund"]["kind"], "chargeback");
    assert_eq!(flagged_row["refund"]["action"], "flag");
    // What the database says, order by order.
    let db: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT o.order_ref,
                count(*) FILTER (WHERE c.revoked_at IS NOT NULL),
                count(*) FILTER (WHERE c.bound_principal IS NOT NULL AND c.revoked_at IS NULL)
         FROM orders o JOIN auth_codes c ON c.batch_id = o.batch_id
         GROUP BY o.order_ref ORDER BY o.order_ref",
    )
    .fetch_all(&app.pool)
    .await
    .expect("codes");
    assert_eq!(
        db,
        [
            ("cs_flagged".to_owned(), 0, 0),
            ("cs_kept".to_owned(), 0, 1),
            ("cs_waiting".to_owned(), 1, 1)
        ]
    );

    // The filters.
    let (_, refunded) = sales(&app, &admin, course.share, &[("shown", "refunded")]).await;
    assert_eq!(refs(&refunded), ["cs_flagged", "cs_waiting"]);
    let (_, flagged) = sales(&app, &admin, course.share, &[("shown", "flagged")]).await;
    assert_eq!(refs(&flagged), ["cs_flagged"]);
    let (status, body) = sales(&app, &admin, course.share, &[("shown", "revoked")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["Invalid"]["field"], "shown");

    // The page itself, server-rendered.
    let (status, html) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}/s/{}/sales", admin.tenant, course.share),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    for marker in [
        r#"data-refund="none""#,
        r#"data-refund="revoke""#,
        r#"data-refund="flag""#,
        "cs_waiting@example.com",
        "Charged back",
        "asked by the buyer",
        ", 1 expired",
    ] {
        assert!(html.contains(marker), "{marker} missing from the page");
    }
    assert!(
        html.contains(&format!(
            "/admin/t/{}/s/{}/codes?batch=",
            admin.tenant, course.share
        )),
        "each order links to its codes"
    );
    // The policy form shows the policy in force.
    assert!(
        html.contains(r#"value="flag" checked"#),
        "flag is the choice shown"
    );
    // The share's page links here.
    let (_, share_page) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}/s/{}", admin.tenant, course.share),
    )
    .await;
    assert!(share_page.contains(&format!(
        "/admin/t/{}/s/{}/sales",
        admin.tenant, course.share
    )));
}

#[sqlx::test(migrations = "../migrations")]
async fn the_sales_page_pages_back_through_every_order_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({ "quota": null })).await;
    let token = create_token(&app, &admin, &["read", "write"]).await;
    for n in 0..50 {
        order(&app, &token, course.share, &format!("cs_{n:02}"), 1).await;
    }
    // Exactly a page: no (empty) next page offered.
    let (_, view) = sales(&app, &admin, course.share, &[]).await;
    assert_eq!(refs(&view).len(), 50);
    assert_eq!(view["next_before"], Value::Null);
    for n in 50..52 {
        order(&app, &token, course.share, &format!("cs_{n:02}"), 1).await;
    }
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    let mut pages = 0;
    loop {
        let query: Vec<(&str, &str)> = before
            .as_deref()
            .map(|b| ("before", b))
            .into_iter()
            .collect();
        let (status, view) = sales(&app, &admin, course.share, &query).await;
        assert_eq!(status, StatusCode::OK, "{view}");
        pages += 1;
        seen.extend(refs(&view).into_iter().map(str::to_owned));
        match view["next_before"].as_str() {
            Some(next) => before = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 5, "the pages end");
    }
    assert_eq!(pages, 2);
    let expected: Vec<String> = (0..52).rev().map(|n| format!("cs_{n:02}")).collect();
    assert_eq!(seen, expected, "newest first, each once");
    assert_eq!(seen.len(), 52);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_bad_refund_policy_from_the_console_is_refused_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({ "quota": null })).await;
    let (status, body) = set_policy(
        &app,
        &admin,
        course.share,
        &[("action", "revoke"), ("bound_grace_hours", "24")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let audited = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM audit_log WHERE action = 'share.refund_policy_set'",
        )
        .fetch_one(&app.pool)
        .await
        .expect("audit")
    };
    assert_eq!(audited().await, 1);
    for (fields, field) in [
        (
            &[("action", "revoke"), ("bound_grace_hours", "2161")][..],
            "bound_grace_hours",
        ),
        (
            &[("action", "revoke"), ("bound_grace_hours", "-1")][..],
            "bound_grace_hours",
        ),
        (
            &[("action", "revoke"), ("bound_grace_hours", "a day")][..],
            "bound_grace_hours",
        ),
        (
            &[("action", "revoke"), ("bound_grace_hours", "99999999999")][..],
            "bound_grace_hours",
        ),
        (
            &[("action", "refund"), ("bound_grace_hours", "0")][..],
            "action",
        ),
        (&[("action", ""), ("bound_grace_hours", "0")][..], "action"),
    ] {
        let (status, body) = set_policy(&app, &admin, course.share, fields).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{fields:?}: {body}"
        );
        assert_eq!(body["Invalid"]["field"], field, "{fields:?}: {body}");
        assert!(
            body["Invalid"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
    assert_eq!(
        stored_policy(&app, course.share).await,
        Some(("revoke".into(), 24))
    );
    assert_eq!(audited().await, 1, "nothing refused was audited");
    // An empty grace with revoke is "at once".
    let (status, body) = set_policy(
        &app,
        &admin,
        course.share,
        &[("action", "revoke"), ("bound_grace_hours", "")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        stored_policy(&app, course.share).await,
        Some(("revoke".into(), 0))
    );
    // Without JavaScript the form posts and is sent back to the page.
    let here = format!("/admin/t/{}/s/{}/sales", admin.tenant, course.share);
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let response = form(
        &app.address,
        &admin.client,
        &here,
        "/api/admin/sales/refund-policy",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("action", "revoke"),
            ("bound_grace_hours", "72"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    assert!(
        response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .is_some_and(|l| l.trim_end_matches('?').ends_with(&here)),
        "{:?}",
        response.headers()
    );
    assert_eq!(
        stored_policy(&app, course.share).await,
        Some(("revoke".into(), 72))
    );
    let (_, html) = page(&app.address, &admin.client, &here).await;
    assert!(
        html.contains(r#"value="72""#),
        "the grace shown is the one saved"
    );
    // Another tenant's share is not this admin's to set.
    let other = admin_of_another_tenant(&app).await;
    let (status, _) = set_policy(&app, &admin, other, &[("action", "flag")]).await;
    assert!(
        status == StatusCode::FORBIDDEN || status == StatusCode::NOT_FOUND,
        "{status}"
    );
    assert_eq!(stored_policy(&app, other).await, None);
}

/// A share of a tenant the test's admin is no member of.
async fn admin_of_another_tenant(app: &TestApp) -> Uuid {
    let stranger = admin(app).await;
    course::course(app, &stranger, json!({ "quota": null }))
        .await
        .share
}
