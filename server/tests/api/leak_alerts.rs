//! Leak alerts and "revoke and replace" (issue 17), on real PostgreSQL,
//! Redis and SMTP: a bound code other accounts keep trying reaches the
//! tenant's owners (a mail each, a `code.leak_suspected` event) once per
//! code per day, however many tries arrive at once; revoking and replacing
//! it stops the leaked text and keeps the rightful learner's access under
//! a new code, bound to them in the same transaction.

use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    Admin, admin, assert_invariants, bound_course, course, enter_code, error_of, issue, learners,
    open, post_json,
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

#[sqlx::test(migrations = "../migrations")]
async fn revoke_and_replace_stops_the_text_and_keeps_the_learner(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let owner = admin(&app).await;
    let (course, code, (ann, ann_client)) = bound_course(&app, &owner).await;
    // The batch's date passes after Ann bound her code: bound codes keep
    // working, and so does the binding carried to the replacement.
    sqlx::query(
        "UPDATE code_batches SET expires_at = (SELECT first_used_at FROM auth_codes WHERE id = $1)
                                              + interval '1 millisecond'
         WHERE id = (SELECT batch_id FROM auth_codes WHERE id = $1)",
    )
    .bind(code.0)
    .execute(&app.pool)
    .await
    .expect("the batch expires");
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let before: (time::OffsetDateTime, i32) =
        sqlx::query_as("SELECT first_used_at, access_count FROM auth_codes WHERE id = $1")
            .bind(code.0)
            .fetch_one(&app.pool)
            .await
            .expect("before");

    let url = format!("{}/api/v1/codes/{}/revoke-and-replace", app.address, code.0);
    let response = owner
        .client
        .post(&url)
        .header("idempotency-key", "leak-1")
        .json(&json!({ "reason": "posted on a forum" }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.expect("json");
    let new: Uuid = body["id"].as_str().expect("id").parse().expect("uuid");
    assert_ne!(new, code.0);
    assert_eq!(body["replaced_id"], code.0.to_string());
    assert_eq!(body["principal"], ann.to_string());
    let hint = body["hint"].as_str().expect("hint").to_owned();
    assert!(
        body.get("code").is_none(),
        "the new code's text is never handed out"
    );

    // The old code: revoked and free of Ann; the new one: hers, with her
    // first use and count.
    let old: (Option<Uuid>, bool) = sqlx::query_as(
        "SELECT bound_principal, revoked_at IS NOT NULL FROM auth_codes WHERE id = $1",
    )
    .bind(code.0)
    .fetch_one(&app.pool)
    .await
    .expect("old");
    assert_eq!(old, (None, true));
    let replacement: (Option<Uuid>, time::OffsetDateTime, i32, bool, String) = sqlx::query_as(
        "SELECT bound_principal, first_used_at, access_count, revoked_at IS NOT NULL, hint
         FROM auth_codes WHERE id = $1",
    )
    .bind(new)
    .fetch_one(&app.pool)
    .await
    .expect("new");
    assert_eq!(
        replacement,
        (Some(ann), before.0, before.1, false, hint.clone())
    );

    // Whoever has the old text is refused; Ann keeps opening.
    let mut others = learners(&app, 1).await;
    let (_, bob) = others.remove(0);
    assert_eq!(
        error_of(enter_code(&app, &bob, &course.slug, &code.1).await).await,
        (409, "code_revoked".to_owned())
    );
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    let holder: Uuid = sqlx::query_scalar(
        "SELECT code_id FROM access_records WHERE principal_id = $1 ORDER BY granted_at DESC LIMIT 1",
    )
    .bind(ann)
    .fetch_one(&app.pool)
    .await
    .expect("latest access");
    assert_eq!(holder, new, "her latest access went through the new code");

    // A retry with the same key: the same answer, nothing new.
    let retry = owner
        .client
        .post(&url)
        .header("idempotency-key", "leak-1")
        .json(&json!({ "reason": "posted on a forum" }))
        .send()
        .await
        .expect("retry");
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let again: Value = retry.json().await.expect("json");
    assert_eq!(again["id"], new.to_string());
    // Without a key: the code is no longer bound.
    let repeat = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/codes/{}/revoke-and-replace", code.0),
        json!({ "reason": "again" }),
    )
    .await;
    assert_eq!(error_of(repeat).await, (409, "code_not_bound".to_owned()));
    let codes: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("codes");
    assert_eq!(codes, 2, "one replacement, whatever the retries");

    // Ann is told, with the reason and the new code's hint.
    let mail = sink
        .wait_for(
            &format!("learner-{ann}@example.com"),
            "Your code for Rust 101 was replaced",
            MAIL_WAIT,
        )
        .await;
    assert!(mail.text.contains("> posted on a forum"), "{}", mail.text);
    assert!(
        mail.text.contains(&format!("ending in {hint}")),
        "{}",
        mail.text
    );

    // Audited and announced.
    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE target_id = $1 ORDER BY created_at, action",
    )
    .bind(code.0)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert!(actions.contains(&"code.unbound".to_owned()), "{actions:?}");
    assert!(actions.contains(&"code.replaced".to_owned()), "{actions:?}");
    let event: Value = sqlx::query_scalar(
        "SELECT payload FROM outbox WHERE event_type = 'code.replaced' AND payload->>'code_id' = $1",
    )
    .bind(code.0.to_string())
    .fetch_one(&app.pool)
    .await
    .expect("event");
    assert_eq!(event["replacement_id"], new.to_string());
    assert_eq!(event["principal"], ann.to_string());
    assert_invariants(&app, "after revoke and replace").await;
}

