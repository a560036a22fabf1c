//! Editing a share: limits never go below what is used and the link name
//! stays once codes exist; a taken link name is one field error through the
//! API and the console; saving a form or a `PUT` keeps a status another
//! admin changed meanwhile (a pause is not undone).

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use super::call;
use crate::support::app::{new_client, redis_url, spawn_app, spawn_app_with, test_settings};
use crate::support::course::{admin, course, enter_code, issue, learners, open};
use crate::support::tokens::create_token;

#[sqlx::test(migrations = "../migrations")]
async fn limits_never_go_below_use_and_links_stay_once_codes_exist(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "quota": 10 })).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    for ((_, learner), (_, code)) in learners(&app, 2).await.iter().zip(&codes) {
        assert_eq!(
            enter_code(&app, learner, &course.slug, code).await.status(),
            200
        );
        assert_eq!(open(&app, learner, &course, None).await.status(), 200);
    }
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let update = |slug: &str, limit: &'static str, quota: &'static str| {
        vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("title", "Rust in Depth".to_owned()),
            ("slug", slug.to_owned()),
            ("description", String::new()),
            ("status", "active".to_owned()),
            ("valid_from", String::new()),
            ("valid_until", String::new()),
            ("per_learner_limit", limit.to_owned()),
            ("quota", quota.to_owned()),
        ]
    };
    for (fields, field) in [
        (update(&course.slug, "", "1"), "quota"),
        (update(&course.slug, "", ""), ""),
        (update("another-link", "", ""), "slug"),
    ] {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = call(&app, &admin, "/api/admin/share/update", &fields).await;
        if field.is_empty() {
            assert_eq!(status, 200, "{body}");
            continue;
        }
        assert_eq!(status, 422, "{body}");
        let error: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(error["Invalid"]["field"], field, "{body}");
    }
    // A quota equal to what is used is allowed (below is not, above).
    let ok: Vec<(&str, String)> = update(&course.slug, "1", "2");
    let ok: Vec<(&str, &str)> = ok.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = call(&app, &admin, "/api/admin/share/update", &ok).await;
    assert_eq!(status, 200, "{body}");
    let broken = engine::invariants::violations(&app.pool)
        .await
        .expect("checks");
    assert!(
        broken.is_empty(),
        "no invariant broken by the edits: {broken:?}"
    );
}

/// A taken link name is the same answer through both doors: 422 with the
/// slug field, from the JSON API (`slug_taken`) and from the console's
/// server function, and nothing is created either way.
#[sqlx::test(migrations = "../migrations")]
async fn a_taken_link_name_is_one_field_error_through_the_api_and_the_console(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let existing = course(&app, &admin, json!({})).await;
    let response = crate::support::course::post_json(
        &app,
        &admin.client,
        &format!("/api/v1/tenants/{}/shares", admin.tenant),
        json!({ "title": "Another", "slug": existing.slug }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["code"], "slug_taken", "{body}");
    assert_eq!(body["field"], "slug", "{body}");
    let tenant = admin.tenant.to_string();
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/share/create",
        &[
            ("tenant_id", &tenant),
            ("title", "Another"),
            ("slug", &existing.slug),
        ],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(error["Invalid"]["field"], "slug", "{body}");
    let shares: i64 = sqlx::query_scalar("SELECT count(*) FROM shares")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(shares, 1, "nothing created");
}

/// An admin saves the share's form they opened while it was active, after
/// another paused the course: the save keeps the pause (the form's status
/// was not touched), and a status the admin did choose is applied. The
/// failing test came first: the save made the paused course active again.
#[sqlx::test(migrations = "../migrations")]
async fn saving_the_share_form_keeps_a_pause_made_since_it_was_opened(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "Rust 101" })).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let form = |status: &'static str, seen: &'static str, title: &'static str| {
        vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("title", title.to_owned()),
            ("slug", course.slug.clone()),
            ("description", String::new()),
            ("status", status.to_owned()),
            ("status_seen", seen.to_owned()),
            ("valid_from", String::new()),
            ("valid_until", String::new()),
            ("per_learner_limit", String::new()),
            ("quota", String::new()),
        ]
    };
    let status_of = || async {
        sqlx::query_scalar::<_, String>("SELECT status::text FROM shares WHERE id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("status")
    };
    let save = |fields: Vec<(&'static str, String)>| {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/share/update", app.address);
        async move {
            let response = client.post(url).form(&fields).send().await.expect("save");
            assert_eq!(
                response.status(),
                200,
                "{}",
                response.text().await.unwrap_or_default()
            );
        }
    };
    // Another admin pauses it meanwhile (the API's status call).
    let paused = admin
        .client
        .post(format!(
            "{}/api/v1/shares/{}/status",
            app.address, course.share
        ))
        .json(&json!({ "status": "paused" }))
        .send()
        .await
        .expect("pause");
    assert_eq!(paused.status(), 200);
    // The form opened while active, its status untouched: the pause stays,
    // the other change is saved.
    save(form("active", "active", "Rust 101, revised")).await;
    assert_eq!(status_of().await, "paused");
    let title: String = sqlx::query_scalar("SELECT title FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("title");
    assert_eq!(title, "Rust 101, revised");
    // Chosen in the form: applied, whatever it was.
    save(form("active", "paused", "Rust 101, revised")).await;
    assert_eq!(status_of().await, "active");
    save(form("archived", "active", "Rust 101, revised")).await;
    assert_eq!(status_of().await, "archived");
}

/// `PUT /shares/{id}` without `status` keeps the status the share has when
/// the update takes its lock, not one read before: a pause committed while
/// the update waits for the row is not undone.
#[sqlx::test(migrations = "../migrations")]
async fn a_settings_update_keeps_a_status_changed_while_it_waited(pool: PgPool) {
    let mut settings = test_settings(&redis_url());
    // The update waits for the row as long as this test needs.
    settings.database.lock_timeout_ms = 60_000;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let token = create_token(&app, &admin, &["read", "write"]).await;
    let course = crate::support::course::course(&app, &admin, json!({})).await;
    // Another writer holds the share's row.
    let mut other = app.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM shares WHERE id = $1 FOR UPDATE")
        .bind(course.share)
        .execute(&mut *other)
        .await
        .expect("lock");
    let put = {
        let address = app.address.clone();
        let token = token.clone();
        let share = course.share;
        tokio::spawn(async move {
            new_client()
                .put(format!("{address}/api/v1/shares/{share}"))
                .bearer_auth(token)
                .json(&json!({ "title": "Renamed", "slug": "" }))
                .send()
                .await
                .expect("put")
                .status()
        })
    };
    // Once the update waits for the row, the other writer pauses the share.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query ILIKE '%FROM shares%FOR UPDATE%'
               AND datname = current_database()",
        )
        .fetch_one(&app.pool)
        .await
        .expect("activity");
        if waiting > 0 {
            break;
        }
        assert!(!put.is_finished(), "the update did not wait for the row");
        assert!(
            std::time::Instant::now() < deadline,
            "the update never waited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sqlx::query("UPDATE shares SET status = 'paused' WHERE id = $1")
        .bind(course.share)
        .execute(&mut *other)
        .await
        .expect("pause");
    other.commit().await.expect("commit");
    assert_eq!(put.await.expect("task"), 200);
    let (title, status): (String, String) =
        sqlx::query_as("SELECT title, status FROM shares WHERE id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("share");
    assert_eq!(title, "Renamed");
    assert_eq!(status, "paused", "the pause was undone");
    let slug: String = sqlx::query_scalar("SELECT slug FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("slug");
    assert_eq!(slug, course.slug, "an empty slug keeps the link");
}
