//! What a learner is refused, and that a refusal changes nothing: a paused,
//! closed (outside its window), exhausted or archived course; a revoked
//! code, refused at code entry, at the opening, to a replayed request id and
//! on the bytes once the grant is checked again; an unbound code; a session
//! ended by "sign out everywhere" or a disabled account. An opening sees
//! each change at once; the bytes within `settlement.grant_recheck_secs`.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, spawn_app_with};
use crate::support::course::{
    self, Course, ShareState, admin, assert_invariants, enter_code, error_of, fetch, issue,
    learners, load_settings, one_learner, open, post_json, state_of,
};

/// Paused, closed, exhausted and revoked: refused with the right error and
/// no state change.
#[sqlx::test(migrations = "../migrations")]
async fn unavailable_shares_and_revoked_codes_are_refused_without_change(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 2).await;
    let (a, b) = (&people[0].1, &people[1].1);

    // Paused after the code was entered.
    let paused = course::course(&app, &admin, json!({})).await;
    let code = issue(&app, &admin, paused.share, 1).await.remove(0).1;
    assert_eq!(enter_code(&app, a, &paused.slug, &code).await.status(), 200);
    let r = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/status", paused.share),
        json!({"status": "paused"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        error_of(open(&app, a, &paused, None).await).await,
        (403, "share_unavailable".into())
    );
    assert_eq!(
        error_of(enter_code(&app, b, &paused.slug, &code).await).await,
        (403, "share_unavailable".into())
    );
    assert_eq!(
        state_of(&app, paused.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );

    // Outside its window.
    let closed = course::course(
        &app,
        &admin,
        json!({
            "valid_from": "2020-01-01T00:00:00Z", "valid_until": "2020-02-01T00:00:00Z",
        }),
    )
    .await;
    let code = issue(&app, &admin, closed.share, 1).await.remove(0).1;
    assert_eq!(
        error_of(enter_code(&app, a, &closed.slug, &code).await).await,
        (403, "share_unavailable".into())
    );
    assert_eq!(
        error_of(open(&app, a, &closed, None).await).await,
        (403, "share_unavailable".into())
    );
    assert_eq!(
        state_of(&app, closed.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );

    // Quota of one: the second learner is refused, and not bound.
    let small = course::course(&app, &admin, json!({ "quota": 1 })).await;
    let codes = issue(&app, &admin, small.share, 2).await;
    assert_eq!(
        enter_code(&app, a, &small.slug, &codes[0].1).await.status(),
        200
    );
    assert_eq!(
        enter_code(&app, b, &small.slug, &codes[1].1).await.status(),
        200
    );
    assert_eq!(open(&app, a, &small, None).await.status(), 200);
    assert_eq!(
        error_of(open(&app, b, &small, None).await).await,
        (403, "quota_exhausted".into())
    );
    assert_eq!(
        state_of(&app, small.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );

    // A revoked code can be neither entered nor used.
    let revoked = course::course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, revoked.share, 2).await;
    assert_eq!(
        enter_code(&app, a, &revoked.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    let r = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/revoke", codes[0].0),
        json!({}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        error_of(open(&app, a, &revoked, None).await).await,
        (409, "code_revoked".into())
    );
    assert_eq!(
        error_of(enter_code(&app, b, &revoked.slug, &codes[0].1).await).await,
        (409, "code_revoked".into())
    );
    assert_eq!(
        state_of(&app, revoked.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );

    // A code of another share.
    assert_eq!(
        error_of(enter_code(&app, b, &revoked.slug, &code).await).await,
        (422, "wrong_share".into())
    );
    assert_invariants(&app, "refusals").await;
}

/// A replayed request id answers only while its result still holds:
/// never after the code was revoked or unbound.
#[sqlx::test(migrations = "../migrations")]
async fn a_replayed_request_id_never_outlives_revocation_or_unbinding(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 2).await;
    for revoke in [true, false] {
        let course = course::course(&app, &admin, json!({})).await;
        let (code_id, code) = issue(&app, &admin, course.share, 1).await.remove(0);
        let client = &people[0].1;
        assert_eq!(
            enter_code(&app, client, &course.slug, &code).await.status(),
            200
        );
        let key = Uuid::new_v4().to_string();
        assert_eq!(open(&app, client, &course, Some(&key)).await.status(), 200);
        assert_eq!(
            open(&app, client, &course, Some(&key)).await.headers()["x-admitone-access"],
            "replayed"
        );
        let action = if revoke {
            post_json(
                &app,
                &admin.client,
                &format!("/api/v1/codes/{code_id}/revoke"),
                json!({}),
            )
            .await
        } else {
            post_json(
                &app,
                &admin.client,
                &format!("/api/v1/codes/{code_id}/unbind"),
                json!({ "reason": "moved" }),
            )
            .await
        };
        assert_eq!(action.status(), 200);
        let expected = if revoke {
            (409, "code_revoked".to_owned())
        } else {
            (403, "code_required".to_owned())
        };
        assert_eq!(
            error_of(open(&app, client, &course, Some(&key)).await).await,
            expected,
            "revoke={revoke}"
        );
    }
    assert_invariants(&app, "replays").await;
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
