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

/// A buyer whose code a shop addressed to them (and mailed) is told the
/// course waits for them, until they redeem it: only under their verified
/// address, only for a live code of an active course they do not hold.
#[sqlx::test(migrations = "../migrations")]
async fn a_course_addressed_to_a_learner_waits_for_them(pool: PgPool) {
    use reqwest::Method;

    use crate::support::tokens::{as_token, create_token};

    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let rust = course(&app, &admin, json!({ "title": "Rust", "quota": null })).await;
    let token = create_token(&app, &admin, &["read", "write"]).await;
    let order = |id: &'static str, email: &'static str| {
        let (app, token, share) = (&app, &token, rust.share);
        async move {
            let (status, order) = as_token(
                app,
                token,
                Method::POST,
                &format!("/api/v1/shares/{share}/orders"),
                Some(json!({ "source": "shop", "order_id": id, "email": email, "mail": false })),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{order}");
            order["issued"][0]["code"]
                .as_str()
                .expect("code")
                .to_owned()
        }
    };
    let code = order("o-1", "ann@example.com").await;
    // Someone else's order waits for them, not for ann.
    let _ = order("o-2", "bob@example.com").await;
    let waiting = |client: reqwest::Client| {
        let app = &app;
        async move {
            let response = client
                .get(format!("{}/api/learner/waiting", app.address))
                .send()
                .await
                .expect("request");
            assert_eq!(response.status(), StatusCode::OK);
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let mut clients = learners(&app, 2).await;
    let (_, stranger) = clients.pop().expect("a learner");
    let (ann, client) = clients.pop().expect("a learner");
    sqlx::query("UPDATE accounts SET email = 'ann@example.com' WHERE id = $1")
        .bind(ann)
        .execute(&app.pool)
        .await
        .expect("her address");

    let listed = waiting(client.clone()).await;
    let hint = sqlx::query_scalar::<_, String>(
        "SELECT hint FROM auth_codes WHERE addressed_to = 'ann@example.com'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("her code's hint");
    assert_eq!(
        listed,
        json!([{ "slug": rust.slug, "title": "Rust", "provider": listed[0]["provider"],
                 "hint": hint, "email": "ann@example.com" }])
    );
    assert!(
        listed[0]["provider"]
            .as_str()
            .is_some_and(|p| !p.is_empty())
    );
    let (_, html) = page(&app, &client, "/courses").await;
    assert!(html.contains("Waiting for you"), "{html}");
    assert!(
        html.contains("A code for this course was sent to ann@example.com"),
        "{html}"
    );
    assert_eq!(
        waiting(stranger).await,
        json!([]),
        "nothing waits for others"
    );

    // Her address unverified: nothing is said about what was sent to it.
    sqlx::query("UPDATE accounts SET email_verified_at = NULL WHERE id = $1")
        .bind(ann)
        .execute(&app.pool)
        .await
        .expect("unverified");
    assert_eq!(waiting(client.clone()).await, json!([]));
    sqlx::query("UPDATE accounts SET email_verified_at = now() WHERE id = $1")
        .bind(ann)
        .execute(&app.pool)
        .await
        .expect("verified");

    // Redeemed: it no longer waits; it is one of her courses.
    assert_eq!(
        enter_code(&app, &client, &rust.slug, &code).await.status(),
        200
    );
    assert_eq!(open(&app, &client, &rust, None).await.status(), 200);
    assert_eq!(waiting(client.clone()).await, json!([]));
    let (_, html) = page(&app, &client, "/courses").await;
    assert!(!html.contains("Waiting for you"), "{html}");
}
