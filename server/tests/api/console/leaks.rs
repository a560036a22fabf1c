//! Leak alerts, on real PostgreSQL, Redis and SMTP: a bound code other
//! accounts keep trying reaches the tenant's owners (a mail each, a
//! `code.leak_suspected` event a webhook can subscribe to) once per code per
//! day, however many tries arrive at once; a revoked code raises no alert,
//! and the alert rule and the trigger's exemption are narrow.

use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    Admin, admin, assert_invariants, bound_course, enter_code, error_of, issue, learners, post_json,
};
use crate::support::mail::{MAIL_WAIT, mail_settings};

/// How many `code.leak_suspected` events the outbox holds for `code`.
async fn alerts(app: &TestApp, code: Uuid) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM outbox
         WHERE event_type = 'code.leak_suspected' AND payload->>'code_id' = $1",
    )
    .bind(code.to_string())
    .fetch_one(&app.pool)
    .await
    .expect("alerts")
}

/// Who was sent a leak mail, sorted.
async fn leak_mails(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT to_address FROM mail_outbox WHERE template = 'leak_suspected' ORDER BY to_address",
    )
    .fetch_all(&app.pool)
    .await
    .expect("mails")
}

/// The tenant's first owner's address.
async fn owner_email(app: &TestApp, admin: &Admin) -> String {
    sqlx::query_scalar(
        "SELECT a.email FROM tenant_members m JOIN accounts a ON a.id = m.account_id
         WHERE m.tenant_id = $1 AND m.role = 'owner'",
    )
    .bind(admin.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("owner")
}

#[sqlx::test(migrations = "../migrations")]
async fn owners_hear_of_a_leaked_code_once_a_day(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let owner = admin(&app).await;
    let first_owner = owner_email(&app, &owner).await;
    // A second owner hears of it too; an admin and support do not.
    let mut team = Vec::new();
    for (email, role) in [
        ("second-owner@example.com", "owner"),
        ("an-admin@example.com", "admin"),
        ("support@example.com", "support"),
    ] {
        let id = app.create_account(email, "correct horse battery").await;
        sqlx::query("INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, $3)")
            .bind(owner.tenant)
            .bind(id.0)
            .bind(role)
            .execute(&app.pool)
            .await
            .expect("member");
        team.push(email);
    }
    let (course, code, _ann) = bound_course(&app, &owner).await;
    let others = learners(&app, 8).await;

    // Two tries can be the learner's own second account: no alert yet.
    for (_, client) in &others[..2] {
        let (status, error) = error_of(enter_code(&app, client, &course.slug, &code.1).await).await;
        assert_eq!((status, error.as_str()), (409, "code_bound"));
    }
    assert_eq!(alerts(&app, code.0).await, 0, "two tries raise nothing");
    assert!(leak_mails(&app).await.is_empty());

    // The third and later tries, all at once: one alert.
    let tries = join_all(
        others[2..]
            .iter()
            .map(|(_, client)| enter_code(&app, client, &course.slug, &code.1)),
    )
    .await;
    for response in tries {
        assert_eq!(error_of(response).await, (409, "code_bound".to_owned()));
    }
    assert_eq!(alerts(&app, code.0).await, 1, "one alert for the day");
    let mut expected = vec![first_owner.clone(), "second-owner@example.com".to_owned()];
    expected.sort();
    assert_eq!(leak_mails(&app).await, expected, "each owner, nobody else");
    let payload: Value =
        sqlx::query_scalar("SELECT payload FROM outbox WHERE event_type = 'code.leak_suspected'")
            .fetch_one(&app.pool)
            .await
            .expect("event");
    assert_eq!(payload["share_id"], course.share.to_string());
    assert_eq!(payload["attempts"], 3, "raised by the third try");
    let hint: String = sqlx::query_scalar("SELECT hint FROM auth_codes WHERE id = $1")
        .bind(code.0)
        .fetch_one(&app.pool)
        .await
        .expect("hint");
    assert_eq!(payload["hint"], hint.as_str());

    // The mail names the code and leads to it in the console.
    let mail = sink
        .wait_for(&first_owner, "may have been passed around", MAIL_WAIT)
        .await;
    assert_eq!(
        mail.subject,
        "A code for Rust 101 may have been passed around"
    );
    assert!(
        mail.text.contains(&format!("ending in {hint}")),
        "{}",
        mail.text
    );
    assert!(mail.text.contains("tried it 3 times"), "{}", mail.text);
    assert!(
        mail.text.contains(&format!(
            "/admin/t/{}/s/{}/codes?code={}",
            owner.tenant, course.share, code.0
        )),
        "{}",
        mail.text
    );
    assert!(
        !mail.text.contains(&code.1),
        "the mail never carries the code's text"
    );

    // A day later, still tried: the next alert.
    sqlx::query(
        "UPDATE auth_codes SET leak_alerted_at = leak_alerted_at - interval '1 day' WHERE id = $1",
    )
    .bind(code.0)
    .execute(&app.pool)
    .await
    .expect("a day passes");
    let (status, _) = error_of(enter_code(&app, &others[0].1, &course.slug, &code.1).await).await;
    assert_eq!(status, 409);
    assert_eq!(alerts(&app, code.0).await, 2, "the next day's alert");
    // ... and not one more that day.
    let (status, _) = error_of(enter_code(&app, &others[1].1, &course.slug, &code.1).await).await;
    assert_eq!(status, 409);
    assert_eq!(alerts(&app, code.0).await, 2);
    assert_eq!(leak_mails(&app).await.len(), 4);
    let tries: i32 = sqlx::query_scalar("SELECT foreign_attempts FROM auth_codes WHERE id = $1")
        .bind(code.0)
        .fetch_one(&app.pool)
        .await
        .expect("tries");
    assert_eq!(tries, 10, "every try counted");
    assert_invariants(&app, "after the alerts").await;
}

/// A revoked code is not alerted about: nothing is left to protect.
#[sqlx::test(migrations = "../migrations")]
async fn a_revoked_code_raises_no_alert(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, code, _ann) = bound_course(&app, &owner).await;
    let revoked = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/codes/{}/revoke", code.0),
        json!({}),
    )
    .await;
    assert_eq!(revoked.status(), 200);
    for (_, client) in learners(&app, 4).await {
        let (status, error) =
            error_of(enter_code(&app, &client, &course.slug, &code.1).await).await;
        assert_eq!((status, error.as_str()), (409, "code_revoked"));
    }
    assert_eq!(alerts(&app, code.0).await, 0);
    assert!(leak_mails(&app).await.is_empty());
}

