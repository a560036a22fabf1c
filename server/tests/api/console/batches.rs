//! Issuing batches of codes: the server keeps answering while a large batch
//! is written, the console reports progress and a resubmitted form issues
//! nothing new, and "revoke unused" revokes exactly a batch's unused codes.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use super::{call, snapshot};
use crate::support::app::{TestApp, spawn_app};
use crate::support::console::{form, page};
use crate::support::course::{Admin, admin, course, enter_code, issue, learners, open};

#[sqlx::test(migrations = "../migrations")]
async fn the_server_keeps_answering_while_a_large_batch_is_issued(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let issuing = {
        let client = admin.client.clone();
        let url = format!("{}/api/v1/shares/{}/codes", app.address, course.share);
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({ "count": 30_000, "label": "big" }))
                .send()
                .await
                .expect("issue")
        })
    };
    // Other requests are answered while the batch is being written.
    let mut answered_meanwhile = 0;
    while !issuing.is_finished() {
        let response = app.get("/healthz").await;
        assert_eq!(response.status(), 200);
        let (status, _) = page(&app.address, &admin.client, &format!("/s/{}", course.slug)).await;
        assert_eq!(status, 200);
        if !issuing.is_finished() {
            answered_meanwhile += 1;
        }
    }
    let response = issuing.await.expect("join");
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["count"], 30_000);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(stored, 30_000);
    assert!(
        answered_meanwhile >= 1,
        "no other request was answered while issuing"
    );
}

/// The progress a console page polls while a batch is written.
async fn progress_of(app: &TestApp, admin: &Admin, ticket: &str) -> serde_json::Value {
    let response = admin
        .client
        .get(format!(
            "{}/api/admin/codes/progress?tenant_id={}&ticket={ticket}",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("progress");
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
}

#[sqlx::test(migrations = "../migrations")]
async fn issuing_reports_progress_and_a_resubmitted_form_issues_nothing_new(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let ticket = uuid::Uuid::new_v4().to_string();
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let fields = [
        ("tenant_id", tenant.as_str()),
        ("share_id", share.as_str()),
        ("count", "40000"),
        ("label", "progress"),
        ("ticket", ticket.as_str()),
    ];
    assert_eq!(progress_of(&app, &admin, &ticket).await, json!(null));
    let issuing = {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/codes/issue", app.address);
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        tokio::spawn(async move { client.post(url).form(&fields).send().await.expect("issue") })
    };
    // Partial reports while the batch is written, then all of it.
    let mut seen = Vec::new();
    while !issuing.is_finished() {
        let now = progress_of(&app, &admin, &ticket).await;
        if let Some(done) = now[0].as_u64() {
            assert_eq!(now[1], 40_000, "{now}");
            assert!(
                seen.last().is_none_or(|last| *last <= done),
                "{seen:?} then {done}"
            );
            seen.push(done);
        }
    }
    let response = issuing.await.expect("join");
    assert_eq!(
        response.status(),
        200,
        "{}",
        response.text().await.unwrap_or_default()
    );
    assert_eq!(
        progress_of(&app, &admin, &ticket).await,
        json!([40_000, 40_000])
    );
    assert!(
        seen.iter().any(|done| *done > 0 && *done < 40_000),
        "no partial progress was seen: {seen:?}"
    );
    // Nobody else reads it: not another admin of the same tenant (the
    // ticket is the issuing admin's), nor an admin of another tenant.
    let colleague = {
        let email = format!("colleague-{}@example.com", uuid::Uuid::new_v4());
        let id = app
            .create_account(&email, crate::support::course::PASSWORD)
            .await;
        // A second owner of the same tenant (as an accepted invitation
        // makes one).
        sqlx::query(
            "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner')",
        )
        .bind(admin.tenant)
        .bind(id.0)
        .execute(&app.pool)
        .await
        .expect("second owner");
        let client = crate::support::app::new_client();
        app.login_as(&client, &email, crate::support::course::PASSWORD)
            .await;
        Admin {
            client,
            tenant: admin.tenant,
        }
    };
    assert_eq!(
        progress_of(&app, &colleague, &ticket).await,
        json!(null),
        "another admin's ticket reads as nothing"
    );
    let other = crate::support::course::admin(&app).await;
    let response = other
        .client
        .get(format!(
            "{}/api/admin/codes/progress?tenant_id={}&ticket={ticket}",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("progress");
    assert_eq!(response.status(), 403);

    // The same form again (a double click, a retry): the first batch.
    let before = snapshot(&app.pool).await;
    let response = form(
        &app.address,
        &admin.client,
        &format!("/admin/t/{tenant}/s/{share}"),
        "/api/admin/codes/issue",
        &fields,
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let first: uuid::Uuid = sqlx::query_scalar(
        "SELECT id FROM code_batches WHERE share_id = $1 AND label = 'progress'",
    )
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("one batch");
    assert!(
        response.headers()["location"]
            .to_str()
            .expect("location")
            .ends_with(&format!("/batches/{first}")),
        "{:?}",
        response.headers()["location"]
    );
    assert_eq!(snapshot(&app.pool).await, before, "nothing new was issued");
}

/// "Revoke unused" on a batch revokes exactly its unused codes: bound
/// codes of the batch and codes of other batches are untouched.
#[sqlx::test(migrations = "../migrations")]
async fn revoking_a_batchs_unused_codes_leaves_its_bound_ones_and_other_batches(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 5).await;
    let other = issue(&app, &admin, course.share, 2).await;
    let people = learners(&app, 2).await;
    for ((_, client), (_, code)) in people.iter().zip(&codes) {
        assert_eq!(
            enter_code(&app, client, &course.slug, code).await.status(),
            200
        );
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    let batch: uuid::Uuid = sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(codes[0].0)
        .fetch_one(&app.pool)
        .await
        .expect("batch");
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/batches/revoke-unused",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("batch_id", &batch.to_string()),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert_eq!(
        (status, body.trim()),
        (200, "3"),
        "three unused codes revoked"
    );

    let state = |id: uuid::Uuid| {
        let pool = app.pool.clone();
        async move {
            let (revoked, bound): (bool, Option<uuid::Uuid>) = sqlx::query_as(
                "SELECT revoked_at IS NOT NULL, bound_principal FROM auth_codes WHERE id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("code");
            (revoked, bound)
        }
    };
    for (i, (id, _)) in codes.iter().enumerate() {
        let expected = match people.get(i) {
            Some((learner, _)) => (false, Some(*learner)),
            None => (true, None),
        };
        assert_eq!(state(*id).await, expected, "code {i} of the batch");
    }
    for (id, _) in &other {
        assert_eq!(state(*id).await, (false, None), "another batch's code");
    }
    // The bound learners keep their access; a revoked code is refused.
    for (_, client) in &people {
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    let (_, late) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &late, &course.slug, &codes[4].1)
            .await
            .status(),
        409,
        "a revoked code cannot be entered"
    );
    assert_eq!(
        enter_code(&app, &late, &course.slug, &other[0].1)
            .await
            .status(),
        200,
        "another batch's code still works"
    );
}
