//! What an admin does in the console, done by an integration with an API
//! token through `/api/v1` alone: shares, resources, batches, codes,
//! learners, access records and the audit log. The final state is checked
//! with SQL.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app};
use crate::support::course::{admin, enter_code, learners};
use crate::support::tokens::{as_token, create_token};

async fn upload_as(app: &TestApp, token: &str, share: &str, title: &str) -> Value {
    let part = reqwest::multipart::Part::bytes(b"0123456789".to_vec())
        .file_name("lesson.mp4")
        .mime_str("video/mp4")
        .expect("mime");
    let form = reqwest::multipart::Form::new()
        .text("title", title.to_owned())
        .part("file", part);
    let response = new_client()
        .post(format!("{}/api/v1/shares/{share}/resources", app.address))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("resource")
}

fn titles(list: &Value) -> Vec<&str> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|r| r["title"].as_str().expect("title"))
        .collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn an_api_token_does_everything_the_console_journey_does(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let tenant = admin.tenant;
    let token = create_token(&app, &admin, &["read", "write"]).await;
    let reader = create_token(&app, &admin, &["read"]).await;
    let call = |method: Method, path: String, body: Option<Value>| {
        let app = &app;
        let token = token.clone();
        async move { as_token(app, &token, method, &path, body).await }
    };

    // Three shares, listed two at a time, newest first, no overlap.
    let mut created = Vec::new();
    for title in ["First", "Second", "Third"] {
        let (status, share) = call(
            Method::POST,
            format!("/api/v1/tenants/{tenant}/shares"),
            Some(json!({ "title": title, "status": "active" })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{share}");
        created.push(share["id"].as_str().expect("id").to_owned());
    }
    let (status, page) = call(
        Method::GET,
        format!("/api/v1/tenants/{tenant}/shares?limit=2"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["has_more"], true);
    let first: Vec<&str> = page["shares"]
        .as_array()
        .expect("shares")
        .iter()
        .map(|s| s["title"].as_str().expect("title"))
        .collect();
    assert_eq!(first, ["Third", "Second"]);
    let after = page["next_after"].as_str().expect("next_after");
    let (_, page) = call(
        Method::GET,
        format!("/api/v1/tenants/{tenant}/shares?limit=2&after={after}"),
        None,
    )
    .await;
    assert_eq!(page["has_more"], false, "{page}");
    assert_eq!(page["next_after"], Value::Null);
    assert_eq!(page["shares"][0]["title"], "First");
    assert_eq!(page["shares"].as_array().expect("shares").len(), 1);
    let share = created[0].clone();
    let (status, read) = call(Method::GET, format!("/api/v1/shares/{share}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(read["title"], "First");
    assert_eq!(read["status"], "active");
    // Replacing the settings keeps the link and status unless named; a bad
    // field changes nothing.
    let (status, refused) = call(
        Method::PUT,
        format!("/api/v1/shares/{share}"),
        Some(json!({ "title": "First, renamed", "quota": -1 })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let (status, saved) = call(
        Method::PUT,
        format!("/api/v1/shares/{share}"),
        Some(json!({ "title": "First, renamed", "quota": 10, "description": "Spring" })),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["title"], "First, renamed");
    assert_eq!(saved["quota"], 10);
    assert_eq!(saved["slug"], read["slug"], "the link stays");
    assert_eq!(saved["status"], "active");
    let stored: (String, Option<i32>) =
        sqlx::query_as("SELECT title, quota FROM shares WHERE id = $1::uuid")
            .bind(&share)
            .fetch_one(&app.pool)
            .await
            .expect("share");
    assert_eq!(stored, ("First, renamed".to_owned(), Some(10)));

    // Resources: upload two, rename and move one, a bad move changes nothing.
    let lesson = upload_as(&app, &token, &share, "Lesson 1").await;
    upload_as(&app, &token, &share, "Lesson 2").await;
    let lesson_id = lesson["id"].as_str().expect("id").to_owned();
    let (status, list) = call(
        Method::POST,
        format!("/api/v1/shares/{share}/resources/{lesson_id}"),
        Some(json!({ "title": "Welcome", "move": "sideways" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{list}");
    assert_eq!(list["field"], "move");
    let (_, list) = call(
        Method::GET,
        format!("/api/v1/shares/{share}/resources"),
        None,
    )
    .await;
    assert_eq!(titles(&list), ["Lesson 1", "Lesson 2"], "nothing changed");
    let (status, list) = call(
        Method::POST,
        format!("/api/v1/shares/{share}/resources/{lesson_id}"),
        Some(json!({ "title": "Welcome", "move": "down" })),
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(titles(&list), ["Lesson 2", "Welcome"]);

    // A batch of three codes; it is listed, and so are its codes.
    let (status, batch) = call(
        Method::POST,
        format!("/api/v1/shares/{share}/codes"),
        Some(json!({ "count": 3, "label": "Spring class" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{batch}");
    let batch_id = batch["batch_id"].as_str().expect("batch").to_owned();
    let codes: Vec<(String, String)> = batch["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id").to_owned(),
                c["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect();
    let (_, batches) = call(Method::GET, format!("/api/v1/shares/{share}/batches"), None).await;
    assert_eq!(batches[0]["id"], batch_id.as_str());
    assert_eq!(batches[0]["label"], "Spring class");
    assert_eq!(batches[0]["count"], 3);

    // Support pastes a full code, as a learner would type it.
    let typed = codes[1].1.to_lowercase().replace('-', " ");
    let (status, found) = call(
        Method::POST,
        format!("/api/v1/tenants/{tenant}/codes/find"),
        Some(json!({ "code": typed })),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["share_id"], share.as_str());
    assert_eq!(found["code"]["id"], codes[1].0.as_str());
    assert_eq!(found["code"]["state"], "unused");
    let (status, wrong) = call(
        Method::POST,
        format!("/api/v1/tenants/{tenant}/codes/find"),
        Some(json!({ "code": "not a code" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{wrong}");
    assert_eq!(wrong["field"], "code");

    // A learner binds the first code; the API sees the learner and the access.
    let (_, learner) = learners(&app, 1).await.pop().expect("learner");
    let slug = read["slug"].as_str().expect("slug");
    assert_eq!(
        enter_code(&app, &learner, slug, &codes[0].1).await.status(),
        200
    );
    let lesson_path = format!("{}/api/v1/s/{slug}/resources/{lesson_id}", app.address);
    let opened = learner
        .post(format!("{lesson_path}/open"))
        .send()
        .await
        .expect("open");
    assert_eq!(opened.status(), 200);
    let opened: Value = opened.json().await.expect("json");
    assert_eq!(opened["access"], "bound", "{opened}");
    let content_path = format!("{lesson_path}/content");
    assert_eq!(
        opened["content_url"]
            .as_str()
            .map(|p| format!("{}{p}", app.address)),
        Some(content_path.clone())
    );
    let bytes = learner.get(&content_path).send().await.expect("bytes");
    assert_eq!(bytes.status(), 200);
    let (_, code) = call(Method::GET, format!("/api/v1/codes/{}", codes[0].0), None).await;
    assert_eq!(code["code"]["state"], "bound", "{code}");
    let (_, learners_page) = call(
        Method::GET,
        format!("/api/v1/shares/{share}/learners"),
        None,
    )
    .await;
    assert_eq!(
        learners_page["learners"]
            .as_array()
            .expect("learners")
            .len(),
        1
    );
    assert_eq!(learners_page["learners"][0]["code_id"], codes[0].0.as_str());
    assert_eq!(learners_page["learners"][0]["accesses"], 1);
    let (_, records) = call(Method::GET, format!("/api/v1/shares/{share}/records"), None).await;
    assert_eq!(records["records"][0]["bound_now"], true, "{records}");
    assert_eq!(records["records"][0]["resource"], "Welcome");
    assert_eq!(records["has_more"], false);

    // Unbind it (usable again), revoke the second, then the batch's unused.
    let (status, _) = call(
        Method::POST,
        format!("/api/v1/codes/{}/unbind", codes[0].0),
        Some(json!({ "reason": "bought by mistake" })),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        Method::POST,
        format!("/api/v1/codes/{}/revoke", codes[1].0),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, revoked) = call(
        Method::POST,
        format!("/api/v1/batches/{batch_id}/revoke-unused"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(
        revoked["revoked"], 2,
        "the unbound first and the untouched third"
    );
    let (_, again) = call(
        Method::POST,
        format!("/api/v1/batches/{batch_id}/revoke-unused"),
        None,
    )
    .await;
    assert_eq!(again["revoked"], 0);
    let revoked_now: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM auth_codes WHERE batch_id = $1::uuid AND revoked_at IS NOT NULL",
    )
    .bind(&batch_id)
    .fetch_one(&app.pool)
    .await
    .expect("count");
    assert_eq!(revoked_now, 3);

    // The audit log shows each action, a page at a time.
    let (_, audit) = call(
        Method::GET,
        format!("/api/v1/tenants/{tenant}/audit?action=code.&limit=1"),
        None,
    )
    .await;
    assert_eq!(audit["has_more"], true, "{audit}");
    assert_eq!(audit["entries"][0]["action"], "code.revoked");
    assert!(
        audit["entries"][0]["actor_email"]
            .as_str()
            .is_some_and(|e| e.starts_with("admin-"))
    );
    let before = audit["next_before"].as_str().expect("cursor");
    let (_, older) = call(
        Method::GET,
        format!("/api/v1/tenants/{tenant}/audit?action=code.&before={before}"),
        None,
    )
    .await;
    assert_eq!(older["entries"][0]["action"], "code.unbound", "{older}");
    assert_eq!(older["entries"][0]["reason"], "bought by mistake");
    let (status, bad) = call(
        Method::GET,
        format!("/api/v1/tenants/{tenant}/audit?before=yesterday"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad["field"], "before");

    // A reader reads but changes nothing; a stranger's token sees nothing.
    let (status, _) = as_token(
        &app,
        &reader,
        Method::GET,
        &format!("/api/v1/shares/{share}/learners"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = as_token(
        &app,
        &reader,
        Method::DELETE,
        &format!("/api/v1/shares/{share}/resources/{lesson_id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let stranger = crate::support::course::admin(&app).await;
    let stranger_token = create_token(&app, &stranger, &["read", "write"]).await;
    for path in [
        format!("/api/v1/shares/{share}"),
        format!("/api/v1/shares/{share}/records"),
        format!("/api/v1/codes/{}", codes[0].0),
        format!("/api/v1/tenants/{tenant}/audit"),
    ] {
        let (status, _) = as_token(&app, &stranger_token, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
    }
    for (method, path, body) in [
        (
            Method::POST,
            format!("/api/v1/tenants/{tenant}/codes/find"),
            Some(json!({ "code": codes[2].1 })),
        ),
        (
            Method::PUT,
            format!("/api/v1/shares/{share}"),
            Some(json!({ "title": "Taken over" })),
        ),
        (
            Method::POST,
            format!("/api/v1/shares/{share}/resources/{lesson_id}"),
            Some(json!({ "title": "Taken over" })),
        ),
        (
            Method::DELETE,
            format!("/api/v1/shares/{share}/resources/{lesson_id}?force=true"),
            None,
        ),
        (
            Method::POST,
            format!("/api/v1/batches/{batch_id}/revoke-unused"),
            None,
        ),
        (
            Method::POST,
            format!("/api/v1/codes/{}/revoke", codes[2].0),
            None,
        ),
    ] {
        let (status, _) = as_token(&app, &stranger_token, method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}");
    }
    let untouched: (String, i64) = sqlx::query_as(
        "SELECT (SELECT title FROM shares WHERE id = $1::uuid),
                (SELECT count(*) FROM resources WHERE share_id = $1::uuid AND deleted_at IS NULL)",
    )
    .bind(&share)
    .fetch_one(&app.pool)
    .await
    .expect("state");
    assert_eq!(
        untouched,
        ("First, renamed".to_owned(), 2),
        "a stranger changed nothing"
    );

    // Removing a resource learners opened needs `force`.
    let (status, refused) = call(
        Method::DELETE,
        format!("/api/v1/shares/{share}/resources/{lesson_id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["code"], "resource_in_use");
    assert_eq!(refused["field"], "force");
    let (status, _) = call(
        Method::DELETE,
        format!("/api/v1/shares/{share}/resources/{lesson_id}?force=true"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, list) = call(
        Method::GET,
        format!("/api/v1/shares/{share}/resources"),
        None,
    )
    .await;
    assert_eq!(titles(&list), ["Lesson 2"]);
    let (status, _) = call(
        Method::DELETE,
        format!("/api/v1/shares/{share}/resources/{lesson_id}?force=true"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
