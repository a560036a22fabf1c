//! The notices a learner gets by mail, each once: the receipt when their
//! code binds ("you now hold <course>"), and word when an admin unbinds
//! (with the reason) or revokes the code they hold; revoking an unused code
//! mails nobody.

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::{TestApp, spawn_app_with};
use crate::support::course::{admin, course, enter_code, issue, learners, open, post_json};
use crate::support::mail::{MAIL_WAIT, mail_settings};

/// Waits until the relay has nothing left to send.
async fn settled(app: &TestApp) {
    let deadline = tokio::time::Instant::now() + MAIL_WAIT;
    while engine::mail::backlog(&app.pool).await.expect("backlog") != (0, 0) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relay never caught up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn each_notice_arrives_once(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let owner = admin(&app).await;
    let course = course(&app, &owner, json!({ "title": "Rust 101" })).await;
    let codes = issue(&app, &owner, course.share, 2).await;
    let people = learners(&app, 2).await;
    let email = |id: uuid::Uuid| format!("learner-{id}@example.com");

    // The receipt: once, however often the learner opens, retries or
    // comes back.
    let (ann, ann_client) = &people[0];
    assert_eq!(
        enter_code(&app, ann_client, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    for key in [Some("k1"), Some("k1"), None, None] {
        assert_eq!(open(&app, ann_client, &course, key).await.status(), 200);
    }
    let receipt = sink
        .wait_for(&email(*ann), "You now hold Rust 101", MAIL_WAIT)
        .await;
    assert!(
        receipt.text.contains(&format!("/s/{}", course.slug)),
        "{}",
        receipt.text
    );
    assert!(receipt.text.contains("Course Co"), "names the provider");

    // Unbound by an admin: told, with the reason.
    let unbind = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/codes/{}/unbind", codes[0].0),
        json!({ "reason": "moved to her work account" }),
    )
    .await;
    assert_eq!(
        unbind.status(),
        200,
        "{}",
        unbind.text().await.unwrap_or_default()
    );
    let unbound = sink.wait_for(&email(*ann), "was unbound", MAIL_WAIT).await;
    assert!(
        unbound.text.contains("> moved to her work account"),
        "{}",
        unbound.text
    );

    // Revoked while held: told once, even when revoked twice.
    let (bob, bob_client) = &people[1];
    enter_code(&app, bob_client, &course.slug, &codes[1].1).await;
    assert_eq!(open(&app, bob_client, &course, None).await.status(), 200);
    for _ in 0..2 {
        let revoked = post_json(
            &app,
            &owner.client,
            &format!("/api/v1/codes/{}/revoke", codes[1].0),
            json!({}),
        )
        .await;
        assert!(revoked.status().is_success(), "{}", revoked.status());
    }
    sink.wait_for(&email(*bob), "was revoked", MAIL_WAIT).await;

    settled(&app).await;
    let subjects = |who: uuid::Uuid| -> Vec<String> {
        let mut subjects: Vec<String> = sink
            .received_by(&email(who))
            .into_iter()
            .map(|m| m.subject)
            .collect();
        subjects.sort();
        subjects
    };
    assert_eq!(
        subjects(*ann),
        vec![
            "You now hold Rust 101",
            "Your code for Rust 101 was unbound"
        ]
    );
    assert_eq!(
        subjects(*bob),
        vec![
            "You now hold Rust 101",
            "Your code for Rust 101 was revoked"
        ]
    );
}

/// An unused code's revocation tells nobody (nobody held it).
#[sqlx::test(migrations = "../migrations")]
async fn revoking_an_unused_code_mails_nobody(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let owner = admin(&app).await;
    let course = course(&app, &owner, json!({})).await;
    let codes = issue(&app, &owner, course.share, 1).await;
    let revoked = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/codes/{}/revoke", codes[0].0),
        json!({}),
    )
    .await;
    assert!(revoked.status().is_success());
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(queued, 0);
}
