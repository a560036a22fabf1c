//! Revocations racing the learner: random interleavings of binds, unbinds
//! and revocations keep the invariants, revoke-and-replace racing the
//! learner's own openings never refuses her as if she held no code, and
//! once a revoke racing openings has answered, no grant is handed out and
//! no access counted.

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::course::{
    self, Course, admin, assert_invariants, bound_course, enter_code, error_of, fetch, issue,
    learners, load_settings, open, open_only, post_json, repeats,
};

/// Any interleaving of binds, unbinds and revocations keeps the invariants.
#[sqlx::test(migrations = "../migrations")]
async fn random_interleavings_of_bind_unbind_and_revoke_keep_the_invariants(pool: PgPool) {
    use rand::{Rng as _, SeedableRng as _};
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 4).await;
    for seed in 0..repeats() as u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let course: Course = course::course(&app, &admin, json!({})).await;
        let codes = issue(&app, &admin, course.share, 5).await;
        for step in 0..6 {
            let ops = (0..6).map(|_| {
                let (_, client) = &people[rng.gen_range(0..people.len())];
                let (code_id, code) = &codes[rng.gen_range(0..codes.len())];
                let op = rng.gen_range(0..10);
                let (app, admin, course) = (&app, &admin, &course);
                async move {
                    match op {
                        // The bytes too: an admin may revoke or unbind
                        // the code between the opening and the bytes,
                        // and then they are refused, never a fault.
                        0..=5 => {
                            enter_code(app, client, &course.slug, code).await;
                            let opened = open_only(app, client, course, None).await.status();
                            if opened == 200 {
                                let bytes = fetch(app, client, course, None).await;
                                if bytes.status() != 200 {
                                    // Refused as the content route documents
                                    // it: the code revoked (409), or no
                                    // longer this learner's (403).
                                    let refused = error_of(bytes).await;
                                    assert!(
                                        matches!(
                                            (refused.0, refused.1.as_str()),
                                            (409, "code_revoked")
                                                | (403, "open_from_course_page" | "code_required")
                                        ),
                                        "the bytes after an opening: {refused:?}"
                                    );
                                }
                            }
                            opened.as_u16()
                        }
                        6..=7 => post_json(
                            app,
                            &admin.client,
                            &format!("/api/v1/codes/{code_id}/unbind"),
                            json!({ "reason": "learner changed account" }),
                        )
                        .await
                        .status()
                        .as_u16(),
                        _ => post_json(
                            app,
                            &admin.client,
                            &format!("/api/v1/codes/{code_id}/revoke"),
                            json!({}),
                        )
                        .await
                        .status()
                        .as_u16(),
                    }
                }
            });
            for status in join_all(ops).await {
                assert!(status < 500, "seed {seed} step {step}: {status}");
            }
            assert_invariants(&app, &format!("seed {seed} step {step}")).await;
        }
    }
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

/// A revoke racing sixteen openings (whose grant had ended, so each may
/// count): while it runs, an opening is granted, busy or told the code is
/// revoked; once the revoke has answered, no opening is granted and no
/// access is counted, on either device.
#[sqlx::test(migrations = "../migrations")]
async fn after_a_revoke_racing_openings_answers_no_grant_and_no_record_follow(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let owner = admin(&app).await;
    let (course, code, (ann, ann_client)) = bound_course(&app, &owner).await;
    let second_device = crate::support::app::new_client();
    app.login_as(
        &second_device,
        &format!("learner-{ann}@example.com"),
        course::PASSWORD,
    )
    .await;
    let devices = [ann_client, second_device];
    let wave = |tag: &'static str| {
        let devices = devices.clone();
        let course = &course;
        let app = &app;
        join_all((0..16).map(move |i| {
            let client = devices[i % 2].clone();
            async move {
                let response = open_only(app, &client, course, Some(&format!("{tag}-{i}"))).await;
                if response.status() == 200 {
                    (200, String::new())
                } else {
                    error_of(response).await
                }
            }
        }))
    };
    course::end_grants(&app, course.share).await;
    let revoke_path = format!("/api/v1/codes/{}/revoke", code.0);
    let revoke = post_json(&app, &owner.client, &revoke_path, json!({}));
    let (revoked, racing) = tokio::join!(revoke, wave("race"));
    assert_eq!(revoked.status(), 200);
    for answer in &racing {
        assert!(
            answer.0 == 200 || answer.1 == "busy" || answer.1 == "code_revoked",
            "granted, busy or revoked: {racing:?}"
        );
    }
    let records = course::state_of(&app, course.share).await.records;

    let after = wave("after").await;
    assert!(
        after
            .iter()
            .all(|answer| *answer == (409, "code_revoked".to_owned())),
        "nothing granted after the revoke: {after:?}"
    );
    course::end_grants(&app, course.share).await;
    let later = wave("later").await;
    assert!(
        later
            .iter()
            .all(|answer| *answer == (409, "code_revoked".to_owned())),
        "nor once every grant has run out: {later:?}"
    );
    assert_eq!(
        course::state_of(&app, course.share).await.records,
        records,
        "no access counted after the revoke answered"
    );
    assert_invariants(&app, "after the revoke").await;
}
