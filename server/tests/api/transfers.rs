//! Transfer requests (issue 17), on real PostgreSQL, Redis and SMTP: a
//! learner asks to move their code to another account, that account
//! confirms from the mailed link, an admin approves (the binding moves in
//! one transaction on the audited path, both accounts get a mail, the
//! webhook event fires) or refuses with a reason (nothing moves). Bad
//! input changes nothing; a code moves at most `tenants.transfers_per_code`
//! times; an approval racing the receiving account's own first access has
//! exactly one outcome; the reconciler flags a binding moved any other way.

use futures::future::join_all;
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

/// The concurrency suite's transfer: an admin approves while the
/// receiving account opens the course with a code of its own that it
/// entered before, and while the holder opens it too, all at once. Either
/// the approval wins (the receiving account holds the moved code, its own
/// stays unused) or its own first access does (the approval is refused
/// `target_has_code` and nothing moved): exactly one outcome, every
/// round, and the invariants hold.
#[sqlx::test(migrations = "../migrations")]
async fn an_approval_racing_the_receiving_accounts_first_access_has_one_outcome(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let rounds = 6;
    let mut outcomes = Vec::new();
    for round in 0..rounds {
        let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 2).await;
        let bob = learners(&app, 1).await.remove(0);
        let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;
        // Bob entered the course's second code (pending in his session).
        assert_eq!(
            enter_code(&app, &bob.1, &course.slug, &codes[1].1)
                .await
                .status(),
            200
        );
        let approval = decide(&app, &owner, id, "approve", json!({}));
        let bobs_access = open(&app, &bob.1, &course, None);
        let anns_access = open(&app, &ann_client, &course, None);
        let (approval, bobs_access, anns_access) =
            futures::join!(approval, bobs_access, anns_access);
        let approved = approval.status() == 200;
        if !approved {
            assert_eq!(
                error_of(approval).await,
                (409, "target_has_code".to_owned()),
                "round {round}"
            );
        }
        assert_eq!(
            bobs_access.status(),
            200,
            "round {round}: Bob gets in either way"
        );
        assert!(
            [200, 403].contains(&anns_access.status().as_u16()),
            "round {round}: {}",
            anns_access.status()
        );
        let (moved, own) = (
            holder(&app, codes[0].0).await,
            holder(&app, codes[1].0).await,
        );
        if approved {
            assert_eq!((moved, own), (Some(bob.0), None), "round {round}");
        } else {
            assert_eq!((moved, own), (Some(ann), Some(bob.0)), "round {round}");
        }
        let bobs_bindings = count(
            &app,
            &format!(
                "SELECT count(*) FROM auth_codes WHERE share_id = '{}' AND bound_principal = '{}'",
                course.share, bob.0
            ),
        )
        .await;
        assert_eq!(bobs_bindings, 1, "round {round}");
        outcomes.push(approved);
    }
    eprintln!(
        "approvals won {} of {rounds} rounds",
        outcomes.iter().filter(|w| **w).count()
    );
    assert_invariants(&app, "after the races").await;
}

/// Many admins approving the same request at once: it moves once.
#[sqlx::test(migrations = "../migrations")]
async fn concurrent_approvals_move_a_code_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, codes, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;
    let answers = join_all((0..8).map(|_| decide(&app, &owner, id, "approve", json!({})))).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.status().as_u16()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        7,
        "{statuses:?}"
    );
    assert_eq!(holder(&app, codes[0].0).await, Some(bob.0));
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'code.transferred'"
        )
        .await,
        1
    );
    assert_invariants(&app, "after concurrent approvals").await;
}

/// The reconciler's two transfer checks fail when they should: a binding
/// moved by hand on the unbind path (no approved transfer, no audit) and
/// a code moved more often than its limit (constraints dropped).
#[sqlx::test(migrations = "../migrations")]
async fn the_reconciler_flags_a_binding_moved_outside_the_audited_path(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, codes, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let people = learners(&app, 2).await;
    let (bob, carol) = (&people[0], &people[1]);
    let id = confirmed_request(&app, &course, (&ann_client, bob)).await;
    assert_eq!(
        decide(&app, &owner, id, "approve", json!({}))
            .await
            .status(),
        200
    );
    assert_invariants(&app, "an approved transfer is not a violation").await;

    let moved = "a binding is its learner's own, an approved transfer's or a replacement's";
    let limit = "no code was transferred more often than its limit allowed";
    let violations = |name: &'static str| {
        let pool = app.pool.clone();
        async move {
            engine::invariants::violations(&pool)
                .await
                .expect("checks")
                .into_iter()
                .filter(|c| c.name == name)
                .map(|c| c.violations)
                .sum::<i64>()
        }
    };
    // Moved to Carol by hand, the switch set as only the audited path does.
    let mut tx = app.pool.begin().await.expect("tx");
    sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
        .execute(&mut *tx)
        .await
        .expect("switch");
    sqlx::query("UPDATE auth_codes SET bound_principal = $1 WHERE id = $2")
        .bind(carol.0)
        .bind(codes[0].0)
        .execute(&mut *tx)
        .await
        .expect("move by hand");
    tx.commit().await.expect("commit");
    assert_eq!(violations(moved).await, 1);
    assert_eq!(violations(limit).await, 0);

    // Three approved transfers of one code under a limit of 2.
    for sql in [
        "ALTER TABLE transfer_requests DROP CONSTRAINT transfer_requests_within_limit",
        "DROP INDEX transfer_requests_ordinal",
        "DROP INDEX transfer_requests_open",
    ] {
        sqlx::query(sql).execute(&app.pool).await.expect(sql);
    }
    for ordinal in [2_i16, 3] {
        sqlx::query(
            "INSERT INTO transfer_requests (tenant_id, id, share_id, code_id, from_account, to_email,
                 to_account, status, digest, link_expires_at, decided_at, ordinal, code_limit)
             SELECT tenant_id, $2, share_id, code_id, from_account, to_email, to_account,
                    'approved', $3, link_expires_at, now(), $4, 2
             FROM transfer_requests WHERE id = $1",
        )
        .bind(id)
        .bind(Uuid::now_v7())
        .bind(Uuid::now_v7().as_bytes().to_vec())
        .bind(ordinal)
        .execute(&app.pool)
        .await
        .expect("plant");
    }
    assert_eq!(violations(limit).await, 1);
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
