//! What an admin does in the console, done by an integration with an API
//! token through `/api/v1` alone: shares, resources, batches, codes,
//! learners, access records and the audit log. The final state is checked
//! with SQL.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::app::{
    TestApp, new_client, redis_url, spawn_app, spawn_app_with, test_settings,
};
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

/// Tokens and webhooks through the API: a token with the `integrations`
/// scope manages them, never mints a token that does more than itself or
/// outlives it, and an expired or revoked token is refused.
#[sqlx::test(migrations = "../migrations")]
async fn an_integrations_token_manages_tokens_and_webhooks(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let tenant = admin.tenant;
    let root = create_token(&app, &admin, &["read", "write", "integrations"]).await;
    let plain = create_token(&app, &admin, &["read", "write"]).await;
    let tokens_path = format!("/api/v1/tenants/{tenant}/tokens");

    // Without the scope: no tokens, no webhooks.
    for path in [
        tokens_path.clone(),
        format!("/api/v1/tenants/{tenant}/webhooks"),
    ] {
        let (status, body) = as_token(&app, &plain, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
    }

    // A child that expires tomorrow, with less than its parent.
    let tomorrow = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    let tomorrow_text = tomorrow
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let (status, child) = as_token(
        &app,
        &root,
        Method::POST,
        &tokens_path,
        Some(json!({ "name": "sync", "scopes": ["read", "integrations"], "expires_at": tomorrow_text })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{child}");
    let child_token = child["token"].as_str().expect("token").to_owned();
    assert_eq!(child["scopes"], json!(["integrations", "read"]));
    let (status, _) = as_token(
        &app,
        &child_token,
        Method::GET,
        &format!("/api/v1/tenants/{tenant}/shares"),
        None,
    )
    .await;
    assert_eq!(status, 200, "the child reads");

    // The child cannot mint more than itself, nor a token that outlives it.
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    for (body, what) in [
        (
            json!({ "name": "more", "scopes": ["write"], "expires_at": tomorrow_text }),
            "a scope it lacks",
        ),
        (json!({ "name": "longer", "scopes": ["read"] }), "no expiry"),
        (
            json!({ "name": "longer", "scopes": ["read"], "expires_at": (tomorrow + time::Duration::days(1)).format(&time::format_description::well_known::Rfc3339).expect("format") }),
            "a later expiry",
        ),
    ] {
        let (status, refused) =
            as_token(&app, &child_token, Method::POST, &tokens_path, Some(body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {refused}");
        assert_eq!(refused["code"], "token_beyond_caller", "{what}");
    }
    // Bad input: clear errors, nothing made.
    for (body, field) in [
        (json!({ "name": "x", "scopes": ["admin"] }), "scopes"),
        (json!({ "name": "x", "scopes": [] }), "scopes"),
        (json!({ "name": "", "scopes": ["read"] }), "name"),
        (
            json!({ "name": "x", "scopes": ["read"], "expires_at": "2020-01-01T00:00:00Z" }),
            "expires_at",
        ),
    ] {
        let (status, refused) = as_token(&app, &root, Method::POST, &tokens_path, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
        assert_eq!(refused["field"], field, "{refused}");
    }
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(after, before, "refusals made no token");

    // Listed with its expiry; once expired it is refused like a revoked one.
    let (_, list) = as_token(&app, &root, Method::GET, &tokens_path, None).await;
    let listed = list
        .as_array()
        .expect("tokens")
        .iter()
        .find(|t| t["name"] == "sync")
        .expect("the child is listed")
        .clone();
    assert!(listed["expires_at"].is_string(), "{listed}");
    assert!(
        !list.to_string().contains(&child_token),
        "a list never shows a token"
    );
    sqlx::query(
        "UPDATE api_tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day' WHERE name = 'sync'",
    )
    .execute(&app.pool)
    .await
    .expect("expire");
    let (status, _) = as_token(
        &app,
        &child_token,
        Method::GET,
        &format!("/api/v1/tenants/{tenant}/shares"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "an expired token");

    // A session revokes any token of its tenant; an id of no token is 404.
    let plain_id = list
        .as_array()
        .expect("tokens")
        .iter()
        .find(|t| t["scopes"] == json!(["read", "write"]))
        .expect("the plain token")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let revoke_path = |id: &str| format!("{}{tokens_path}/{id}/revoke", app.address);
    let revoked = admin
        .client
        .post(revoke_path(&plain_id))
        .send()
        .await
        .expect("revoke");
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    let (status, _) = as_token(
        &app,
        &plain,
        Method::GET,
        &format!("/api/v1/tenants/{tenant}/shares"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a revoked token");
    let unknown = admin
        .client
        .post(revoke_path(&uuid::Uuid::new_v4().to_string()))
        .send()
        .await
        .expect("revoke");
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);

    // A token revokes only itself and what it made; revoking it revokes
    // what it made, and theirs.
    let (status, second) = as_token(
        &app,
        &root,
        Method::POST,
        &tokens_path,
        Some(json!({ "name": "second", "scopes": ["read", "integrations"] })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second_token = second["token"].as_str().expect("token").to_owned();
    let (status, third) = as_token(
        &app,
        &second_token,
        Method::POST,
        &tokens_path,
        Some(json!({ "name": "third", "scopes": ["read"] })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{third}");
    let third_token = third["token"].as_str().expect("token").to_owned();
    let root_id: String = sqlx::query_scalar(
        "SELECT id::text FROM api_tokens WHERE tenant_id = $1 AND parent_id IS NULL AND 'integrations' = ANY(scopes)",
    )
    .bind(tenant)
    .fetch_one(&app.pool)
    .await
    .expect("root id");
    let (status, refused) = as_token(
        &app,
        &second_token,
        Method::POST,
        &format!("{tokens_path}/{root_id}/revoke"),
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the token that made it: {refused}"
    );
    assert_eq!(refused["code"], "token_beyond_caller");
    let (status, _) = as_token(
        &app,
        &root,
        Method::POST,
        &format!(
            "{tokens_path}/{}/revoke",
            second["id"].as_str().expect("id")
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for dead in [&second_token, &third_token] {
        let (status, _) = as_token(
            &app,
            dead,
            Method::GET,
            &format!("/api/v1/tenants/{tenant}/shares"),
            None,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "revoked with the token that made it"
        );
    }
    let via: Option<String> = sqlx::query_scalar(
        "SELECT details->>'via_token' FROM audit_log WHERE action = 'token.created' AND target_id = $1::uuid",
    )
    .bind(third["id"].as_str().expect("id"))
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(
        via.as_deref(),
        second["id"].as_str(),
        "the audit names the token that asked"
    );

    // Webhooks: add, list, refuse bad input, disable for good.
    let hooks = format!("/api/v1/tenants/{tenant}/webhooks");
    let (status, bad) = as_token(
        &app,
        &root,
        Method::POST,
        &hooks,
        Some(json!({ "url": "https://shop.example/hook", "events": ["code.exploded"] })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    let (status, bad) = as_token(
        &app,
        &root,
        Method::POST,
        &hooks,
        Some(json!({ "url": "ftp://shop.example/hook", "events": ["code.bound"] })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    let (status, created) = as_token(
        &app,
        &root,
        Method::POST,
        &hooks,
        Some(
            json!({ "url": "https://shop.example/hook", "events": ["code.bound", "code.revoked"] }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(
        created["secret"].as_str().is_some_and(|s| s.len() >= 32),
        "{created}"
    );
    let endpoint = created["id"].as_str().expect("id").to_owned();
    let (_, list) = as_token(&app, &root, Method::GET, &hooks, None).await;
    assert_eq!(list.as_array().expect("hooks").len(), 1, "{list}");
    assert_eq!(list[0]["events"], json!(["code.bound", "code.revoked"]));
    assert_eq!(list[0]["disabled_at"], Value::Null);
    assert!(
        !list
            .to_string()
            .contains(created["secret"].as_str().expect("secret"))
    );
    let (status, deliveries) = as_token(
        &app,
        &root,
        Method::GET,
        &format!("{hooks}/deliveries"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(deliveries, json!([]));
    let (status, _) = as_token(
        &app,
        &root,
        Method::POST,
        &format!(
            "{hooks}/{endpoint}/deliveries/{}/redeliver",
            uuid::Uuid::new_v4()
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = as_token(
        &app,
        &root,
        Method::POST,
        &format!("{hooks}/{endpoint}/disable"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, list) = as_token(&app, &root, Method::GET, &hooks, None).await;
    assert!(list[0]["disabled_at"].is_string(), "{list}");
    let audited: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'webhook.%' ORDER BY created_at",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audited.len(), 2, "{audited:?}");
}

/// Each token has its own allowance per minute: past it, 429 with the wait
/// and the limit in headers, as a problem document; other tokens go on.
#[sqlx::test(migrations = "../migrations")]
async fn each_api_token_is_throttled_on_its_own(pool: PgPool) {
    let mut settings = test_settings(&redis_url());
    settings.throttle.api_token_per_minute = 3;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let busy = create_token(&app, &admin, &["read"]).await;
    let calm = create_token(&app, &admin, &["read"]).await;
    let path = format!("/api/v1/tenants/{}/shares", admin.tenant);
    for _ in 0..3 {
        let (status, _) = as_token(&app, &busy, Method::GET, &path, None).await;
        assert_eq!(status, 200);
    }
    let refused = new_client()
        .get(format!("{}{path}", app.address))
        .bearer_auth(&busy)
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let header = |name: &str| {
        refused
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("ratelimit-limit").as_deref(), Some("3"));
    assert_eq!(header("ratelimit-remaining").as_deref(), Some("0"));
    let retry: u64 = header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        header("content-type").as_deref(),
        Some("application/problem+json")
    );
    let body: Value = refused.json().await.expect("problem");
    assert_eq!(body["code"], "rate_limited");
    let (status, _) = as_token(&app, &calm, Method::GET, &path, None).await;
    assert_eq!(status, 200, "another token is not slowed down");
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
