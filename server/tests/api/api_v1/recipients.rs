//! What an admin does for one recipient of a mailed batch (`POST
//! /api/v1/codes/{code_id}/resend`, `…/revoke-and-resend`), against real
//! PostgreSQL, Redis and SMTP: a resend mails the same code again, once
//! per answer that says it queued one; a revoke-and-resend revokes the
//! code (its text opens nothing) and mails another that works, once
//! however many clicks race; a redeemed code, a code not mailed and a
//! spent batch are refused with nothing changed. Checked in the SMTP
//! server and the database.

use std::time::Duration;

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::mailings::{batch, code_in, count, send, shop};
use crate::support::app::TestApp;
use crate::support::course::{self as course, admin, enter_code, learners, open};
use crate::support::mail::spawn_app_with_mail;
use crate::support::tokens::{as_token, create_token};

async fn post(app: &TestApp, token: &str, path: &str) -> (StatusCode, Value) {
    as_token(app, token, Method::POST, path, None).await
}

/// The code id each recipient holds now.
async fn code_of(app: &TestApp, email: &str) -> Uuid {
    sqlx::query_scalar("SELECT code_id FROM code_mailings WHERE email = $1")
        .bind(email)
        .fetch_one(&app.pool)
        .await
        .expect("a recipient")
}

async fn outbox_to(app: &TestApp, email: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM mail_outbox WHERE template = 'codes_sent' AND to_address = $1",
    )
    .bind(email)
    .fetch_one(&app.pool)
    .await
    .expect("the outbox")
}

/// Waits until every mail of codes to `email` is noted sent.
async fn wait_sent(app: &TestApp, email: &str) {
    for _ in 0..400 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM mail_outbox WHERE to_address = $1 AND sent_at IS NULL",
        )
        .bind(email)
        .fetch_one(&app.pool)
        .await
        .expect("the outbox");
        if waiting == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the mail to {email} was never noted sent");
}

