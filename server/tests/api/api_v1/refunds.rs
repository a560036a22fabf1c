//! Refunds through the JSON API (`POST
//! /api/v1/orders/{source}/{order_id}/refund`, `GET`/`PUT
//! /api/v1/shares/{id}/refund-policy`), against real PostgreSQL, Redis and
//! SMTP: a refund applies the share's policy once (unused codes revoked
//! at once, bound ones after the grace or at once, or only a flag), the
//! learner who loses a seat is told by mail, and the audit log and the
//! outbox say what happened. Every answer is checked against the database.

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::{Duration, OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

use crate::support::app::{TestApp, new_client};
use crate::support::course::{
    self, Admin, admin, assert_invariants, enter_code, error_of, learners, open, open_only,
};
use crate::support::mail::{MAIL_WAIT, sign_up, spawn_app_with_mail};
use crate::support::tokens::{as_token, create_token};

/// A course (no quota) and a token that may write.
async fn shop(app: &TestApp) -> (Admin, course::Course, String) {
    let admin = admin(app).await;
    let course = course::course(app, &admin, json!({ "quota": null })).await;
    let token = create_token(app, &admin, &["read", "write"]).await;
    (admin, course, token)
}

/// Places an order the caller hands out itself; its codes and their ids.
async fn order(
    app: &TestApp,
    token: &str,
    share: Uuid,
    order_id: &str,
    quantity: usize,
) -> Vec<(Uuid, String)> {
    let (status, placed) = as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/shares/{share}/orders"),
        Some(
            json!({ "source": "stripe", "order_id": order_id, "email": "buyer@example.com",
                     "quantity": quantity, "mail": false, "addressed": false }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    placed["issued"]
        .as_array()
        .expect("issued")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().and_then(|id| id.parse().ok()).expect("id"),
                c["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect()
}

async fn refund(app: &TestApp, token: &str, order_id: &str, body: Value) -> (StatusCode, Value) {
    as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/orders/stripe/{order_id}/refund"),
        Some(body),
    )
    .await
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn revoked_ids(app: &TestApp, codes: &[(Uuid, String)]) -> Vec<Uuid> {
    let ids: Vec<Uuid> = codes.iter().map(|(id, _)| *id).collect();
    sqlx::query_scalar(
        "SELECT id FROM auth_codes WHERE id = ANY($1) AND revoked_at IS NOT NULL ORDER BY id",
    )
    .bind(&ids)
    .fetch_all(&app.pool)
    .await
    .expect("revoked codes")
}

fn at(value: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(value.as_str().expect("a date"), &Rfc3339).expect("RFC 3339")
}

fn ids(value: &Value) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = value
        .as_array()
        .expect("ids")
        .iter()
        .map(|id| id.as_str().and_then(|id| id.parse().ok()).expect("an id"))
        .collect();
    ids.sort_unstable();
    ids
}

/// Grants of `codes` still live: what the content is served under (a
/// stream already open may go on until the server next checks its grant,
/// `settlement.grant_recheck_secs`).
async fn live_grants(app: &TestApp, codes: &[(Uuid, String)]) -> i64 {
    let ids: Vec<Uuid> = codes.iter().map(|(id, _)| *id).collect();
    sqlx::query_scalar(
        "SELECT count(*) FROM access_records WHERE code_id = ANY($1) AND expires_at > now()",
    )
    .bind(&ids)
    .fetch_one(&app.pool)
    .await
    .expect("live grants")
}

/// Sweeps as of `now`; how many orders' grace ends it finished (each it
/// tried, it finished).
async fn sweep(app: &TestApp, now: OffsetDateTime) -> usize {
    let swept = engine::refunds::revoke_due(&app.pool, Some(now), 10)
        .await
        .expect("the sweep");
    assert_eq!(swept.tried, swept.finished, "{swept:?}");
    swept.finished
}

/// A share whose policy gives bound codes 48 hours: the refund revokes
/// the two unused codes of a three-code order at once (no one can take
/// them), the bound learner keeps the course until the grace ends, then
/// loses it and is told. A retry (a chargeback after the refund) changes
/// nothing; the audit log and the outbox say each step once.
#[sqlx::test(migrations = "../migrations")]
async fn a_refund_revokes_unused_codes_at_once_and_a_bound_one_after_its_grace(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let policy_path = format!("/api/v1/shares/{}/refund-policy", course.share);
    let (status, policy) = as_token(&app, &token, Method::GET, &policy_path, None).await;
    assert_eq!(status, StatusCode::OK, "{policy}");
    assert_eq!(
        policy,
        json!({ "share_id": course.share, "action": "revoke", "bound_grace_hours": 0 }),
        "a share with none set revokes at once"
    );
    let (status, policy) = as_token(
        &app,
        &token,
        Method::PUT,
        &policy_path,
        Some(json!({ "action": "revoke", "bound_grace_hours": 48 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{policy}");
    assert_eq!(policy["bound_grace_hours"], 48);

    let codes = order(&app, &token, course.share, "cs_refund_1", 3).await;
    let mut people = learners(&app, 2).await;
    let (bob, bob_client) = people.pop().expect("bob");
    let (ann, ann_client) = people.pop().expect("ann");
    let entered = enter_code(&app, &ann_client, &course.slug, &codes[0].1).await;
    assert!(entered.status().is_success(), "{}", entered.status());
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);

    let (status, refunded) = refund(
        &app,
        &token,
        "cs_refund_1",
        json!({ "reason": "the customer asked" }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{refunded}");
    assert_eq!(refunded["replayed"], false);
    let unused = vec![codes[1].0, codes[2].0];
    let mut expected = unused.clone();
    expected.sort_unstable();
    assert_eq!(ids(&refunded["revoked"]), expected);
    assert_eq!(revoked_ids(&app, &codes).await, expected, "in the database");
    let refund_body = &refunded["refund"];
    assert_eq!(
        (
            refund_body["kind"].clone(),
            refund_body["action"].clone(),
            refund_body["reason"].clone()
        ),
        (
            json!("refund"),
            json!("revoke"),
            json!("the customer asked")
        )
    );
    let due = at(&refund_body["revoke_bound_at"]);
    assert_eq!(due - at(&refund_body["refunded_at"]), Duration::hours(48));
    assert_eq!(refund_body["bound_revoked_at"], Value::Null);

    // An unused seat of the refunded order can no longer be taken.
    let (status, error) =
        error_of(enter_code(&app, &bob_client, &course.slug, &codes[1].1).await).await;
    assert_eq!((status, error.as_str()), (409, "code_revoked"));
    let bobs: i64 =
        sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE bound_principal = $1")
            .bind(bob)
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(bobs, 0);
    // Within the grace, the learner keeps the course.
    course::end_grants(&app, course.share).await;
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);

    // The shop's retry, then a chargeback of the same order: one refund.
    for kind in ["refund", "chargeback", "chargeback"] {
        let (status, again) = refund(&app, &token, "cs_refund_1", json!({ "kind": kind })).await;
        assert_eq!(status, StatusCode::OK, "{kind}: {again}");
        assert_eq!(again["replayed"], true);
        assert_eq!(again["revoked"], json!([]));
        assert_eq!(again["refund"]["kind"], "refund", "the first one stands");
        assert_eq!(
            again["refund"]["revoke_bound_at"],
            refund_body["revoke_bound_at"]
        );
    }
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action = 'order.refunded'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action = 'order.refund_repeated'
              AND details->>'kind' = 'chargeback'"
        )
        .await,
        1,
        "the chargeback after the refund is the shop's news, once"
    );
    let event: Value =
        sqlx::query_scalar("SELECT payload FROM outbox WHERE event_type = 'order.refunded'")
            .fetch_one(&app.pool)
            .await
            .expect("one order.refunded");
    assert_eq!(ids(&event["revoked"]), expected);
    assert_eq!(ids(&event["bound_pending"]), vec![codes[0].0]);
    assert_eq!(event["order_ref"], "cs_refund_1");

    // The sweep before the grace's end does nothing; after it, the bound
    // code goes, once.
    assert_eq!(sweep(&app, due - Duration::minutes(1)).await, 0);
    assert_eq!(revoked_ids(&app, &codes).await, expected);
    assert_eq!(sweep(&app, due + Duration::minutes(1)).await, 1);
    assert_eq!(
        sweep(&app, due + Duration::minutes(2)).await,
        0,
        "done once"
    );
    assert_eq!(revoked_ids(&app, &codes).await.len(), 3);
    let (status, error) = error_of(open_only(&app, &ann_client, &course, None).await).await;
    assert_eq!((status, error.as_str()), (403, "code_required"));
    assert_eq!(
        live_grants(&app, &codes).await,
        0,
        "the grant she held ended"
    );
    sink.wait_for(
        &format!("learner-{ann}@example.com"),
        "was revoked",
        MAIL_WAIT,
    )
    .await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action = 'order.refund_grace_ended'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'code.revoked'"
        )
        .await,
        1,
        "the learner who lost the seat: one event"
    );
    let (status, read) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/stripe/cs_refund_1",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["refund"]["revoke_bound_at"], Value::Null);
    assert!(at(&read["refund"]["bound_revoked_at"]) > at(&read["refund"]["refunded_at"]));
    assert!(
        read["codes"]
            .as_array()
            .expect("codes")
            .iter()
            .all(|c| c["state"] == "revoked"),
        "{read}"
    );
    // Released at the grace's end: she may buy the course again.
    let again = order(&app, &token, course.share, "cs_refund_again", 1).await;
    assert!(
        enter_code(&app, &ann_client, &course.slug, &again[0].1)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    assert_invariants(&app, "after the refund").await;
}

/// With no policy set, a refund takes the buyer's seat at once: the
/// addressed code they bound is revoked, their grant ends, they are told
/// by mail, and `code.revoked` and `order.refunded` are emitted.
#[sqlx::test(migrations = "../migrations")]
async fn a_refund_with_no_policy_takes_the_bound_seat_at_once(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, placed) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/shares/{}/orders", course.share),
        Some(json!({ "source": "stripe", "order_id": "cs_one", "email": "buyer@example.com" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    let code = placed["issued"][0]["code"]
        .as_str()
        .expect("code")
        .to_owned();
    let buyer = new_client();
    sign_up(&app, &buyer, "buyer@example.com").await;
    assert!(
        enter_code(&app, &buyer, &course.slug, &code)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &buyer, &course, None).await.status(), 200);

    let (status, refunded) = refund(&app, &token, "cs_one", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{refunded}");
    assert_eq!(refunded["revoked"], json!([placed["issued"][0]["id"]]));
    assert_eq!(refunded["refund"]["reason"], Value::Null);
    assert_eq!(
        refunded["refund"]["bound_revoked_at"],
        refunded["refund"]["refunded_at"]
    );
    assert_eq!(refunded["codes"][0]["state"], "revoked");
    let (status, error) = error_of(open_only(&app, &buyer, &course, None).await).await;
    assert_eq!((status, error.as_str()), (403, "code_required"));
    let code_id: Uuid = placed["issued"][0]["id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .expect("its id");
    assert_eq!(
        live_grants(&app, &[(code_id, code.clone())]).await,
        0,
        "the buyer's grant ended"
    );
    sink.wait_for("buyer@example.com", "was revoked", MAIL_WAIT)
        .await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'code.revoked'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'order.refunded'"
        )
        .await,
        1
    );
    assert_eq!(
        sweep(&app, OffsetDateTime::now_utc() + Duration::days(400)).await,
        0
    );
    assert_invariants(&app, "after the refund").await;
}

/// A share that only flags: the refund is recorded and announced, and
/// no code changes (the creator decides); no sweep ever revokes them.
#[sqlx::test(migrations = "../migrations")]
async fn a_flagging_policy_records_the_refund_and_revokes_nothing(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, policy) = as_token(
        &app,
        &token,
        Method::PUT,
        &format!("/api/v1/shares/{}/refund-policy", course.share),
        Some(json!({ "action": "flag" })),
    )
    .await;
    assert_eq!(
        (status, policy["action"].clone()),
        (StatusCode::OK, json!("flag"))
    );
    let codes = order(&app, &token, course.share, "cs_flag", 2).await;
    let mut people = learners(&app, 2).await;
    let (_, ann_client) = people.pop().expect("ann");
    assert!(
        enter_code(&app, &ann_client, &course.slug, &codes[0].1)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);

    let (status, refunded) = refund(&app, &token, "cs_flag", json!({ "kind": "chargeback" })).await;
    assert_eq!(status, StatusCode::CREATED, "{refunded}");
    assert_eq!(refunded["revoked"], json!([]));
    assert_eq!(
        (
            refunded["refund"]["kind"].clone(),
            refunded["refund"]["action"].clone()
        ),
        (json!("chargeback"), json!("flag"))
    );
    assert_eq!(refunded["refund"]["revoke_bound_at"], Value::Null);
    assert!(revoked_ids(&app, &codes).await.is_empty());
    assert_eq!(
        sweep(&app, OffsetDateTime::now_utc() + Duration::days(400)).await,
        0
    );
    assert!(revoked_ids(&app, &codes).await.is_empty());
    course::end_grants(&app, course.share).await;
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    let event: Value =
        sqlx::query_scalar("SELECT payload FROM outbox WHERE event_type = 'order.refunded'")
            .fetch_one(&app.pool)
            .await
            .expect("one order.refunded");
    assert_eq!(event["action"], "flag");
    assert_eq!(
        ids(&event["bound_kept"]),
        vec![codes[0].0],
        "kept, not pending"
    );
    assert_eq!(event.get("bound_pending"), None);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action = 'share.refund_policy_set'"
        )
        .await,
        1
    );
}

/// Twenty learners open their codes of one order while its refund runs,
/// and fifty deliveries of the refund race each other: one refund is
/// recorded, and afterwards every code of the order is revoked, no grant
/// of them is live, each learner who had bound one is told once, and no
/// opening is granted any more.
#[sqlx::test(migrations = "../migrations")]
async fn a_refund_racing_openings_and_itself_leaves_no_seat_live(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let codes = order(&app, &token, course.share, "cs_race", 20).await;
    let people = learners(&app, 20).await;
    let openings = join_all(people.iter().zip(&codes).map(|((_, client), (_, code))| {
        let (app, course) = (&app, &course);
        async move {
            let entered = enter_code(app, client, &course.slug, code).await;
            if entered.status().is_success() {
                open_only(app, client, course, None).await.status().as_u16()
            } else {
                entered.status().as_u16()
            }
        }
    }));
    let refunds = join_all((0..50).map(|_| refund(&app, &token, "cs_race", json!({}))));
    let (opened, refunded) = tokio::join!(openings, refunds);
    assert!(
        opened.iter().all(|s| [200, 409].contains(s)),
        "opened or refused: {opened:?}"
    );
    let created = refunded
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .count();
    let replayed = refunded
        .iter()
        .filter(|(s, body)| *s == StatusCode::OK && body["replayed"] == true)
        .count();
    assert_eq!((created, replayed), (1, 49));
    assert_eq!(revoked_ids(&app, &codes).await.len(), 20);
    assert_eq!(
        live_grants(&app, &codes).await,
        0,
        "no grant of a refunded seat is live"
    );
    // The refund unbinds what it revokes: who held a seat is in its audit
    // row, and no code of the order is bound any more.
    let code_ids: Vec<Uuid> = codes.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM auth_codes WHERE bound_principal IS NOT NULL"
        )
        .await,
        0
    );
    let audited: Value =
        sqlx::query_scalar("SELECT details FROM audit_log WHERE action = 'order.refunded'")
            .fetch_one(&app.pool)
            .await
            .expect("the refund's audit row");
    let holders = ids(&audited["learners"]);
    let bound = i64::try_from(holders.len()).expect("a count");
    let records: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT principal_id) FROM access_records WHERE code_id = ANY($1)",
    )
    .bind(&code_ids)
    .fetch_one(&app.pool)
    .await
    .expect("records");
    assert_eq!(
        records, bound,
        "every learner who opened was audited as a holder"
    );
    assert_eq!(
        bound,
        i64::try_from(opened.iter().filter(|s| **s == 200).count()).expect("a count"),
        "the learners who opened before the refund are those who lost a seat"
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM mail_outbox WHERE template = 'code_revoked'"
        )
        .await,
        bound,
        "each learner who had a seat is told, once"
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'code.revoked'"
        )
        .await,
        bound
    );
    for (learner, client) in &people {
        let answer = error_of(open_only(&app, client, &course, None).await).await;
        if holders.contains(learner) {
            assert_eq!(
                answer,
                (403, "code_required".to_owned()),
                "a seat taken back, and the learner released"
            );
        } else {
            // Refused before binding: the code they entered is revoked,
            // or (refused at entry) they hold none.
            assert!(
                answer == (409, "code_revoked".to_owned()) || answer.0 == 403,
                "nothing granted after the refund: {answer:?}"
            );
        }
    }
    assert_invariants(&app, "after the race").await;
}

