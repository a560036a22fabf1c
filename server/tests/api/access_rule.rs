//! The access rule: an access is counted where a person opens a resource
//! (`POST …/open`, the resource page), never on its bytes. `GET …/content`
//! serves only under a live grant, writes nothing, stops within
//! `settlement.grant_recheck_secs` after a revoke, an unbind, a pause or
//! "sign out everywhere", and is limited per account.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, spawn_app_with};
use crate::support::course::{
    self, Course, ShareState, admin, error_of, fetch, load_settings, one_learner, open, post_json,
    state_of,
};

/// What the settlement wrote for a share, with the learner's allowance and
/// the audit log: the bytes route must leave all of it alone.
async fn written(app: &TestApp, course: &Course) -> (ShareState, i64, i64) {
    let (allowance, audit): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT coalesce(sum(access_count), 0)::bigint FROM auth_codes WHERE share_id = $1),
                (SELECT count(*) FROM audit_log)",
    )
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("state");
    (state_of(app, course.share).await, allowance, audit)
}

/// 100 concurrent first openings by one learner with one request id (a
/// client retrying hard) bind once and count one access.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_concurrent_first_openings_with_one_request_id_count_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;
    let url = format!(
        "{}/api/v1/s/{}/resources/{}/open",
        app.address, course.slug, course.resource
    );
    let key = Uuid::new_v4().to_string();
    let answers =
        join_all((0..100).map(|_| client.post(&url).header("idempotency-key", &key).send())).await;
    let mut bound = 0;
    for answer in answers {
        let answer = answer.expect("request");
        let status = answer.status();
        let access = answer
            .headers()
            .get("x-admitone-access")
            .map(|v| v.to_str().expect("ascii").to_owned());
        match (status.as_u16(), access.as_deref()) {
            (200, Some("bound")) => bound += 1,
            (200, Some("replayed" | "reused")) => {}
            // Busy: the documented "retry with the same request id".
            (409, None) => assert_eq!(error_of(answer).await.1, "busy"),
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(bound, 1, "one opening bound the code");
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );
    // The retry after the storm is answered from the record.
    let again = client
        .post(&url)
        .header("idempotency-key", &key)
        .send()
        .await
        .expect("request");
    assert_eq!(again.headers()["x-admitone-access"], "replayed");
    course::assert_invariants(&app, "after 100 openings with one request id").await;
}

/// The bytes route never writes: many Range requests, from this site and
/// from others, leave the records, the allowance, the quota and the audit
/// log as the opening left them.
#[sqlx::test(migrations = "../migrations")]
async fn the_bytes_never_count_bind_or_debit(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;

    // Before any opening, the bytes bind nothing (the code stays pending).
    let early = fetch(&app, &client, &course, Some("bytes=0-1")).await;
    assert_eq!(error_of(early).await, (403, "open_from_course_page".into()));
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );

    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    let before = written(&app, &course).await;
    let url = course::content_url(&app, &course);
    let requests = (0..40).map(|i| {
        let mut request = client
            .get(&url)
            .header("range", format!("bytes={}-{}", i % 8, i % 8 + 1));
        if i % 2 == 0 {
            request = request.header("sec-fetch-site", "cross-site");
        }
        request.send()
    });
    for response in join_all(requests).await {
        assert_eq!(response.expect("request").status(), 206);
    }
    assert_eq!(written(&app, &course).await, before, "nothing was written");
}

/// The learner signs in elsewhere and signs out everywhere: every other
/// session of theirs is over.
async fn sign_out_everywhere(app: &TestApp, learner: Uuid) {
    let other = new_client();
    app.login_as(
        &other,
        &format!("learner-{learner}@example.com"),
        crate::support::course::PASSWORD,
    )
    .await;
    let r = app.post_form_as(&other, "/api/auth/logout-all", &[]).await;
    assert!(r.status().is_success() || r.status().is_redirection());
}

/// Settings whose grants are re-checked every `secs`.
fn rechecking_every(secs: u64) -> server::config::Settings {
    let mut settings = load_settings();
    settings.settlement.grant_recheck_secs = secs;
    settings
}