/// Bad requests get a clear error and change nothing.
#[sqlx::test(migrations = "../migrations")]
async fn revoke_and_replace_refuses_what_it_cannot_do(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, code, _ann) = bound_course(&app, &owner).await;
    let unused = issue(&app, &owner, course.share, 1).await.remove(0);
    let stranger = admin(&app).await;
    let snapshot = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT concat_ws('|',
                (SELECT md5(string_agg(c::text, ',' ORDER BY c.id)) FROM auth_codes c),
                (SELECT md5(coalesce(string_agg(l::text, ',' ORDER BY l.id), '')) FROM audit_log l),
                (SELECT md5(coalesce(string_agg(o::text, ',' ORDER BY o.id), '')) FROM outbox o),
                (SELECT md5(coalesce(string_agg(m.id::text, ',' ORDER BY m.id), '')) FROM mail_outbox m),
                (SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY r.id), '')) FROM access_records r))",
        )
        .fetch_one(&app.pool)
        .await
        .expect("snapshot")
    };
    let before = snapshot().await;
    let call = |client: &reqwest::Client, code: String, body: Value| {
        let client = client.clone();
        let url = format!("{}/api/v1/codes/{code}/revoke-and-replace", app.address);
        async move { error_of(client.post(url).json(&body).send().await.expect("request")).await }
    };
    let reason = json!({ "reason": "leaked" });
    assert_eq!(
        call(&owner.client, unused.0.to_string(), reason.clone()).await,
        (409, "code_not_bound".to_owned()),
        "an unused code has nobody to keep"
    );
    assert_eq!(
        call(&owner.client, code.0.to_string(), json!({ "reason": "  " }))
            .await
            .0,
        422,
        "a reason is required"
    );
    // A NUL (PostgreSQL refuses it in text) is bad input, not a 500.
    assert_eq!(
        call(
            &owner.client,
            code.0.to_string(),
            json!({ "reason": "leaked\u{0}here" })
        )
        .await
        .0,
        422,
        "a control character is refused"
    );
    assert_eq!(
        call(&owner.client, code.0.to_string(), json!({})).await,
        (400, "invalid_json".to_owned()),
        "a body without its reason is malformed, as for an unbind"
    );
    // A code that does not exist and another tenant's code look the same
    // (refused, nothing said about the code).
    let unknown = call(&owner.client, Uuid::new_v4().to_string(), reason.clone()).await;
    assert_eq!(unknown.0, 403);
    assert_eq!(
        call(&stranger.client, code.0.to_string(), reason.clone()).await,
        unknown,
        "another tenant's admin learns nothing"
    );
    assert_eq!(snapshot().await, before, "nothing changed");
}