/// A recipient whose mail went astray is mailed the same code again: not
/// while the last mail still waits to go, nor within minutes of it; an
/// hour after it, five clicks at once mail once; a mail given up on may be
/// sent again at once.
#[sqlx::test(migrations = "../migrations")]
async fn a_resend_mails_the_same_code_again(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (course, token) = shop(&app).await;
    let (batch_id, _) = batch(&app, &token, course.share, 2, true).await;
    let (status, report) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": ["ann@example.com"], "addressed": false, "lang": "zh-CN" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let first = sink.wait_for_count(1, Duration::from_secs(60)).await;
    let code = code_in(&first[0].text);
    let id = code_of(&app, "ann@example.com").await;

    // While a mail waits in the outbox (here: refused once, retried in
    // an hour), a resend queues nothing more. (The relay notes a mail sent
    // just after the SMTP server took it: wait for that first.)
    wait_sent(&app, "ann@example.com").await;
    sqlx::query(
        "UPDATE mail_outbox SET sent_at = NULL, next_attempt_at = now() + interval '1 hour',
                last_error = '451 try again later' WHERE to_address = 'ann@example.com'",
    )
    .execute(&app.pool)
    .await
    .expect("a mail waiting");
    let path = format!("/api/v1/codes/{id}/resend");
    let (status, waiting) = post(&app, &token, &path).await;
    assert_eq!(status, StatusCode::OK, "{waiting}");
    assert_eq!(
        (
            waiting["queued"].clone(),
            waiting["recipient"]["state"].clone(),
            waiting["recipient"]["error"].clone()
        ),
        (json!(false), json!("queued"), json!("451 try again later"))
    );
    assert_eq!(outbox_to(&app, "ann@example.com").await, 1);
    // Sent a minute ago: too soon to mail it again (mail takes a while to
    // arrive; nobody's inbox is to be flooded), and nothing is queued.
    sqlx::query(
        "UPDATE mail_outbox SET sent_at = now(), created_at = now() - interval '1 minute'
          WHERE to_address = 'ann@example.com'",
    )
    .execute(&app.pool)
    .await
    .expect("the mail sent");
    let (status, refused) = post(&app, &token, &path).await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("resend_too_soon")),
        "{refused}"
    );
    assert_eq!(outbox_to(&app, "ann@example.com").await, 1);

    // Sent an hour ago: five clicks at once mail once.
    sqlx::query(
        "UPDATE mail_outbox SET created_at = now() - interval '1 hour'
          WHERE to_address = 'ann@example.com'",
    )
    .execute(&app.pool)
    .await
    .expect("an hour ago");
    let answers = join_all((0..5).map(|_| post(&app, &token, &path))).await;
    let mut queued = 0;
    for (status, answer) in &answers {
        if *status == StatusCode::CONFLICT {
            assert_eq!(answer["code"], "resend_too_soon", "{answer}");
            continue;
        }
        assert_eq!(*status, StatusCode::OK, "{answer}");
        assert_eq!(answer["recipient"]["code_id"], json!(id), "{answer}");
        assert_eq!(answer["recipient"]["email"], "ann@example.com", "{answer}");
        if answer["queued"] == json!(true) {
            queued += 1;
        } else {
            assert_eq!(answer["queued"], json!(false), "{answer}");
        }
    }
    assert_eq!(queued, 1, "{answers:?}");
    assert_eq!(outbox_to(&app, "ann@example.com").await, 2);
    let mails = sink.wait_for_count(2, Duration::from_secs(60)).await;
    assert!(
        mails
            .iter()
            .all(|m| m.to == ["ann@example.com"] && code_in(&m.text) == code),
        "the same code, to the same address"
    );
    // A mail given up on (dead-lettered) may be sent again at once.
    wait_sent(&app, "ann@example.com").await;
    sqlx::query(
        "UPDATE mail_outbox SET sent_at = NULL, dead_at = now(), last_error = '550 no such user'
          WHERE id = (SELECT mail_id FROM code_mailings WHERE code_id = $1)",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .expect("a dead mail");
    let (status, again) = post(&app, &token, &path).await;
    assert_eq!(
        (status, again["queued"].clone()),
        (StatusCode::OK, json!(true)),
        "{again}"
    );
    let mails = sink.wait_for_count(3, Duration::from_secs(60)).await;
    assert!(mails.iter().all(|m| code_in(&m.text) == code));
    // In the first mail's language.
    assert!(
        mails.iter().all(|m| m.subject == first[0].subject),
        "{:?}",
        mails.iter().map(|m| &m.subject).collect::<Vec<_>>()
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action = 'batch.recipient_resent'"
        )
        .await,
        2
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.received().len(), 3);

    // Revoked from the code table: not mailed again, but replaced (with
    // nothing revoked now: it was already).
    let (status, _) = post(&app, &token, &format!("/api/v1/codes/{id}/revoke")).await;
    assert!(status.is_success(), "{status}");
    let (status, refused) = post(&app, &token, &path).await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("code_revoked"))
    );
    let (status, replaced) = post(
        &app,
        &token,
        &format!("/api/v1/codes/{id}/revoke-and-resend"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{replaced}");
    assert_eq!(replaced["revoked_id"], Value::Null, "{replaced}");
    assert_ne!(replaced["recipient"]["code_id"], json!(id));
    let mails = sink.wait_for_count(4, Duration::from_secs(60)).await;
    assert_ne!(code_in(&mails[3].text), code, "another code");
}

/// A recipient's code whose text went astray: revoked, and another code
/// of the batch mailed in its place. Ten clicks at once do it once; the
/// old text opens nothing, the new one opens the course; a repeat, a
/// redeemed code, a code never mailed and a spent batch are refused with
/// nothing changed.
#[sqlx::test(migrations = "../migrations")]
async fn a_revoke_and_resend_replaces_the_code_once(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({ "quota": null })).await;
    let token = create_token(&app, &admin, &["read", "write"]).await;
    let reader = create_token(&app, &admin, &["read"]).await;
    let (_, their_token) = shop(&app).await;
    let (batch_id, _) = batch(&app, &token, course.share, 3, true).await;
    // And a batch not mailed, of one code.
    let (drawn_batch, _) = batch(&app, &token, course.share, 1, false).await;
    let drawn: Uuid = sqlx::query_scalar("SELECT id FROM auth_codes WHERE batch_id = $1")
        .bind(drawn_batch)
        .fetch_one(&app.pool)
        .await
        .expect("a drawn code");
    let (status, report) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": ["ann@example.com", "bob@example.com"] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let mails = sink.wait_for_count(2, Duration::from_secs(60)).await;
    let text_of = |to: &str| {
        code_in(
            &mails
                .iter()
                .find(|m| m.to == [to])
                .expect("a mail to each")
                .text,
        )
    };
    let (old_text, bob_text) = (text_of("ann@example.com"), text_of("bob@example.com"));
    let old = code_of(&app, "ann@example.com").await;

    let path = format!("/api/v1/codes/{old}/revoke-and-resend");
    let answers = join_all((0..10).map(|_| post(&app, &token, &path))).await;
    let done: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::CREATED)
        .map(|(_, answer)| answer)
        .collect();
    assert_eq!(done.len(), 1, "{answers:?}");
    for (status, answer) in answers.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
        assert_eq!(
            (*status, answer["code"].clone()),
            (StatusCode::CONFLICT, json!("code_not_mailed")),
            "{answer}"
        );
    }
    let new = code_of(&app, "ann@example.com").await;
    assert_ne!(new, old);
    assert_eq!(done[0]["recipient"]["code_id"], json!(new));
    assert_eq!(done[0]["queued"], json!(true));
    assert_eq!(done[0]["revoked_id"], json!(old));
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM auth_codes WHERE id = '{old}' AND revoked_at IS NOT NULL"
            )
        )
        .await,
        1
    );
    let mails = sink.wait_for_count(3, Duration::from_secs(60)).await;
    let new_text = code_in(&mails[2].text);
    assert_eq!(mails[2].to, ["ann@example.com"]);
    assert_ne!(new_text, old_text);
    assert_eq!(outbox_to(&app, "ann@example.com").await, 2, "one new mail");

    assert_eq!(
        count(
            &app,
            &format!("SELECT count(*) FROM auth_codes WHERE id = '{new}' AND addressed_to = 'ann@example.com'")
        )
        .await,
        1,
        "addressed to her, as the first was"
    );

    // The old text opens nothing, even for ann; the new one opens the
    // course for her.
    let mut clients = learners(&app, 2).await;
    let (bob, bob_client) = clients.pop().expect("a learner");
    let (ann, ann_client) = clients.pop().expect("a learner");
    for (id, email) in [(ann, "ann@example.com"), (bob, "bob@example.com")] {
        sqlx::query("UPDATE accounts SET email = $2 WHERE id = $1")
            .bind(id)
            .bind(email)
            .execute(&app.pool)
            .await
            .expect("a learner's address");
    }
    let entered = enter_code(&app, &ann_client, &course.slug, &old_text).await;
    let refused: Value = entered.json().await.expect("json");
    assert_eq!(refused["code"], "code_revoked", "{refused}");
    assert_ne!(open(&app, &ann_client, &course, None).await.status(), 200);
    assert!(
        enter_code(&app, &ann_client, &course.slug, &new_text)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM auth_codes WHERE id = '{new}' AND bound_principal = '{ann}'"
            )
        )
        .await,
        1
    );

    let before = (
        count(&app, "SELECT count(*) FROM mail_outbox").await,
        count(
            &app,
            "SELECT count(*) FROM auth_codes WHERE revoked_at IS NOT NULL",
        )
        .await,
        count(&app, "SELECT count(*) FROM audit_log").await,
    );
    // A redeemed code is the code table's business (revoke-and-replace).
    for action in ["resend", "revoke-and-resend"] {
        let (status, refused) = post(&app, &token, &format!("/api/v1/codes/{new}/{action}")).await;
        assert_eq!(
            (status, refused["code"].clone()),
            (StatusCode::CONFLICT, json!("code_redeemed")),
            "{action}: {refused}"
        );
    }
    // The revoked code is nobody's now.
    let (status, refused) = post(&app, &token, &format!("/api/v1/codes/{old}/resend")).await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("code_not_mailed"))
    );
    // The batch's last free code went to ann: bob's cannot be replaced.
    let bob = code_of(&app, "bob@example.com").await;
    let (status, refused) = post(
        &app,
        &token,
        &format!("/api/v1/codes/{bob}/revoke-and-resend"),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("no_code_left")),
        "{refused}"
    );
    // A code of a batch not mailed.
    let (status, refused) = post(&app, &token, &format!("/api/v1/codes/{drawn}/resend")).await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("code_not_mailed"))
    );
    // A token that may only read changes nothing.
    for action in ["resend", "revoke-and-resend"] {
        let (status, _) = post(&app, &reader, &format!("/api/v1/codes/{bob}/{action}")).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{action}");
    }
    // Another tenant's token: as for a code that is nowhere.
    let (status, _) = post(&app, &their_token, &format!("/api/v1/codes/{bob}/resend")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        (
            count(&app, "SELECT count(*) FROM mail_outbox").await,
            count(
                &app,
                "SELECT count(*) FROM auth_codes WHERE revoked_at IS NOT NULL"
            )
            .await,
            count(&app, "SELECT count(*) FROM audit_log").await,
        ),
        before,
        "refusals change nothing"
    );
    // Bob's code still works, for bob.
    assert!(
        enter_code(&app, &bob_client, &course.slug, &bob_text)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &bob_client, &course, None).await.status(), 200);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE action IN ('batch.recipient_code_replaced', 'code.revoked')"
        )
        .await,
        2
    );
}