/// An instance serves a checked grant without asking PostgreSQL again for
/// `grant_recheck_secs` (here a minute: a revoke is not seen yet), and asks
/// again on every request with 0 (the revoke is seen at once).
#[sqlx::test(migrations = "../migrations")]
async fn a_checked_grant_is_remembered_for_the_recheck_bound_only(pool: PgPool) {
    for (secs, after_revoke) in [(60, 206), (0, 409)] {
        let app = spawn_app_with(pool.clone(), rechecking_every(secs)).await;
        let admin = admin(&app).await;
        let (course, code_id, _, client) = one_learner(&app, &admin).await;
        assert_eq!(open(&app, &client, &course, None).await.status(), 200);
        let revoked = post_json(
            &app,
            &admin.client,
            &format!("/api/v1/codes/{code_id}/revoke"),
            json!({}),
        )
        .await;
        assert_eq!(revoked.status(), 200);
        let response = fetch(&app, &client, &course, Some("bytes=0-1")).await;
        assert_eq!(response.status(), after_revoke, "recheck {secs} s");
        // Opening again always asks PostgreSQL: refused at once.
        let reopened = open(&app, &client, &course, None).await;
        assert_eq!(error_of(reopened).await, (409, "code_revoked".into()));
    }
}

/// After a revoke, an unbind, a pause or "sign out everywhere" (from
/// another device), the next Range request after the documented bound is
/// refused.
#[sqlx::test(migrations = "../migrations")]
async fn the_bytes_stop_within_the_bound_after_revoke_unbind_pause_and_sign_out(pool: PgPool) {
    let app = spawn_app_with(pool, rechecking_every(1)).await;
    let admin = admin(&app).await;
    for action in ["revoke", "unbind", "pause", "sign out everywhere"] {
        let (course, code_id, learner, client) = one_learner(&app, &admin).await;
        assert_eq!(open(&app, &client, &course, None).await.status(), 200);
        assert_eq!(
            fetch(&app, &client, &course, Some("bytes=0-1"))
                .await
                .status(),
            206,
            "{action}: streaming"
        );
        let expected = match action {
            "revoke" => {
                let r = post_json(
                    &app,
                    &admin.client,
                    &format!("/api/v1/codes/{code_id}/revoke"),
                    json!({}),
                )
                .await;
                assert_eq!(r.status(), 200);
                (409, "code_revoked")
            }
            "unbind" => {
                let r = post_json(
                    &app,
                    &admin.client,
                    &format!("/api/v1/codes/{code_id}/unbind"),
                    json!({ "reason": "moved" }),
                )
                .await;
                assert_eq!(r.status(), 200);
                (403, "code_required")
            }
            "pause" => {
                let r = post_json(
                    &app,
                    &admin.client,
                    &format!("/api/v1/shares/{}/status", course.share),
                    json!({ "status": "paused" }),
                )
                .await;
                assert_eq!(r.status(), 200);
                (403, "share_unavailable")
            }
            _ => {
                sign_out_everywhere(&app, learner).await;
                (401, "unauthenticated")
            }
        };
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let response = fetch(&app, &client, &course, Some("bytes=0-1")).await;
        let (status, code) = error_of(response).await;
        assert_eq!((status, code.as_str()), expected, "{action}");
    }
}

/// The bytes route is limited per account: past the limit, 429 with
/// `Retry-After`, and another learner is unaffected.
#[sqlx::test(migrations = "../migrations")]
async fn the_bytes_are_limited_per_account(pool: PgPool) {
    let mut settings = load_settings();
    settings.throttle.content_per_account_per_minute = 5;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;
    // `open` fetches the bytes once: four more are allowed.
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    for _ in 0..4 {
        assert_eq!(fetch(&app, &client, &course, None).await.status(), 200);
    }
    let refused = fetch(&app, &client, &course, None).await;
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(error_of(refused).await, (429, "rate_limited".into()));

    let (other_course, _, _, other) = one_learner(&app, &admin).await;
    assert_eq!(open(&app, &other, &other_course, None).await.status(), 200);
}

