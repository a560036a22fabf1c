//! Access periods: a share may give each learner access for a number of
//! days from their first access. Time passing is simulated by moving a
//! binding's first access back in SQL: a test does not wait for the clock.
//! Shared here: a course with bound learners, and ageing a binding.

mod ending;
mod extensions;

use serde_json::json;
use uuid::Uuid;

use crate::support::app::TestApp;
use crate::support::course::{Admin, Course, course, enter_code, issue, learners, open};

/// Moves a binding's first access `days` back, as time passing would.
async fn age_binding(app: &TestApp, code: Uuid, days: i32) {
    sqlx::query(
        "UPDATE auth_codes SET first_used_at = first_used_at - make_interval(days => $2) WHERE id = $1",
    )
    .bind(code)
    .bind(days)
    .execute(&app.pool)
    .await
    .expect("age the binding");
}

/// A course giving 30 days of access, and `n` learners each bound with
/// their own code: (course, [(code id, client)], the codes as typed).
async fn course_with_learners(
    app: &TestApp,
    admin: &Admin,
    n: usize,
) -> (Course, Vec<(Uuid, reqwest::Client)>, Vec<String>) {
    let course = course(app, admin, json!({ "access_days": 30 })).await;
    let codes = issue(app, admin, course.share, n).await;
    let mut bound = Vec::new();
    let mut plain = Vec::new();
    for ((code_id, code), (_, client)) in codes.into_iter().zip(learners(app, n).await) {
        assert_eq!(
            enter_code(app, &client, &course.slug, &code).await.status(),
            200
        );
        assert_eq!(open(app, &client, &course, None).await.status(), 200);
        bound.push((code_id, client));
        plain.push(code);
    }
    (course, bound, plain)
}
