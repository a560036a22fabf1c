//! Transfer requests, the admins' side: a refused request moves nothing and
//! tells both accounts why; an approval refuses what changed since the
//! confirmation (an unbind, the receiving account's own first access, a
//! suspension, a replaced or expired link); only course managers decide,
//! and a read-only token only reads.

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::course::{
    Admin, admin, assert_invariants, enter_code, error_of, learners, open, post_json,
};
use crate::support::mail::{MAIL_WAIT, mail_settings};
use crate::support::transfers::{
    ask, bound_course, confirm, confirmed_request, count, decide, email_of, holder, token_for,
};

#[sqlx::test(migrations = "../migrations")]
async fn a_refused_request_moves_nothing_and_tells_both_why(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let owner = admin(&app).await;
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;

    // A refusal needs a reason.
    for body in [
        json!({}),
        json!({ "reason": "  " }),
        json!({ "reason": "x".repeat(501) }),
    ] {
        assert_eq!(
            error_of(decide(&app, &owner, id, "refuse", body).await).await,
            (422, "invalid_input".to_owned())
        );
    }
    let refused = decide(
        &app,
        &owner,
        id,
        "refuse",
        json!({ "reason": "we cannot verify this account" }),
    )
    .await;
    assert_eq!(refused.status(), 200);
    assert_eq!(holder(&app, codes[0].0).await, Some(ann));
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    for who in [email_of(ann), email_of(bob.0)] {
        let mail = sink.wait_for(&who, "was refused", MAIL_WAIT).await;
        assert!(
            mail.text.contains("we cannot verify this account"),
            "{}",
            mail.text
        );
    }
    // Decided for good.
    for verb in ["approve", "refuse"] {
        assert_eq!(
            error_of(decide(&app, &owner, id, verb, json!({ "reason": "again" })).await).await,
            (409, "transfer_not_open".to_owned())
        );
    }
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'code.transferred'"
        )
        .await,
        0
    );
    assert_invariants(&app, "after a refusal").await;
}

/// What can change between a confirmation and an approval, each answered
/// with its own refusal and nothing moved: the code unbound by an admin,
/// the receiving account's own first access, the receiving account
/// suspended; and links that no longer work: replaced, and expired.
#[sqlx::test(migrations = "../migrations")]
async fn an_approval_refuses_what_changed_since_the_confirmation(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;

    // The receiving account opened the course with a code of its own.
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 2).await;
    let bob = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;
    assert_eq!(
        enter_code(&app, &bob.1, &course.slug, &codes[1].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &bob.1, &course, None).await.status(), 200);
    assert_eq!(
        error_of(decide(&app, &owner, id, "approve", json!({})).await).await,
        (409, "target_has_code".to_owned())
    );
    assert_eq!(holder(&app, codes[0].0).await, Some(ann));

    // The receiving account is suspended by the tenant.
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let carol = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &carol)).await;
    sqlx::query(
        "INSERT INTO suspended_learners (tenant_id, account_id, suspended_by) VALUES ($1, $2, $2)",
    )
    .bind(owner.tenant)
    .bind(carol.0)
    .execute(&app.pool)
    .await
    .expect("suspend");
    assert_eq!(
        error_of(decide(&app, &owner, id, "approve", json!({})).await).await,
        (409, "target_blocked".to_owned())
    );
    assert_eq!(holder(&app, codes[0].0).await, Some(ann));

    // An admin unbound the code meanwhile.
    let (course, codes, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let dan = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &dan)).await;
    let unbound = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/codes/{}/unbind", codes[0].0),
        json!({ "reason": "asked by phone" }),
    )
    .await;
    assert_eq!(unbound.status(), 200);
    // The unbind withdrew the request.
    assert_eq!(
        error_of(decide(&app, &owner, id, "approve", json!({})).await).await,
        (409, "transfer_not_open".to_owned())
    );
    assert_eq!(holder(&app, codes[0].0).await, None);

    // Revoked by hand (no path that withdraws the request): the approval
    // still finds the code changed.
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let gus = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &gus)).await;
    sqlx::query("UPDATE auth_codes SET revoked_at = now() WHERE id = $1")
        .bind(codes[0].0)
        .execute(&app.pool)
        .await
        .expect("revoke by hand");
    assert_eq!(
        error_of(decide(&app, &owner, id, "approve", json!({})).await).await,
        (409, "code_changed".to_owned())
    );
    assert_eq!(holder(&app, codes[0].0).await, Some(ann));

    // A replaced link and an expired one stop working.
    let (course, _, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let (eve, fay) = {
        let mut people = learners(&app, 2).await;
        (people.remove(0), people.remove(0))
    };
    let first: Value = ask(
        &app,
        &ann_client,
        &course,
        json!({ "email": email_of(eve.0) }),
    )
    .await
    .json()
    .await
    .expect("json");
    let first: Uuid = first["id"].as_str().expect("id").parse().expect("uuid");
    let second: Value = ask(
        &app,
        &ann_client,
        &course,
        json!({ "email": email_of(fay.0) }),
    )
    .await
    .json()
    .await
    .expect("json");
    let second: Uuid = second["id"].as_str().expect("id").parse().expect("uuid");
    assert_eq!(
        error_of(confirm(&app, &eve.1, &token_for(first)).await).await,
        (410, "link_invalid".to_owned()),
        "replaced"
    );
    sqlx::query("UPDATE transfer_requests SET link_expires_at = now() WHERE id = $1")
        .bind(second)
        .execute(&app.pool)
        .await
        .expect("expire");
    assert_eq!(
        error_of(confirm(&app, &fay.1, &token_for(second)).await).await,
        (410, "link_invalid".to_owned()),
        "expired"
    );
    assert_invariants(&app, "after the refusals").await;
}

