//! Leak alerts and "revoke and replace" (issue 17), on real PostgreSQL,
//! Redis and SMTP: a bound code other accounts keep trying reaches the
//! tenant's owners (a mail each, a `code.leak_suspected` event) once per
//! code per day, however many tries arrive at once; revoking and replacing
//! it stops the leaked text and keeps the rightful learner's access under
//! a new code, bound to them in the same transaction.

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::course::{admin, assert_invariants, bound_course, open, post_json};

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