/// Bad input is refused with its field named and changes nothing:
/// unknown kinds and policies, a reason too long, an unknown order, and
/// another tenant's order or share (answered as an unknown one).
#[sqlx::test(migrations = "../migrations")]
async fn a_bad_refund_or_policy_is_refused_and_changes_nothing(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let codes = order(&app, &token, course.share, "cs_bad", 2).await;
    let policy_path = format!("/api/v1/shares/{}/refund-policy", course.share);
    for (body, field) in [
        (json!({ "kind": "dispute" }), "kind"),
        (json!({ "kind": 3 }), ""),
        (json!({ "reason": "" }), "reason"),
        (json!({ "reason": "x".repeat(501) }), "reason"),
        (json!({ "reason": "a\u{0}b" }), "reason"),
        (json!({ "refund": true }), ""),
    ] {
        let (status, error) = refund(&app, &token, "cs_bad", body.clone()).await;
        assert!(
            status == StatusCode::UNPROCESSABLE_ENTITY || status == StatusCode::BAD_REQUEST,
            "{body}: {status} {error}"
        );
        if !field.is_empty() {
            assert_eq!(error["field"], field, "{body}: {error}");
        }
    }
    for (body, field) in [
        (json!({ "action": "keep" }), "action"),
        (
            json!({ "action": "flag", "bound_grace_hours": 1 }),
            "bound_grace_hours",
        ),
        (
            json!({ "action": "revoke", "bound_grace_hours": 2161 }),
            "bound_grace_hours",
        ),
        (
            json!({ "action": "revoke", "bound_grace_hours": -1 }),
            "bound_grace_hours",
        ),
    ] {
        let (status, error) =
            as_token(&app, &token, Method::PUT, &policy_path, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {error}");
        assert_eq!(error["field"], field, "{body}: {error}");
    }
    let (status, _) = refund(&app, &token, "no-such-order", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "an unknown order");
    // A read-only token may read the policy, not change it or refund.
    let (other_admin, other_course, other_token) = shop(&app).await;
    let reader = create_token(&app, &other_admin, &["read"]).await;
    let (status, _) = as_token(
        &app,
        &reader,
        Method::GET,
        &format!("/api/v1/shares/{}/refund-policy", other_course.share),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_token(
        &app,
        &reader,
        Method::PUT,
        &format!("/api/v1/shares/{}/refund-policy", other_course.share),
        Some(json!({ "action": "flag" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Another tenant's admin: neither this order nor this share.
    let (status, _) = refund(&app, &other_token, "cs_bad", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another tenant's order");
    let (status, _) = as_token(
        &app,
        &other_token,
        Method::PUT,
        &policy_path,
        Some(json!({ "action": "flag" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another tenant's share");

    assert!(revoked_ids(&app, &codes).await.is_empty());
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM orders WHERE refunded_at IS NOT NULL"
        )
        .await,
        0
    );
    assert_eq!(count(&app, "SELECT count(*) FROM refund_policies").await, 0);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action IN ('order.refunded', 'share.refund_policy_set')"
        )
        .await,
        0
    );
}

/// During a grace, the seats a refund took back stay taken whatever the
/// team does at the same time: replacements of the order's unused codes
/// racing the refund (each either runs first, and its new code is revoked
/// with the rest, or finds the code revoked), and an unbind of the bound
/// code afterwards, asked without revoking, revokes it anyway.
#[sqlx::test(migrations = "../migrations")]
async fn a_refunded_seat_stays_taken_whatever_the_team_does_meanwhile(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, _) = as_token(
        &app,
        &token,
        Method::PUT,
        &format!("/api/v1/shares/{}/refund-policy", course.share),
        Some(json!({ "action": "revoke", "bound_grace_hours": 24 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let codes = order(&app, &token, course.share, "cs_team", 9).await;
    let (ann, ann_client) = learners(&app, 1).await.remove(0);
    assert!(
        enter_code(&app, &ann_client, &course.slug, &codes[0].1)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);

    let replacements = join_all(codes[1..].iter().map(|(id, _)| {
        let (app, token) = (&app, &token);
        async move {
            let path = format!("/api/v1/codes/{id}/replace");
            as_token(app, token, Method::POST, &path, None).await
        }
    }));
    let (replaced, (status, refunded)) =
        tokio::join!(replacements, refund(&app, &token, "cs_team", json!({})));
    assert_eq!(status, StatusCode::CREATED, "{refunded}");
    for (status, body) in &replaced {
        assert!(
            status.is_success() || body["code"] == "code_not_replaceable",
            "replaced first, or refused: {status} {body}"
        );
    }
    let batch: Uuid = refunded["batch_id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .expect("batch");
    let free = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM auth_codes
             WHERE batch_id = $1 AND revoked_at IS NULL AND bound_principal IS NULL",
        )
        .bind(batch)
        .fetch_one(&app.pool)
        .await
        .expect("free codes")
    };
    assert_eq!(free().await, 0, "no seat of the refunded order is free");

    // The bound code unbound during the grace, without asking to revoke.
    let (status, unbound) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/codes/{}/unbind", codes[0].0),
        Some(json!({ "reason": "changed account" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{unbound}");
    assert_eq!(unbound["state"], "revoked", "{unbound}");
    let (details, events): (Value, i64) = sqlx::query_as(
        "SELECT (SELECT details FROM audit_log WHERE action = 'code.unbound'),
                (SELECT count(*) FROM outbox WHERE event_type = 'code.revoked'
                  AND payload->>'code_id' = $1::text)",
    )
    .bind(codes[0].0)
    .fetch_one(&app.pool)
    .await
    .expect("the unbind's record");
    assert_eq!(
        (
            details["revoke_requested"].clone(),
            details["revoked_by_refund"].clone()
        ),
        (json!(false), json!(true)),
        "{details}"
    );
    assert_eq!(events, 1, "code.revoked says the seat went");
    assert_eq!(free().await, 0);
    let anns: i64 =
        sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE bound_principal = $1")
            .bind(ann)
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(anns, 0);
    // The order still names whose seat its refund took back.
    let (status, read) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/stripe/cs_team",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    let taken: Vec<&Value> = read["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .filter(|c| c["id"] == json!(codes[0].0))
        .collect();
    assert_eq!(
        (
            taken[0]["holder"].clone(),
            taken[0]["former_holder"].clone()
        ),
        (Value::Null, json!(format!("learner-{ann}@example.com"))),
        "{read}"
    );
    assert_invariants(&app, "after the team's changes").await;
}

/// The same shop order id in two tenants is two orders: refunding it in
/// one leaves the other's untouched; a read-only token cannot refund.
#[sqlx::test(migrations = "../migrations")]
async fn a_refund_reaches_its_own_tenants_order_alone(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (admin_a, course_a, token_a) = shop(&app).await;
    let (_admin_b, course_b, token_b) = shop(&app).await;
    let codes_a = order(&app, &token_a, course_a.share, "cs_same", 2).await;
    let codes_b = order(&app, &token_b, course_b.share, "cs_same", 2).await;
    let reader = create_token(&app, &admin_a, &["read"]).await;
    let (status, _) = refund(&app, &reader, "cs_same", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a read-only token");
    assert!(revoked_ids(&app, &codes_a).await.is_empty());

    let (status, refunded) = refund(&app, &token_a, "cs_same", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{refunded}");
    assert_eq!(refunded["tenant_id"], json!(admin_a.tenant));
    assert_eq!(revoked_ids(&app, &codes_a).await.len(), 2);
    assert!(revoked_ids(&app, &codes_b).await.is_empty(), "B's order");
    let refunded_b: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orders WHERE share_id = $1 AND refunded_at IS NOT NULL",
    )
    .bind(course_b.share)
    .fetch_one(&app.pool)
    .await
    .expect("count");
    assert_eq!(refunded_b, 0);
    // B's shop retries its order: it is answered unrefunded; A's retry
    // of its own says it was refunded.
    let (status, again_b) = as_token(
        &app,
        &token_b,
        Method::POST,
        &format!("/api/v1/shares/{}/orders", course_b.share),
        Some(
            json!({ "source": "stripe", "order_id": "cs_same", "email": "buyer@example.com",
                     "quantity": 2, "mail": false, "addressed": false }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again_b}");
    assert_eq!(again_b["replayed"], true);
    assert_eq!(again_b.get("refund"), Some(&Value::Null), "{again_b}");
    let (status, again_a) = as_token(
        &app,
        &token_a,
        Method::POST,
        &format!("/api/v1/shares/{}/orders", course_a.share),
        Some(
            json!({ "source": "stripe", "order_id": "cs_same", "email": "buyer@example.com",
                     "quantity": 2, "mail": false, "addressed": false }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again_a}");
    assert_eq!(again_a["replayed"], true);
    assert_eq!(again_a["refund"]["kind"], "refund", "{again_a}");
}

/// An order whose grace end fails (here a trigger of this test's own
/// database refuses it) holds up no other: the sweep finishes the next
/// order, leaves the failing one's grace end as it was, and does not try
/// it again for ten minutes; then it does.
#[sqlx::test(migrations = "../migrations")]
async fn an_order_whose_grace_end_fails_holds_up_no_other(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let (status, _) = as_token(
        &app,
        &token,
        Method::PUT,
        &format!("/api/v1/shares/{}/refund-policy", course.share),
        Some(json!({ "action": "revoke", "bound_grace_hours": 1 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mut people = learners(&app, 2).await;
    let mut orders = Vec::new();
    for (i, (_, client)) in people.drain(..).enumerate() {
        let order_id = format!("cs_sweep_{i}");
        let codes = order(&app, &token, course.share, &order_id, 1).await;
        assert!(
            enter_code(&app, &client, &course.slug, &codes[0].1)
                .await
                .status()
                .is_success()
        );
        assert_eq!(open(&app, &client, &course, None).await.status(), 200);
        let (status, refunded) = refund(&app, &token, &order_id, json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{refunded}");
        let id: Uuid = refunded["id"]
            .as_str()
            .and_then(|id| id.parse().ok())
            .expect("id");
        orders.push((id, codes));
        // The first order's grace ends first: the sweep takes it first.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let failing = orders[0].0;
    sqlx::raw_sql(&format!(
        "CREATE FUNCTION refuse_grace_end() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
         CREATE TRIGGER refuse_grace_end BEFORE UPDATE ON orders FOR EACH ROW
           WHEN (NEW.id = '{failing}' AND NEW.bound_revoked_at IS NOT NULL)
           EXECUTE FUNCTION refuse_grace_end();"
    ))
    .execute(&app.pool)
    .await
    .expect("the test's trigger");
    let due_before: OffsetDateTime =
        sqlx::query_scalar("SELECT revoke_bound_at FROM orders WHERE id = $1")
            .bind(failing)
            .fetch_one(&app.pool)
            .await
            .expect("due");

    let later = OffsetDateTime::now_utc() + Duration::hours(2);
    let swept = engine::refunds::revoke_due(&app.pool, Some(later), 10)
        .await
        .expect("the sweep");
    assert_eq!(
        swept,
        engine::refunds::Swept {
            tried: 2,
            finished: 1
        }
    );
    assert!(
        revoked_ids(&app, &orders[0].1).await.is_empty(),
        "the failing one"
    );
    assert_eq!(
        revoked_ids(&app, &orders[1].1).await.len(),
        1,
        "the other one"
    );
    let (due_after, retry): (OffsetDateTime, OffsetDateTime) =
        sqlx::query_as("SELECT revoke_bound_at, revoke_retry_at FROM orders WHERE id = $1")
            .bind(failing)
            .fetch_one(&app.pool)
            .await
            .expect("the failing order");
    assert_eq!(due_after, due_before, "its grace's end stays as it was");
    // Ten minutes from the sweep's moment (stored to the microsecond).
    assert!(
        (retry - later - Duration::minutes(10)).abs() < Duration::milliseconds(1),
        "{retry} after {later}"
    );
    let swept = engine::refunds::revoke_due(&app.pool, Some(later + Duration::minutes(9)), 10)
        .await
        .expect("the sweep");
    assert_eq!(swept.tried, 0, "not tried again before its time");

    sqlx::query("DROP TRIGGER refuse_grace_end ON orders")
        .execute(&app.pool)
        .await
        .expect("trigger dropped");
    assert_eq!(sweep(&app, later + Duration::minutes(11)).await, 1);
    assert_eq!(revoked_ids(&app, &orders[0].1).await.len(), 1);
    assert_invariants(&app, "after the sweeps").await;
}

/// A refunded buyer who buys the course again gets it: the refund took
/// the seat back and released the learner with it, so the new order's
/// code binds to them like any first code. The old code stays revoked for
/// everyone, its former holder included, and the learner holds one live
/// code of the share, as ever.
#[sqlx::test(migrations = "../migrations")]
async fn a_refunded_buyer_who_buys_again_gets_the_course_again(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let first = order(&app, &token, course.share, "cs_first", 1).await;
    let buyer = new_client();
    sign_up(&app, &buyer, "buyer@example.com").await;
    assert!(
        enter_code(&app, &buyer, &course.slug, &first[0].1)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &buyer, &course, None).await.status(), 200);
    let (status, refunded) = refund(&app, &token, "cs_first", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{refunded}");
    let (status, error) = error_of(open_only(&app, &buyer, &course, None).await).await;
    assert_eq!(
        (status, error.as_str()),
        (403, "code_required"),
        "the refund ended the buyer's access"
    );

    let second = order(&app, &token, course.share, "cs_second", 1).await;
    let entered = enter_code(&app, &buyer, &course.slug, &second[0].1).await;
    let status = entered.status();
    assert!(
        status.is_success(),
        "{status}: {}",
        entered.text().await.unwrap_or_default()
    );
    assert_eq!(open(&app, &buyer, &course, None).await.status(), 200);
    let held: Vec<(Uuid, bool)> = sqlx::query_as(
        "SELECT c.id, c.revoked_at IS NOT NULL FROM auth_codes c
         JOIN accounts a ON a.id = c.bound_principal
         WHERE a.email = 'buyer@example.com' AND c.share_id = $1",
    )
    .bind(course.share)
    .fetch_all(&app.pool)
    .await
    .expect("the buyer's codes");
    assert_eq!(
        held,
        vec![(second[0].0, false)],
        "one live code, the new one"
    );
    assert_eq!(revoked_ids(&app, &first).await, vec![first[0].0]);
    // The refund's unbind is audited and announced like any unbind.
    let buyer_id: Uuid =
        sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'buyer@example.com'")
            .fetch_one(&app.pool)
            .await
            .expect("the buyer");
    let order_id = refunded["id"].clone();
    let (details, announced): (Value, Value) = sqlx::query_as(
        "SELECT (SELECT details FROM audit_log WHERE action = 'code.unbound' AND target_id = $1),
                (SELECT payload FROM outbox WHERE event_type = 'code.unbound')",
    )
    .bind(first[0].0)
    .fetch_one(&app.pool)
    .await
    .expect("the unbind's records");
    assert_eq!(
        (
            details["principal"].clone(),
            details["refunded_order"].clone()
        ),
        (json!(buyer_id), order_id),
        "{details}"
    );
    assert_eq!(
        (announced["code_id"].clone(), announced["principal"].clone()),
        (json!(first[0].0), json!(buyer_id)),
        "{announced}"
    );
    // The order still says whose seat it took back.
    let (status, read) = as_token(
        &app,
        &token,
        Method::GET,
        "/api/v1/orders/stripe/cs_first",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(
        (
            read["codes"][0]["state"].clone(),
            read["codes"][0]["holder"].clone(),
            read["codes"][0]["former_holder"].clone()
        ),
        (json!("revoked"), Value::Null, json!("buyer@example.com")),
        "{read}"
    );

    // The refunded code is spent for everyone, its former holder too.
    let other = new_client();
    sign_up(&app, &other, "other@example.com").await;
    for (who, client) in [("another learner", &other), ("the former holder", &buyer)] {
        let (status, error) =
            error_of(enter_code(&app, client, &course.slug, &first[0].1).await).await;
        assert_eq!(status, 409, "{who}");
        assert_eq!(error, "code_revoked", "{who}");
    }
    assert_invariants(&app, "after a refund and a second purchase").await;
}

/// A code an admin revoked for cause before the refund keeps its
/// binding: the refund releases only the seats it takes back itself, so
/// the learner is not let back in with another code (an admin's unbind
/// would release them), and the refund's audit row does not list them.
#[sqlx::test(migrations = "../migrations")]
async fn a_code_revoked_for_cause_before_the_refund_keeps_its_learner_out(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (_admin, course, token) = shop(&app).await;
    let first = order(&app, &token, course.share, "cs_cause", 1).await;
    let buyer = new_client();
    sign_up(&app, &buyer, "buyer@example.com").await;
    assert!(
        enter_code(&app, &buyer, &course.slug, &first[0].1)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &buyer, &course, None).await.status(), 200);
    let (status, body) = as_token(
        &app,
        &token,
        Method::POST,
        &format!("/api/v1/codes/{}/revoke", first[0].0),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, refunded) = refund(&app, &token, "cs_cause", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{refunded}");

    let audited: Value =
        sqlx::query_scalar("SELECT details FROM audit_log WHERE action = 'order.refunded'")
            .fetch_one(&app.pool)
            .await
            .expect("the refund's audit row");
    assert_eq!(audited["learners"], json!([]), "{audited}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM auth_codes WHERE bound_principal IS NOT NULL"
        )
        .await,
        1,
        "the revoked code keeps its learner"
    );
    let second = order(&app, &token, course.share, "cs_cause_again", 1).await;
    let (status, error) =
        error_of(enter_code(&app, &buyer, &course.slug, &second[0].1).await).await;
    assert_eq!((status, error.as_str()), (409, "already_has_access"));
    assert_invariants(&app, "after a revocation for cause and a refund").await;
}