/// Revoke and replace racing the learner's own openings: every opening is
/// granted (or busy), never refused as if she held no code, and the
/// invariants hold afterwards, with Ann on the new code.
#[sqlx::test(migrations = "../migrations")]
async fn revoke_and_replace_racing_openings_keeps_the_invariants(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, code, (ann, ann_client)) = bound_course(&app, &owner).await;
    let replace_path = format!("/api/v1/codes/{}/revoke-and-replace", code.0);
    let replace = post_json(
        &app,
        &owner.client,
        &replace_path,
        json!({ "reason": "leaked" }),
    );
    let openings = join_all((0..16).map(|i| {
        let client = ann_client.clone();
        let url = format!(
            "{}/api/v1/s/{}/resources/{}/open",
            app.address, course.slug, course.resource
        );
        async move {
            client
                .post(url)
                .header("idempotency-key", format!("race-{i}"))
                .send()
                .await
                .expect("open")
                .status()
                .as_u16()
        }
    }));
    let (replaced, statuses) = tokio::join!(replace, openings);
    assert_eq!(replaced.status(), 201);
    // Granted, or at worst "busy, retry": never told to enter a code (the
    // settlement starts over when the binding moved while it waited).
    for status in statuses {
        assert!(status == 200 || status == 409, "granted or busy: {status}");
    }
    let held: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM auth_codes WHERE share_id = $1 AND bound_principal = $2",
    )
    .bind(course.share)
    .bind(ann)
    .fetch_all(&app.pool)
    .await
    .expect("held");
    assert_eq!(held.len(), 1);
    assert_ne!(held[0], code.0, "Ann holds the new code");
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    assert_invariants(&app, "after the race").await;
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

/// Revoke and replace costs the learner nothing: the grants they hold
/// carry over to the new code, so with a per-learner limit of one access
/// already spent they keep opening, and the learners list keeps their
/// history.
#[sqlx::test(migrations = "../migrations")]
async fn revoke_and_replace_costs_the_learner_no_access(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let course = course(
        &app,
        &owner,
        json!({ "title": "Rust 101", "per_learner_limit": 1 }),
    )
    .await;
    let code = issue(&app, &owner, course.share, 1).await.remove(0);
    let (ann, ann_client) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &ann_client, &course.slug, &code.1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &ann_client, &course, None).await.status(), 200);
    let replaced = post_json(
        &app,
        &owner.client,
        &format!("/api/v1/codes/{}/revoke-and-replace", code.0),
        json!({ "reason": "leaked" }),
    )
    .await;
    assert_eq!(replaced.status(), 201);
    assert_eq!(
        open(&app, &ann_client, &course, None).await.status(),
        200,
        "her one access still opens"
    );
    let counted: i32 = sqlx::query_scalar(
        "SELECT access_count FROM auth_codes WHERE bound_principal = $1 AND share_id = $2",
    )
    .bind(ann)
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("count");
    assert_eq!(counted, 1, "nothing counted again");
    let list: Value = owner
        .client
        .get(format!(
            "{}/api/v1/shares/{}/learners",
            app.address, course.share
        ))
        .send()
        .await
        .expect("learners")
        .json()
        .await
        .expect("json");
    assert_eq!(list["learners"][0]["accesses"], 1, "{list}");
    assert!(!list["learners"][0]["last_access"].is_null(), "{list}");
    assert_invariants(&app, "after a replacement that cost nothing").await;
}

/// Revoke and replace is the course managers' (owners and admins, tokens
/// with `write`): a support member and a read-only token are refused, and
/// the code stays as it was.
#[sqlx::test(migrations = "../migrations")]
async fn support_and_read_tokens_cannot_revoke_and_replace(pool: PgPool) {
    use crate::support::tokens::{as_token, create_token};
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (_course, code, (ann, _)) = bound_course(&app, &owner).await;
    let support = app
        .create_account("support-l@example.com", crate::support::course::PASSWORD)
        .await;
    sqlx::query(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'support')",
    )
    .bind(owner.tenant)
    .bind(support.0)
    .execute(&app.pool)
    .await
    .expect("member");
    let supporter = crate::support::app::new_client();
    app.login_as(
        &supporter,
        "support-l@example.com",
        crate::support::course::PASSWORD,
    )
    .await;
    let path = format!("/api/v1/codes/{}/revoke-and-replace", code.0);
    let refused = post_json(&app, &supporter, &path, json!({ "reason": "leaked" })).await;
    assert_eq!(refused.status(), 403, "support");
    let reader = create_token(&app, &owner, &["read"]).await;
    let (status, _) = as_token(
        &app,
        &reader,
        reqwest::Method::POST,
        &path,
        Some(json!({ "reason": "leaked" })),
    )
    .await;
    assert_eq!(status, 403, "a read token");
    let state: (Option<Uuid>, bool) = sqlx::query_as(
        "SELECT bound_principal, revoked_at IS NOT NULL FROM auth_codes WHERE id = $1",
    )
    .bind(code.0)
    .fetch_one(&app.pool)
    .await
    .expect("state");
    assert_eq!(state, (Some(ann), false), "nothing changed");
    let writer = create_token(&app, &owner, &["read", "write"]).await;
    let (status, body) = as_token(
        &app,
        &writer,
        reqwest::Method::POST,
        &path,
        Some(json!({ "reason": "leaked" })),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}
