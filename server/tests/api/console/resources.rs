//! A share's resources: uploaded (refused past the size limit, leaving
//! nothing), renamed, reordered, previewed and removed without losing the
//! access records that name them.

use serde_json::json;
use sqlx::PgPool;

use super::call;
use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    admin, course, enter_code, error_of, issue, learners, load_settings, open, post_json,
};

#[sqlx::test(migrations = "../migrations")]
async fn resources_are_renamed_reordered_previewed_and_removed_without_losing_records(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let second = crate::support::course::upload(
        &app,
        &admin,
        course.share,
        "Second",
        "text/html",
        b"<p>two</p>".to_vec(),
    )
    .await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let titles = |app: &TestApp| {
        let pool = app.pool.clone();
        let share = course.share;
        async move {
            sqlx::query_scalar::<_, String>(
                "SELECT title FROM resources WHERE share_id = $1 AND deleted_at IS NULL ORDER BY position, id",
            )
            .bind(share)
            .fetch_all(&pool)
            .await
            .expect("titles")
        }
    };
    let first = course.resource.to_string();
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/resources/rename",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("resource_id", &first),
            ("title", "Lesson one"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/resources/move",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("resource_id", &second.to_string()),
            ("direction", "up"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(titles(&app).await, vec!["Second", "Lesson one"]);
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/resources/rename",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("resource_id", &first),
            ("title", " "),
        ],
    )
    .await;
    assert_eq!(status, 422, "{body}");

    // Admins preview without a code; learners cannot use the preview.
    let preview = format!(
        "{}/admin/t/{tenant}/s/{share}/r/{second}/preview",
        app.address
    );
    let response = admin.client.get(&preview).send().await.expect("preview");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.expect("body"), "<p>two</p>");

    // A learner opens the first resource: removing it now needs `force`.
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    assert_eq!(
        learner
            .get(&preview)
            .send()
            .await
            .expect("preview")
            .status(),
        403
    );
    let delete = |force: Option<&'static str>| {
        let mut fields = vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("resource_id", first.clone()),
        ];
        if let Some(force) = force {
            fields.push(("force", force.to_owned()));
        }
        fields
    };
    let refused = delete(None);
    let refused: Vec<(&str, &str)> = refused.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = call(&app, &admin, "/api/admin/resources/delete", &refused).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("remove anyway"), "{body}");
    assert_eq!(titles(&app).await.len(), 2, "nothing removed");
    let forced = delete(Some("on"));
    let forced: Vec<(&str, &str)> = forced.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _) = call(&app, &admin, "/api/admin/resources/delete", &forced).await;
    assert_eq!(status, 200);
    assert_eq!(titles(&app).await, vec!["Second"]);
    // Its access record is kept; the learner cannot open it any more.
    let records: i64 =
        sqlx::query_scalar("SELECT count(*) FROM access_records WHERE resource_id = $1")
            .bind(course.resource)
            .fetch_one(&app.pool)
            .await
            .expect("records");
    assert_eq!(records, 1);
    assert_eq!(open(&app, &learner, &course, None).await.status(), 404);
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action IN ('resource.renamed', 'resource.moved', 'resource.deleted')",
    )
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audited, 3);
}

/// Uploads past the configured limit are refused with 413 and leave nothing.
#[sqlx::test(migrations = "../migrations")]
async fn oversized_uploads_are_refused_and_leave_nothing(pool: PgPool) {
    let mut settings = load_settings();
    settings.storage.max_upload_bytes = 1_000;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let share = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/tenants/{}/shares", admin.tenant),
        json!({ "title": "Small" }),
    )
    .await;
    let share: serde_json::Value = share.json().await.expect("json");
    let part = reqwest::multipart::Part::bytes(vec![1u8; 5_000]).file_name("big.bin");
    let response = admin
        .client
        .post(format!(
            "{}/api/v1/shares/{}/resources",
            app.address,
            share["id"].as_str().expect("id")
        ))
        .multipart(
            reqwest::multipart::Form::new()
                .text("title", "Big")
                .part("file", part),
        )
        .send()
        .await
        .expect("upload");
    assert_eq!(error_of(response).await, (413, "too_large".into()));
    let resources: i64 = sqlx::query_scalar("SELECT count(*) FROM resources")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(resources, 0);
}