/// An opening (`POST …/open`) is one call to PostgreSQL: the settlement
/// checks the session, the share and the resource itself, and this
/// instance remembers a share by link name (`service::recent_shares`).
/// None of that may delay a change: each one below is seen by the very
/// next opening, and a refused opening writes nothing.
#[sqlx::test(migrations = "../migrations")]
async fn an_opening_sees_every_change_at_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let status = |share: Uuid, status: &'static str| {
        let (app, admin) = (&app, &admin);
        async move {
            let r = post_json(
                app,
                &admin.client,
                &format!("/api/v1/shares/{share}/status"),
                json!({ "status": status }),
            )
            .await;
            assert_eq!(r.status(), 200, "{status}");
        }
    };

    // Pause and resume: refused at once, open again at once.
    let (course, _, _, client) = one_learner(&app, &admin).await;
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    status(course.share, "paused").await;
    let refused = open(&app, &client, &course, None).await;
    assert_eq!(error_of(refused).await, (403, "share_unavailable".into()));
    status(course.share, "active").await;
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);

    // Archived: the share no longer exists for learners.
    status(course.share, "archived").await;
    let gone = open(&app, &client, &course, None).await;
    assert_eq!(error_of(gone).await.0, 404);
    assert_eq!(state_of(&app, course.share).await.records, 1);

    // A resource that is not the share's: 404, and the pending code stays
    // pending for the real one.
    let (course, _, _, client) = one_learner(&app, &admin).await;
    let elsewhere = Course {
        resource: Uuid::now_v7(),
        ..course.clone()
    };
    let missing = open(&app, &client, &elsewhere, None).await;
    assert_eq!(error_of(missing).await.0, 404);
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );
    assert_eq!(
        open(&app, &client, &course, None).await.headers()["x-admitone-access"],
        "bound"
    );

    // "Sign out everywhere" and a disabled account end the session at the
    // next opening, before anything is counted. ("disabled in place": an
    // operator's UPDATE that leaves the session epoch alone; the settlement
    // still refuses, and the session still ends.)
    for action in ["sign out everywhere", "disable", "disabled in place"] {
        let (course, _, learner, client) = one_learner(&app, &admin).await;
        assert_eq!(open(&app, &client, &course, None).await.status(), 200);
        match action {
            "disable" => {
                engine::accounts::disable(&app.pool, engine::accounts::AccountId(learner))
                    .await
                    .expect("disable");
            }
            "disabled in place" => {
                sqlx::query("UPDATE accounts SET disabled_at = now() WHERE id = $1")
                    .bind(learner)
                    .execute(&app.pool)
                    .await
                    .expect("disable in place");
            }
            _ => sign_out_everywhere(&app, learner).await,
        }
        // A new request id: a new access would be counted if it got in.
        sqlx::query("UPDATE access_records SET expires_at = now() WHERE share_id = $1")
            .bind(course.share)
            .execute(&app.pool)
            .await
            .expect("end the grant");
        let refused = open(&app, &client, &course, None).await;
        assert_eq!(
            error_of(refused).await,
            (401, "unauthenticated".into()),
            "{action}"
        );
        if action == "disabled in place" {
            // The session was ended, not only refused: enabled again, the
            // account's old session still opens nothing.
            sqlx::query("UPDATE accounts SET disabled_at = NULL WHERE id = $1")
                .bind(learner)
                .execute(&app.pool)
                .await
                .expect("enable");
            let after = open(&app, &client, &course, None).await;
            assert_eq!(error_of(after).await.0, 401, "the session ended");
        }
        let (records, count): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM access_records WHERE share_id = $1),
                    (SELECT coalesce(sum(access_count), 0)::bigint FROM auth_codes WHERE share_id = $1)",
        )
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("state");
        assert_eq!((records, count), (1, 1), "{action}: nothing counted");
    }
}
