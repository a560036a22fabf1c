//! "Revoke and replace" for a leaked code: it stops the leaked text and
//! keeps the rightful learner's access under a new code, bound to them in
//! the same transaction, costing them no access; what it cannot do is
//! refused with a clear error; support members and read-only tokens may
//! not use it.

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::course::{
    admin, assert_invariants, bound_course, course, enter_code, error_of, issue, learners, open,
    post_json,
};
use crate::support::mail::{MAIL_WAIT, mail_settings};

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
