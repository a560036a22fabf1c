//! One code's life in an admin's hands: unbinding needs a reason, is
//! audited, ends the learner's access and frees the code for another
//! learner (and a revoked code stays revoked); a lost code is replaced
//! atomically, its new text shown once.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use super::{call, codes_in};
use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::console::{form, page};
use crate::support::course::{
    self, admin, assert_invariants, course, enter_code, error_of, issue, learners, load_settings,
    open, post_json, state_of,
};

/// Unbinding needs a reason, ends the learner's access, frees the code.
#[sqlx::test(migrations = "../migrations")]
async fn unbinding_is_audited_and_moves_the_code_to_another_learner(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 2).await;
    let course = course::course(&app, &admin, json!({})).await;
    let (code_id, code) = issue(&app, &admin, course.share, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &people[0].1, &course.slug, &code)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &people[0].1, &course, None).await.status(), 200);

    let path = format!("/api/v1/codes/{code_id}/unbind");
    let no_reason = post_json(&app, &admin.client, &path, json!({ "reason": "  " })).await;
    assert_eq!(error_of(no_reason).await, (422, "invalid_input".into()));
    assert_eq!(
        state_of(&app, course.share).await.bound,
        1,
        "refused unbind changed nothing"
    );

    let direct = sqlx::query("UPDATE auth_codes SET bound_principal = $2 WHERE id = $1")
        .bind(code_id)
        .bind(people[1].0)
        .execute(&app.pool)
        .await;
    assert!(
        direct.is_err(),
        "the database refuses to move a binding outside the unbind path"
    );

    let ok = post_json(
        &app,
        &admin.client,
        &path,
        json!({ "reason": "learner changed account" }),
    )
    .await;
    assert_eq!(ok.status(), 200);
    let body: serde_json::Value = ok.json().await.expect("json");
    assert_eq!(body, json!({ "id": code_id, "state": "unused" }));
    assert_eq!(
        error_of(open(&app, &people[0].1, &course, None).await).await,
        (403, "code_required".into())
    );
    assert_eq!(
        enter_code(&app, &people[1].1, &course.slug, &code)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &people[1].1, &course, None).await.status(), 200);
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'code.unbound' AND target_id = $1 AND reason = 'learner changed account'",
    )
    .bind(code_id)
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audited, 1);
    assert_invariants(&app, "unbind").await;
}

/// Unbinding a code that was revoked while bound, without asking to
/// revoke it, leaves it revoked: the answer says so (it used to echo the
/// request's `revoke: false` as `unused`, a state the code was not in).
#[sqlx::test(migrations = "../migrations")]
async fn unbinding_a_revoked_code_answers_the_state_it_is_really_in(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 1).await;
    let course = course::course(&app, &admin, json!({})).await;
    let (code_id, code) = issue(&app, &admin, course.share, 1).await.remove(0);
    enter_code(&app, &people[0].1, &course.slug, &code).await;
    assert_eq!(open(&app, &people[0].1, &course, None).await.status(), 200);
    let revoked = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{code_id}/revoke"),
        json!({}),
    )
    .await;
    assert_eq!(revoked.status(), 200);

    let unbound = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{code_id}/unbind"),
        json!({ "reason": "learner changed account", "revoke": false }),
    )
    .await;
    assert_eq!(unbound.status(), 200);
    let body: serde_json::Value = unbound.json().await.expect("json");
    let still_revoked: bool =
        sqlx::query_scalar("SELECT revoked_at IS NOT NULL FROM auth_codes WHERE id = $1")
            .bind(code_id)
            .fetch_one(&app.pool)
            .await
            .expect("code");
    assert!(still_revoked, "unbinding does not un-revoke");
    assert_eq!(body, json!({ "id": code_id, "state": "revoked" }));
    let details: serde_json::Value = sqlx::query_scalar(
        "SELECT details FROM audit_log WHERE action = 'code.unbound' AND target_id = $1",
    )
    .bind(code_id)
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(
        details["revoked"], true,
        "the audit says what the code is now: {details}"
    );
    assert_eq!(details["revoke_requested"], false, "{details}");
    assert_invariants(&app, "unbind of a revoked code").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_lost_code_is_replaced_atomically_and_the_new_one_shown_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let codes_page = format!("/admin/t/{}/s/{}/codes", admin.tenant, course.share);
    let response = form(
        &app.address,
        &admin.client,
        &codes_page,
        "/api/admin/codes/replace",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("code_id", &codes[0].0.to_string()),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let one_time = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let (_, html) = page(&app.address, &admin.client, &one_time).await;
    let shown = codes_in(&html);
    assert_eq!(shown.len(), 1, "{html}");
    let (_, again) = page(&app.address, &admin.client, &one_time).await;
    assert!(codes_in(&again).is_empty());
    // The old code is revoked, the new one works, in the same batch.
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        409
    );
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &shown[0])
            .await
            .status(),
        200
    );
    let batches: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT batch_id) FROM auth_codes WHERE share_id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("batches");
    assert_eq!(batches, 1);
    // A revoked (or bound) code cannot be replaced: nothing changes.
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/codes/replace",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("code_id", &codes[0].0.to_string()),
        ],
    )
    .await;
    assert_eq!(status, 409);
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("codes");
    assert_eq!(total, 3);
}
