//! "My courses": every course a learner holds a code for, across tenants.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, learners, open, post_json};
use crate::support::learner::page;

#[sqlx::test(migrations = "../migrations")]
async fn my_courses_lists_every_binding_across_tenants(pool: PgPool) {
    let app = spawn_app(pool).await;
    let first_admin = admin(&app).await;
    let second_admin = admin(&app).await;
    let rust = course(&app, &first_admin, json!({ "title": "Rust" })).await;
    let go = course(&app, &second_admin, json!({ "title": "Go" })).await;
    let other = course(&app, &second_admin, json!({ "title": "Untouched" })).await;
    let (_, client) = learners(&app, 1).await.remove(0);

    let (_, html) = page(&app, &client, "/courses").await;
    assert!(html.contains("You have no courses yet"), "{html}");

    for (admin, course) in [(&first_admin, &rust), (&second_admin, &go)] {
        let code = issue(&app, admin, course.share, 1).await.remove(0).1;
        assert_eq!(
            enter_code(&app, &client, &course.slug, &code)
                .await
                .status(),
            200
        );
        assert_eq!(open(&app, &client, course, None).await.status(), 200);
    }
    // The provider pauses one: it stays listed, with a note.
    let paused = post_json(
        &app,
        &second_admin.client,
        &format!("/api/v1/shares/{}/status", go.share),
        json!({ "status": "paused" }),
    )
    .await;
    assert_eq!(paused.status(), 200);

    let (status, html) = page(&app, &client, "/courses").await;
    assert_eq!(status, 200);
    assert!(
        html.contains(&format!(r#"href="/s/{}""#, rust.slug)),
        "{html}"
    );
    assert!(html.contains(">Go<"), "{html}");
    assert!(html.contains("Paused by the course provider"), "{html}");
    assert!(!html.contains("Untouched"), "{}", other.slug);

    let response = app
        .get_page_as(&crate::support::app::new_client(), "/courses")
        .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    assert_eq!(response.headers()["location"], "/login?next=/courses");
}