/// A revoke-and-resend racing the recipient's own first opening of the
/// code, five times: each time one of them wins whole. Either the code is
/// bound (the learner is in; the revoke-and-resend is refused and mails
/// nothing) or it is revoked and replaced (the opening is refused; the new
/// code is mailed); never a bound code revoked behind the learner's back
/// by this call, nor a second code mailed for a bound one.
#[sqlx::test(migrations = "../migrations")]
async fn a_revoke_and_resend_racing_the_first_opening_is_one_or_the_other(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (course, token) = shop(&app).await;
    let (batch_id, _) = batch(&app, &token, course.share, 10, true).await;
    let addresses: Vec<String> = (0..5).map(|i| format!("r{i}@example.com")).collect();
    let (status, report) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": addresses, "addressed": false }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let keyring = crate::support::app::test_settings(&crate::support::app::redis_url())
        .keyring()
        .expect("keyring");
    let learners = learners(&app, 5).await;
    for ((learner, client), email) in learners.iter().zip(&addresses) {
        let id = code_of(&app, email).await;
        let (version, salt): (i16, Vec<u8>) =
            sqlx::query_as("SELECT key_version, salt FROM auth_codes WHERE id = $1")
                .bind(id)
                .fetch_one(&app.pool)
                .await
                .expect("the code's derivation");
        let tenant: Uuid = sqlx::query_scalar("SELECT tenant_id FROM auth_codes WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .expect("tenant");
        let plain = keyring
            .rederive(
                u16::try_from(version).expect("version"),
                engine::tenants::TenantId(tenant),
                id,
                &salt,
            )
            .expect("the mailed code");
        assert!(
            enter_code(&app, client, &course.slug, &plain.display())
                .await
                .status()
                .is_success()
        );
        let path = format!("/api/v1/codes/{id}/revoke-and-resend");
        let (opened, (status, answer)) =
            tokio::join!(open(&app, client, &course, None), post(&app, &token, &path));
        let (bound_to, revoked): (Option<Uuid>, bool) = sqlx::query_as(
            "SELECT bound_principal, revoked_at IS NOT NULL FROM auth_codes WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .expect("the code");
        let holds = code_of(&app, email).await;
        if opened.status() == 200 {
            assert_eq!(
                (status, answer["code"].clone()),
                (StatusCode::CONFLICT, json!("code_redeemed")),
                "{answer}"
            );
            assert_eq!((bound_to, revoked, holds), (Some(*learner), false, id));
            assert_eq!(outbox_to(&app, email).await, 1, "nothing more mailed");
        } else {
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            assert_eq!((bound_to, revoked), (None, true));
            assert_ne!(holds, id);
            assert_eq!(outbox_to(&app, email).await, 2, "the new code mailed");
        }
    }
}
