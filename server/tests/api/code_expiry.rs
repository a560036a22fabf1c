//! Code expiry (issue 17): an unused code past its date (its own, else its
//! batch's) is refused like a revoked one, with its own error; a code bound
//! before its date keeps working. The settlement decides inside its
//! transaction (the trigger on the binding), so a code typed in before its
//! date and opened after it is refused too. Admins set dates at issuing and
//! later, per batch and per code (API and console), never in the past.
//!
//! Time passing is simulated by moving a stored date into the past in SQL:
//! the product refuses past dates, and a test does not wait for the clock.
//! One exception: a retried issuing compares the date its client sent
//! again, which no row holds, so that test waits two seconds and a half.

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, learners, open};

/// The reconciler finds a binding made after its code's date (planted
/// behind the trigger's back) and nothing in a clean database.
#[sqlx::test(migrations = "../migrations")]
async fn the_reconciler_finds_a_code_bound_after_its_date(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, learner) = learners(&app, 1).await.remove(0);
    enter_code(&app, &learner, &course.slug, &codes[0].1).await;
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    const CHECK: &str = "no code was bound after its expiry date";
    let found = |checks: Vec<engine::invariants::Check>| {
        checks
            .into_iter()
            .find(|c| c.name == CHECK)
            .expect("the check runs")
            .violations
    };
    let clean = engine::invariants::check_all(&app.pool)
        .await
        .expect("checks");
    assert_eq!(found(clean), 0);
    sqlx::query(
        "UPDATE auth_codes SET expires_at = first_used_at - interval '1 day' WHERE id = $1",
    )
    .bind(codes[0].0)
    .execute(&app.pool)
    .await
    .expect("plant");
    let planted = engine::invariants::check_all(&app.pool)
        .await
        .expect("checks");
    assert_eq!(found(planted), 1);
}
