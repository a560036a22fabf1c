//! A share's learners and their access records: the learners page (its
//! pages end exactly with the last learner), the records one click away,
//! the leak signal on the dashboard, and the learners and records as CSV,
//! from the console and with an API token (every learner, past one page of
//! the query).

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::console::{csv_rows, page};
use crate::support::course::{admin, course, enter_code, issue, learners, open, upload};
use crate::support::tokens::{create_token, get_as};

#[sqlx::test(migrations = "../migrations")]
async fn learners_records_csv_and_the_leak_signal(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "Watched" })).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let mut clients = learners(&app, 3).await;
    let (owner_id, owner) = clients.remove(0);
    assert_eq!(
        enter_code(&app, &owner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &owner, &course, None).await.status(), 200);
    // Two other accounts try the bound code three times in all.
    for (i, (_, other)) in clients.iter().enumerate() {
        for _ in 0..=i {
            let response = enter_code(&app, other, &course.slug, &codes[0].1).await;
            assert_eq!(response.status(), 409);
        }
    }
    let (attempts, last): (i32, Option<time::OffsetDateTime>) = sqlx::query_as(
        "SELECT foreign_attempts, last_foreign_attempt_at FROM auth_codes WHERE id = $1",
    )
    .bind(codes[0].0)
    .fetch_one(&app.pool)
    .await
    .expect("leak signal");
    assert_eq!(attempts, 3);
    assert!(last.is_some());
    let (_, dashboard) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}", admin.tenant),
    )
    .await;
    assert!(
        dashboard.contains("Codes other accounts keep trying"),
        "{dashboard}"
    );
    assert!(dashboard.contains(r#"<tr class="leak">"#));

    // The learners page lists the owner; their records are one click away.
    let learners_page = format!("/admin/t/{}/s/{}/learners", admin.tenant, course.share);
    let (status, html) = page(&app.address, &admin.client, &learners_page).await;
    assert_eq!(status, 200);
    assert!(html.contains(&format!("?learner={owner_id}")), "{html}");
    let (_, records) = page(
        &app.address,
        &admin.client,
        &format!("{learners_page}?learner={owner_id}"),
    )
    .await;
    assert!(records.contains("first access: code bound"), "{records}");

    // The CSV export: a header and one line per access record.
    let csv = admin
        .client
        .get(format!(
            "{}/admin/t/{}/s/{}/records.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("csv");
    assert_eq!(csv.status(), 200);
    let body = csv.text().await.expect("body");
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(
        lines[0],
        "\u{feff}granted_at,email,code_hint,resource,bound_now"
    );
    assert_eq!(lines.len(), 2, "{body}");
    assert!(lines[1].ends_with(",Lesson 1,true"), "{}", lines[1]);
    // Learners cannot export.
    let response = owner
        .get(format!(
            "{}/admin/t/{}/s/{}/records.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("csv as learner");
    assert_eq!(response.status(), 403);
}

/// The learners page ends exactly with the last learner, likewise.
#[sqlx::test(migrations = "../migrations")]
async fn learner_pages_end_exactly_with_the_last_learner(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 101).await;
    // Bind `n` of them, one account each (set up in SQL: the page is what
    // is tested).
    let bind = |n: i64| {
        sqlx::query(
            "WITH people AS (
                 INSERT INTO accounts (id, email, display_name, password_hash)
                 SELECT gen_random_uuid(), gen_random_uuid() || '@example.com', 'L', 'x'
                 FROM generate_series(1, $2) RETURNING id),
             numbered AS (SELECT id, row_number() OVER () AS n FROM people),
             free AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM auth_codes
                      WHERE share_id = $1 AND bound_principal IS NULL)
             UPDATE auth_codes c SET bound_principal = numbered.id, first_used_at = now()
             FROM numbered JOIN free ON free.n = numbered.n WHERE c.id = free.id",
        )
        .bind(course.share)
        .bind(n)
    };
    bind(100).execute(&app.pool).await.expect("bind");
    let page = |after: Option<String>| {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/learners", app.address);
        let mut query = vec![
            ("tenant_id", admin.tenant.to_string()),
            ("share_id", course.share.to_string()),
        ];
        if let Some(after) = after {
            query.push(("after", after));
        }
        async move {
            let response = client
                .get(url)
                .query(&query)
                .send()
                .await
                .expect("learners");
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let only = page(None).await;
    assert_eq!(only["learners"].as_array().map(Vec::len), Some(100));
    assert_eq!(
        only["next_after"],
        serde_json::Value::Null,
        "no empty next page"
    );
    bind(1).execute(&app.pool).await.expect("bind");
    let first = page(None).await;
    let next = first["next_after"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = page(Some(next)).await;
    assert_eq!(second["learners"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["next_after"], serde_json::Value::Null);
}

#[sqlx::test(migrations = "../migrations")]
async fn learners_and_records_download_as_csv_with_a_token(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    // A title a spreadsheet would run as a formula.
    upload(
        &app,
        &admin,
        course.share,
        "=SUM(A1)",
        "video/mp4",
        b"x".to_vec(),
    )
    .await;
    let reader = create_token(&app, &admin, &["read"]).await;
    let stranger = create_token(&app, &crate::support::course::admin(&app).await, &["read"]).await;
    let codes = crate::support::course::issue(&app, &admin, course.share, 2).await;
    let (_, learner) = learners(&app, 1).await.pop().expect("learner");
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let formula: Uuid = sqlx::query_scalar("SELECT id FROM resources WHERE title = '=SUM(A1)'")
        .fetch_one(&app.pool)
        .await
        .expect("resource");
    let formula = crate::support::course::Course {
        resource: formula,
        ..course.clone()
    };
    assert_eq!(open(&app, &learner, &formula, None).await.status(), 200);
    let email: String = sqlx::query_scalar(
        "SELECT a.email FROM accounts a JOIN auth_codes c ON c.bound_principal = a.id WHERE c.id = $1",
    )
    .bind(codes[0].0)
    .fetch_one(&app.pool)
    .await
    .expect("email");

    let share = course.share;
    let rows = csv_rows(
        get_as(
            &app,
            &reader,
            &format!("/api/v1/shares/{share}/learners.csv"),
        )
        .await,
        "email,code_hint,bound_at,accesses,last_access,suspended,access_ends",
    )
    .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let fields: Vec<&str> = rows[0].split(',').collect();
    assert_eq!(fields[0], email);
    assert_eq!((fields[3], fields[5]), ("2", "false"), "{rows:?}");
    assert_eq!(fields[6], "", "access for good: no end, {rows:?}");
    assert!(!fields[4].is_empty(), "last access: {rows:?}");

    let rows = csv_rows(
        get_as(
            &app,
            &reader,
            &format!("/api/v1/shares/{share}/records.csv"),
        )
        .await,
        "granted_at,email,code_hint,resource,bound_now",
    )
    .await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r.contains(&email)), "{rows:?}");
    // Newest first; `bound_now` marks the access that bound the code.
    assert!(
        rows[0].ends_with(",'=SUM(A1),false"),
        "a formula is defused: {rows:?}"
    );
    assert!(rows[1].ends_with(",Lesson 1,true"), "{rows:?}");

    for path in [
        format!("/api/v1/shares/{share}/learners.csv"),
        format!("/api/v1/shares/{share}/records.csv"),
    ] {
        let refused = get_as(&app, &stranger, &path).await;
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{path}");
        assert_eq!(
            refused.headers()["content-type"],
            "application/problem+json",
            "{path}"
        );
    }
    // The console offers the same learners file.
    let console = admin
        .client
        .get(format!(
            "{}/admin/t/{}/s/{share}/learners.csv",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("console csv");
    let console_rows = csv_rows(
        console,
        "email,code_hint,bound_at,accesses,last_access,suspended,access_ends",
    )
    .await;
    assert_eq!(console_rows.len(), 1);
    assert!(console_rows[0].starts_with(&email));
}

/// The learners CSV holds every learner, past one page of the query
/// (whose pages are at most 500 rows): 1,203 learners, 1,203 rows.
#[sqlx::test(migrations = "../migrations")]
async fn the_learners_csv_holds_every_learner_past_a_page(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let reader = create_token(&app, &admin, &["read"]).await;
    let learners = 1_203;
    let codes = crate::support::course::issue(&app, &admin, course.share, learners).await;
    // Learners bound directly in SQL (a binding through the API is what
    // the other tests do; here only the count matters).
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
         SELECT c.id, 'bulk-' || c.id || '@example.com', 'Bulk', 'x', now()
         FROM unnest($1::uuid[]) AS c(id)",
    )
    .bind(codes.iter().map(|(id, _)| *id).collect::<Vec<_>>())
    .execute(&app.pool)
    .await
    .expect("accounts");
    sqlx::query(
        "UPDATE auth_codes SET bound_principal = id, first_used_at = now()
         WHERE share_id = $1",
    )
    .bind(course.share)
    .execute(&app.pool)
    .await
    .expect("bind");
    let rows = csv_rows(
        get_as(
            &app,
            &reader,
            &format!("/api/v1/shares/{}/learners.csv", course.share),
        )
        .await,
        "email,code_hint,bound_at,accesses,last_access,suspended,access_ends",
    )
    .await;
    assert_eq!(rows.len(), learners);
    let distinct: std::collections::HashSet<&str> = rows
        .iter()
        .map(|r| r.split(',').next().unwrap_or_default())
        .collect();
    assert_eq!(distinct.len(), learners, "no learner twice");
}