/// Deciding is the course managers' (owners and admins, and tokens with
/// `write`): a support member and a read-only token see the requests but
/// are refused a decision, and nothing changes.
#[sqlx::test(migrations = "../migrations")]
async fn only_course_managers_decide_and_a_read_token_only_reads(pool: PgPool) {
    use crate::support::tokens::{as_token, create_token};
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;

    let support = app
        .create_account("support-t@example.com", crate::support::course::PASSWORD)
        .await;
    sqlx::query(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'support')",
    )
    .bind(owner.tenant)
    .bind(support.0)
    .execute(&app.pool)
    .await
    .expect("member");
    let support_client = crate::support::app::new_client();
    app.login_as(
        &support_client,
        "support-t@example.com",
        crate::support::course::PASSWORD,
    )
    .await;
    let supporter = Admin {
        client: support_client,
        tenant: owner.tenant,
    };
    let listed = supporter
        .client
        .get(format!(
            "{}/api/v1/tenants/{}/transfers",
            app.address, owner.tenant
        ))
        .send()
        .await
        .expect("list");
    assert_eq!(listed.status(), 200, "support reads");
    for verb in ["approve", "refuse"] {
        assert_eq!(
            error_of(decide(&app, &supporter, id, verb, json!({ "reason": "no" })).await)
                .await
                .0,
            403,
            "support may not {verb}"
        );
    }
    let reader = create_token(&app, &owner, &["read"]).await;
    let path = |verb: &str| format!("/api/v1/tenants/{}/transfers/{id}/{verb}", owner.tenant);
    let (status, _) = as_token(
        &app,
        &reader,
        reqwest::Method::GET,
        &format!("/api/v1/tenants/{}/transfers", owner.tenant),
        None,
    )
    .await;
    assert_eq!(status, 200, "a read token reads");
    let (status, _) = as_token(
        &app,
        &reader,
        reqwest::Method::POST,
        &path("approve"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 403, "a read token may not approve");
    assert_eq!(holder(&app, codes[0].0).await, Some(ann), "nothing moved");

    let writer = create_token(&app, &owner, &["read", "write"]).await;
    let (status, body) = as_token(
        &app,
        &writer,
        reqwest::Method::POST,
        &path("approve"),
        Some(json!({ "reason": "checked by the shop" })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(holder(&app, codes[0].0).await, Some(bob.0));
    assert_invariants(&app, "after a token's approval").await;
}
