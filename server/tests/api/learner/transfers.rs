//! Moving a code to another account, the learner's side: the learner asks,
//! the receiving account confirms from the mailed link, and once an admin
//! approves the binding moves (both accounts told). Bad input, a NUL in a
//! note, a suspended learner and a code past its transfer limit change
//! nothing; the transfer page sends a signed-out visitor to sign in and back.

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::course::{
    admin, assert_invariants, course, enter_code, error_of, learners, load_settings, open,
    post_json,
};
use crate::support::mail::{MAIL_WAIT, mail_settings, token_of};
use crate::support::transfers::{
    ask, bound_course, confirm, confirmed_request, count, decide, email_of, holder, token_for,
};

#[sqlx::test(migrations = "../migrations")]
async fn a_learner_moves_their_code_to_another_account_they_control(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let owner = admin(&app).await;
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let code = codes[0].0;
    let bob = learners(&app, 1).await.remove(0);
    let before: (time::OffsetDateTime, i32) =
        sqlx::query_as("SELECT first_used_at, access_count FROM auth_codes WHERE id = $1")
            .bind(code)
            .fetch_one(&app.pool)
            .await
            .expect("before");

    // Ann asks; the link goes to Bob's address.
    let asked = ask(
        &app,
        &ann_client,
        &course,
        json!({ "email": email_of(bob.0).to_uppercase(), "note": " my work account " }),
    )
    .await;
    assert_eq!(asked.status(), 201);
    let asked: Value = asked.json().await.expect("json");
    assert_eq!(asked["status"], "awaiting_target");
    assert_eq!(asked["to_email"], email_of(bob.0), "stored lower case");
    assert_eq!(asked["note"], "my work account");
    assert_eq!(asked["code_id"], code.to_string());
    let id: Uuid = asked["id"].as_str().expect("id").parse().expect("uuid");
    let mail = sink
        .wait_for(&email_of(bob.0), "Confirm: move Rust 101", MAIL_WAIT)
        .await;
    assert!(mail.text.contains(&email_of(ann)), "{}", mail.text);
    let link = mail.link("/transfer?token=").expect("the link");
    let token = token_of(&link);
    assert_eq!(token, token_for(id));

    // Ann sees where it stands; nothing moved yet.
    let latest: Value = ann_client
        .get(format!("{}/api/v1/s/{}/transfer", app.address, course.slug))
        .send()
        .await
        .expect("latest")
        .json()
        .await
        .expect("json");
    assert_eq!(latest["id"], id.to_string());
    assert_eq!(holder(&app, code).await, Some(ann));

    // Bob confirms, once.
    let confirmed = confirm(&app, &bob.1, &token).await;
    assert_eq!(confirmed.status(), 200);
    let confirmed: Value = confirmed.json().await.expect("json");
    assert_eq!(confirmed["status"], "awaiting_admin");
    assert_eq!(confirmed["to_account"], bob.0.to_string());
    assert_eq!(
        error_of(confirm(&app, &bob.1, &token).await).await,
        (410, "link_invalid".to_owned())
    );
    assert_eq!(holder(&app, code).await, Some(ann), "not before an admin");

    // The admins see it waiting, and approve.
    let waiting: Value = owner
        .client
        .get(format!(
            "{}/api/v1/tenants/{}/transfers?status=awaiting_admin",
            app.address, owner.tenant
        ))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    let waiting = waiting.as_array().expect("array");
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0]["id"], id.to_string());
    let approved = decide(&app, &owner, id, "approve", json!({})).await;
    assert_eq!(approved.status(), 200);
    let approved: Value = approved.json().await.expect("json");
    assert_eq!(approved["status"], "approved");
    assert!(approved["decided_by_email"].is_string());

    // The binding moved whole: same first use and count, now Bob's.
    let after: (Option<Uuid>, time::OffsetDateTime, i32) = sqlx::query_as(
        "SELECT bound_principal, first_used_at, access_count FROM auth_codes WHERE id = $1",
    )
    .bind(code)
    .fetch_one(&app.pool)
    .await
    .expect("after");
    assert_eq!(after, (Some(bob.0), before.0, before.1));
    // Ann's live grant ended at once; she holds nothing now.
    let live = count(
        &app,
        &format!(
            "SELECT count(*) FROM access_records WHERE principal_id = '{ann}' AND expires_at > now()"
        ),
    )
    .await;
    assert_eq!(live, 0);
    assert_eq!(
        error_of(open(&app, &ann_client, &course, None).await).await,
        (403, "code_required".to_owned())
    );
    // Bob opens the course without spending a code.
    assert_eq!(open(&app, &bob.1, &course, None).await.status(), 200);
    assert_eq!(holder(&app, code).await, Some(bob.0));

    // Recorded: one event, one audit entry by the admin, one mail each.
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM outbox WHERE event_type = 'code.transferred'
                   AND payload->>'code_id' = '{code}' AND payload->>'to_principal' = '{}'
                   AND payload->>'from_principal' = '{ann}'",
                bob.0
            )
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM audit_log WHERE action = 'code.transferred'
                   AND target_id = '{code}' AND actor_id IS NOT NULL
                   AND actor_id NOT IN ('{ann}', '{}')",
                bob.0
            )
        )
        .await,
        1
    );
    let away = sink
        .wait_for(&email_of(ann), "moved to another account", MAIL_WAIT)
        .await;
    assert!(away.text.contains(&email_of(bob.0)), "{}", away.text);
    let here = sink
        .wait_for(&email_of(bob.0), "You now hold Rust 101", MAIL_WAIT)
        .await;
    assert!(here.text.contains(&email_of(ann)), "{}", here.text);
    assert_invariants(&app, "after a transfer").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn bad_requests_get_a_clear_error_and_change_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 2).await;
    let people = learners(&app, 3).await;
    let (bob, carol, dan) = (&people[0], &people[1], &people[2]);
    // Dan holds the course's second code.
    assert_eq!(
        enter_code(&app, &dan.1, &course.slug, &codes[1].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &dan.1, &course, None).await.status(), 200);
    let rows = || count(&app, "SELECT count(*) FROM transfer_requests");

    // Signed out; holding nothing; not an address; one's own address; a
    // note too long; malformed JSON.
    let signed_out = ask(
        &app,
        &crate::support::app::new_client(),
        &course,
        json!({ "email": "x@example.com" }),
    )
    .await;
    assert_eq!(error_of(signed_out).await.0, 401);
    assert_eq!(
        error_of(ask(&app, &bob.1, &course, json!({ "email": email_of(carol.0) })).await).await,
        (403, "no_code_held".to_owned())
    );
    for (body, code) in [
        (json!({ "email": "not an address" }), "invalid_input"),
        (json!({ "email": email_of(ann) }), "same_account"),
        (
            json!({ "email": email_of(bob.0), "note": "é".repeat(501) }),
            "invalid_input",
        ),
    ] {
        assert_eq!(
            error_of(ask(&app, &ann_client, &course, body).await).await,
            (422, code.to_owned())
        );
    }
    let malformed = ann_client
        .post(format!("{}/api/v1/s/{}/transfer", app.address, course.slug))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .expect("request");
    assert_eq!(malformed.status(), 400);
    assert_eq!(rows().await, 0, "nothing stored");

    // A request to Dan's address: Carol cannot confirm it, Dan holds a
    // code of the course already, junk is no link, and Ann herself cannot.
    let asked = ask(
        &app,
        &ann_client,
        &course,
        json!({ "email": email_of(dan.0) }),
    )
    .await;
    assert_eq!(asked.status(), 201);
    let id: Uuid = asked.json::<Value>().await.expect("json")["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let token = token_for(id);
    assert_eq!(
        error_of(confirm(&app, &carol.1, &token).await).await,
        (403, "transfer_for_another_address".to_owned())
    );
    assert_eq!(
        error_of(confirm(&app, &dan.1, &token).await).await,
        (409, "target_has_code".to_owned())
    );
    assert_eq!(
        error_of(confirm(&app, &dan.1, "not-a-token").await).await,
        (410, "link_invalid".to_owned())
    );
    assert_eq!(
        error_of(confirm(&app, &dan.1, &token_for(Uuid::now_v7())).await).await,
        (410, "link_invalid".to_owned())
    );
    // Not confirmed: an admin cannot decide it yet.
    assert_eq!(
        error_of(decide(&app, &owner, id, "approve", json!({})).await).await,
        (409, "transfer_not_open".to_owned())
    );
    // Another tenant's admin does not see or decide it.
    let stranger = admin(&app).await;
    assert_eq!(
        error_of(
            post_json(
                &app,
                &stranger.client,
                &format!("/api/v1/tenants/{}/transfers/{id}/approve", stranger.tenant),
                json!({}),
            )
            .await
        )
        .await,
        (404, "not_found".to_owned())
    );
    assert_eq!(
        error_of(decide(&app, &owner, Uuid::now_v7(), "approve", json!({})).await).await,
        (404, "not_found".to_owned())
    );
    let state: (String, Option<Uuid>) =
        sqlx::query_as("SELECT status, to_account FROM transfer_requests WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .expect("state");
    assert_eq!(state, ("awaiting_target".to_owned(), None));
    assert_eq!(holder(&app, codes[0].0).await, Some(ann));

    // A newer request replaces the open one (its link stops working);
    // withdrawing ends the newer one.
    let again = ask(
        &app,
        &ann_client,
        &course,
        json!({ "email": email_of(bob.0) }),
    )
    .await;
    assert_eq!(again.status(), 201);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM transfer_requests WHERE status = 'cancelled'"
        )
        .await,
        1
    );
    let cancel = ann_client
        .delete(format!("{}/api/v1/s/{}/transfer", app.address, course.slug))
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancel.status(), 204);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM transfer_requests WHERE status = 'cancelled'"
        )
        .await,
        2
    );
    let cancel_again = ann_client
        .delete(format!("{}/api/v1/s/{}/transfer", app.address, course.slug))
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancel_again.status(), 404);
    assert_invariants(&app, "after refusals").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_code_moves_at_most_the_limit_and_a_zero_limit_turns_requests_off(pool: PgPool) {
    let mut settings = load_settings();
    settings.tenants.transfers_per_code = 1;
    let app = spawn_app_with(pool, settings).await;
    let owner = admin(&app).await;
    let (course, codes, (_ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let people = learners(&app, 2).await;
    let (bob, carol) = (&people[0], &people[1]);
    let id = confirmed_request(&app, &course, (&ann_client, bob)).await;
    assert_eq!(
        decide(&app, &owner, id, "approve", json!({ "reason": "checked" }))
            .await
            .status(),
        200
    );
    assert_eq!(holder(&app, codes[0].0).await, Some(bob.0));
    // Bob holds it now; it has moved once, the most allowed.
    let (status, code) =
        error_of(ask(&app, &bob.1, &course, json!({ "email": email_of(carol.0) })).await).await;
    assert_eq!((status, code.as_str()), (409, "transfer_limit_reached"));
    let (ordinal, limit): (i16, i16) =
        sqlx::query_as("SELECT ordinal, code_limit FROM transfer_requests WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .expect("row");
    assert_eq!((ordinal, limit), (1, 1));

    // With 0, nobody may ask.
    let mut off = load_settings();
    off.tenants.transfers_per_code = 0;
    let other = spawn_app_with(app.pool.clone(), off).await;
    let owner2 = admin(&other).await;
    let (course2, _, (_, dan_client)) = bound_course(&other, &owner2, 1).await;
    assert_eq!(
        error_of(
            ask(
                &other,
                &dan_client,
                &course2,
                json!({ "email": email_of(carol.0) })
            )
            .await
        )
        .await,
        (403, "transfers_closed".to_owned())
    );
    assert_invariants(&app, "after the limit").await;
}

/// Control characters are bad input, never a 500 (PostgreSQL refuses a
/// NUL in text); the learner's line breaks are kept.
#[sqlx::test(migrations = "../migrations")]
async fn a_nul_in_a_note_or_a_reason_is_bad_input(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, _, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    assert_eq!(
        error_of(
            ask(
                &app,
                &ann_client,
                &course,
                json!({ "email": email_of(bob.0), "note": "a\u{0}b" })
            )
            .await
        )
        .await,
        (422, "invalid_input".to_owned())
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM transfer_requests").await,
        0
    );
    let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;
    for verb in ["approve", "refuse"] {
        assert_eq!(
            error_of(decide(&app, &owner, id, verb, json!({ "reason": "no\u{0}pe" })).await).await,
            (422, "invalid_input".to_owned()),
            "{verb}"
        );
    }
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM transfer_requests WHERE status = 'awaiting_admin'"
        )
        .await,
        1
    );
}

/// A learner the tenant suspended cannot hand the course to another
/// account of theirs.
#[sqlx::test(migrations = "../migrations")]
async fn a_suspended_learner_cannot_ask(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, _, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    sqlx::query(
        "INSERT INTO suspended_learners (tenant_id, account_id, suspended_by) VALUES ($1, $2, $2)",
    )
    .bind(owner.tenant)
    .bind(ann)
    .execute(&app.pool)
    .await
    .expect("suspend");
    assert_eq!(
        error_of(
            ask(
                &app,
                &ann_client,
                &course,
                json!({ "email": email_of(bob.0) })
            )
            .await
        )
        .await,
        (403, "learner_suspended".to_owned())
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM transfer_requests").await,
        0
    );
}

/// The transfer page, opened signed out, sends the visitor to sign in and
/// back, as "My courses" and a resource page do (it said "please sign in
/// first" and offered no way there).
#[sqlx::test(migrations = "../migrations")]
async fn the_transfer_page_sends_a_signed_out_visitor_to_sign_in_and_back(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let course = course(&app, &owner, json!({ "title": "Rust 101" })).await;
    let response = app
        .get_page_as(
            &crate::support::app::new_client(),
            &format!("/s/{}/transfer", course.slug),
        )
        .await;
    assert_eq!(response.status(), reqwest::StatusCode::FOUND);
    assert_eq!(
        response.headers()["location"],
        format!("/login?next=/s/{}/transfer", course.slug).as_str()
    );
}