/// A webhook endpoint can subscribe to the two new events, and a leak
/// alert reaches it as a delivery.
#[sqlx::test(migrations = "../migrations")]
async fn a_webhook_subscribes_to_leak_alerts_and_replacements(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let created = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/tenants/{}/webhooks", owner.tenant),
        json!({
            "url": "https://hooks.example.com/leaks",
            "events": ["code.leak_suspected", "code.replaced"],
        }),
    )
    .await;
    assert_eq!(
        created.status(),
        201,
        "{}",
        created.text().await.unwrap_or_default()
    );
    let (course, code, _ann) = bound_course(&app, &owner).await;
    for (_, client) in learners(&app, 3).await {
        enter_code(&app, &client, &course.slug, &code.1).await;
    }
    assert_eq!(alerts(&app, code.0).await, 1);
    // The relay (the app's, or this one) fans the event out to the endpoint.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        engine::webhooks::relay::fan_out(&app.pool, 100)
            .await
            .expect("fan out");
        let delivered: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM webhook_deliveries d JOIN outbox o ON o.id = d.event_id
             WHERE o.event_type = 'code.leak_suspected'",
        )
        .fetch_one(&app.pool)
        .await
        .expect("deliveries");
        if delivered == 1 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never delivered");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The trigger's exemption is the audited path's alone: outside it, a
/// bound code cannot be inserted into an expired batch; and the alert rule
/// never fires for a revoked or unbound code, whatever its count.
#[sqlx::test(migrations = "../migrations")]
async fn the_exemption_and_the_alert_rule_are_narrow(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, code, (ann, _)) = bound_course(&app, &owner).await;
    let batch: Uuid = sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(code.0)
        .fetch_one(&app.pool)
        .await
        .expect("batch");
    sqlx::query("UPDATE code_batches SET expires_at = now() WHERE id = $1")
        .bind(batch)
        .execute(&app.pool)
        .await
        .expect("expire");
    // A second learner, to insert a bound code for.
    let (bob, _) = learners(&app, 1).await.remove(0);
    let insert = format!(
        "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint,
                                 bound_principal, first_used_at)
         VALUES ('{}', '{}', '{}', '{batch}', decode(repeat('ab', 32), 'hex'), 1, 'ZZZZ', '{bob}', now())",
        owner.tenant,
        Uuid::now_v7(),
        course.share,
    );
    let refused = sqlx::query(&insert).execute(&app.pool).await;
    let message = refused
        .expect_err("refused outside the audited path")
        .to_string();
    assert!(message.contains("code_expired"), "{message}");
    let mut tx = app.pool.begin().await.expect("tx");
    sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
        .execute(&mut *tx)
        .await
        .expect("open the path");
    sqlx::query(&insert)
        .execute(&mut *tx)
        .await
        .expect("allowed on the audited path");
    tx.rollback().await.expect("rollback");

    // Way past the threshold, but revoked: no alert.
    sqlx::query("UPDATE auth_codes SET foreign_attempts = 10, revoked_at = now() WHERE id = $1")
        .bind(code.0)
        .execute(&app.pool)
        .await
        .expect("revoke");
    let due: Option<Uuid> = sqlx::query_scalar("SELECT share_id FROM note_foreign_attempt($1, $2)")
        .bind(owner.tenant)
        .bind(code.0)
        .fetch_optional(&app.pool)
        .await
        .expect("note");
    assert_eq!(due, None, "a revoked code raises nothing");
    // Unbound (and not revoked): nothing to protect either.
    let unused = issue(&app, &owner, course.share, 1).await.remove(0);
    sqlx::query("UPDATE auth_codes SET foreign_attempts = 10 WHERE id = $1")
        .bind(unused.0)
        .execute(&app.pool)
        .await
        .expect("tries");
    let due: Option<Uuid> = sqlx::query_scalar("SELECT share_id FROM note_foreign_attempt($1, $2)")
        .bind(owner.tenant)
        .bind(unused.0)
        .fetch_optional(&app.pool)
        .await
        .expect("note");
    assert_eq!(due, None, "an unbound code raises nothing");
    let _ = ann;
}
