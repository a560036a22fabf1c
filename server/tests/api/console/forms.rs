//! The console's forms as a whole: bad input on every form gets a field
//! error and changes nothing; destructive actions need their confirmation
//! box; pages and form errors follow the language choice.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use super::{call, snapshot};
use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, open};

/// A server function, the fields sent, the field the error must name.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

#[sqlx::test(migrations = "../migrations")]
async fn bad_input_on_every_console_form_gets_a_field_error_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let code = codes[0].0.to_string();
    let long = "x".repeat(201);
    let update = |field: &'static str, value: &'static str| {
        let mut fields = vec![
            ("title", "Fine"),
            ("slug", "fine-slug"),
            ("description", ""),
            ("status", "active"),
            ("valid_from", ""),
            ("valid_until", ""),
            ("per_learner_limit", ""),
            ("quota", ""),
        ];
        for f in &mut fields {
            if f.0 == field {
                f.1 = value;
            }
        }
        fields
    };
    let before = snapshot(&app.pool).await;
    let cases: Vec<Case> = vec![
        ("/api/admin/share/create", vec![("title", "")], "title"),
        ("/api/admin/share/create", vec![("title", &long)], "title"),
        (
            "/api/admin/share/create",
            vec![("title", "Ok"), ("slug", "Bad Slug!")],
            "slug",
        ),
        (
            "/api/admin/share/create",
            vec![("title", "Ok"), ("slug", &course.slug)],
            "slug",
        ),
        ("/api/admin/share/update", update("title", "  "), "title"),
        (
            "/api/admin/share/update",
            update("status", "deleted"),
            "status",
        ),
        ("/api/admin/share/update", update("quota", "abc"), "quota"),
        ("/api/admin/share/update", update("quota", "0"), "quota"),
        (
            "/api/admin/share/update",
            update("per_learner_limit", "-1"),
            "per_learner_limit",
        ),
        (
            "/api/admin/share/update",
            update("valid_from", "yesterday"),
            "valid_from",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "0"), ("label", "")],
            "count",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "100001"), ("label", "")],
            "count",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "many"), ("label", "")],
            "count",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "2"), ("label", &long)],
            "label",
        ),
        (
            "/api/admin/codes/unbind",
            vec![
                ("reason", "lost phone"),
                ("after", "maybe"),
                ("confirm", "yes"),
            ],
            "after",
        ),
        (
            "/api/admin/codes/unbind",
            vec![("reason", "lost phone"), ("after", "usable")],
            "confirm",
        ),
        (
            "/api/admin/codes/unbind",
            vec![
                ("reason", "lost phone"),
                ("after", "usable"),
                ("confirm", "no"),
            ],
            "confirm",
        ),
        (
            "/api/admin/codes/revoke-and-replace",
            vec![("reason", "posted on a forum")],
            "confirm",
        ),
        (
            "/api/admin/codes/revoke-and-replace",
            vec![("reason", " "), ("confirm", "yes")],
            "reason",
        ),
    ];
    for (path, fields, field) in cases {
        let mut all: Vec<(&str, &str)> = vec![("tenant_id", &tenant)];
        if path != "/api/admin/share/create" {
            all.push(("share_id", &share));
        }
        if path == "/api/admin/codes/unbind" || path == "/api/admin/codes/revoke-and-replace" {
            all.retain(|(k, _)| *k != "share_id");
            all.push(("code_id", &code));
        }
        all.extend(fields.iter().copied());
        let (status, body) = call(&app, &admin, path, &all).await;
        assert_eq!(status, 422, "{path} {fields:?}: {body}");
        let error: serde_json::Value = serde_json::from_str(&body).expect("json error");
        assert_eq!(
            error["Invalid"]["field"], field,
            "{path} {fields:?}: {body}"
        );
    }
    // Wrong types: not a uuid.
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/share/update",
        &[("tenant_id", "nope"), ("share_id", "x")],
    )
    .await;
    assert!((400..500).contains(&status), "{status}");
    // Unbinding a code nobody holds is refused too.
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/codes/unbind",
        &[
            ("tenant_id", &tenant),
            ("code_id", &code),
            ("reason", "x"),
            ("after", "usable"),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert!((400..500).contains(&status), "{status}");
    assert_eq!(snapshot(&app.pool).await, before, "nothing changed");
}

#[sqlx::test(migrations = "../migrations")]
async fn pages_and_form_errors_follow_the_language_choice(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "语言" })).await;
    let share_page = format!("/s/{}", course.slug);
    let browser = crate::support::app::new_client();
    let get = |lang: Option<&'static str>, cookie: Option<&'static str>| {
        let mut request = browser
            .get(format!("{}{share_page}", app.address))
            .header("accept", "text/html");
        if let Some(lang) = lang {
            request = request.header("accept-language", lang);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        async move {
            request
                .send()
                .await
                .expect("page")
                .text()
                .await
                .expect("body")
        }
    };
    let zh = get(Some("zh-CN,zh;q=0.9,en;q=0.5"), None).await;
    assert!(zh.contains("<html lang=\"zh-CN\""), "{zh}");
    assert!(zh.contains("登录"), "{zh}");
    let en = get(Some("en-GB"), None).await;
    assert!(en.contains("<html lang=\"en\""), "{en}");
    assert!(en.contains("Sign in") && !en.contains("登录"), "{en}");
    // Traditional Chinese for Taiwan and Hong Kong.
    for tag in ["zh-TW", "zh-HK,zh;q=0.8"] {
        let tw = get(Some(tag), None).await;
        assert!(tw.contains("<html lang=\"zh-TW\""), "{tag}: {tw}");
        assert!(tw.contains("登入") && !tw.contains("登录"), "{tag}: {tw}");
    }
    // The switcher's cookie wins over the header.
    let chosen = get(Some("zh-CN"), Some("lang=en")).await;
    assert!(chosen.contains("<html lang=\"en\""), "{chosen}");
    let chosen = get(Some("en"), Some("lang=zh-TW")).await;
    assert!(chosen.contains("<html lang=\"zh-TW\""), "{chosen}");

    // The switcher sets the cookie and returns to the page.
    let response = browser
        .get(format!("{}/lang/zh-CN?back={share_page}", app.address))
        .send()
        .await
        .expect("switch");
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], share_page.as_str());
    let cookie = response.headers()["set-cookie"].to_str().expect("cookie");
    assert!(cookie.starts_with("lang=zh-CN;"), "{cookie}");

    // A server function's error in the page's language, with its field.
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let response = admin
        .client
        .post(format!("{}/api/admin/codes/issue", app.address))
        .header("accept-language", "zh-CN")
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("share_id", share.as_str()),
            ("count", "0"),
            ("label", ""),
        ])
        .send()
        .await
        .expect("issue");
    assert_eq!(response.status(), 422);
    let error: serde_json::Value = response.json().await.expect("json");
    assert_eq!(error["Invalid"]["field"], "count");
    assert_eq!(error["Invalid"]["message"], "兑换码数量为 1 到 100,000");
    // The JSON API stays English for machines.
    let response = admin
        .client
        .post(format!("{}/api/v1/shares/{share}/codes", app.address))
        .header("accept-language", "zh-CN")
        .json(&json!({ "count": 0 }))
        .send()
        .await
        .expect("issue");
    assert_eq!(response.status(), 422);
    let error: serde_json::Value = response.json().await.expect("json");
    assert_eq!(error["detail"], "a batch has 1 to 100,000 codes");
}

/// Destructive console actions ask first, as unbinding does: revoking a
/// bound code, revoking a batch's unused codes, revoking a token and
/// disabling a webhook each need the "I understand" box (`confirm=yes`);
/// without it they answer a field error and change nothing. Revoking an
/// unused code (a lost one nobody holds) stays one click.
#[sqlx::test(migrations = "../migrations")]
async fn destructive_console_actions_need_their_confirmation(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 3).await;
    let (_, learner) = crate::support::course::learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let tenant = admin.tenant.to_string();
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/tokens/create",
        &[("tenant_id", &tenant), ("name", "shop"), ("read", "on")],
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/webhooks/create",
        &[
            ("tenant_id", &tenant),
            ("url", "https://hooks.example.com/in"),
            ("code_bound", "on"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let ids = |table: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, uuid::Uuid>(&format!("SELECT id FROM {table} LIMIT 1"))
                .fetch_one(&pool)
                .await
                .expect("id")
                .to_string()
        }
    };
    let (token, hook) = (ids("api_tokens").await, ids("webhook_endpoints").await);
    let batch: uuid::Uuid = sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(codes[0].0)
        .fetch_one(&app.pool)
        .await
        .expect("batch");
    let (bound, batch) = (codes[0].0.to_string(), batch.to_string());
    let state = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT concat_ws('|',
                (SELECT string_agg(id::text || coalesce(revoked_at::text, '-'), ',' ORDER BY id) FROM auth_codes),
                (SELECT string_agg(coalesce(revoked_at::text, '-'), ',') FROM api_tokens),
                (SELECT string_agg(coalesce(disabled_at::text, '-'), ',') FROM webhook_endpoints),
                (SELECT count(*)::text FROM audit_log))",
        )
        .fetch_one(&app.pool)
        .await
        .expect("state")
    };
    let actions: [(&str, Vec<(&str, &str)>); 4] = [
        ("/api/admin/codes/revoke", vec![("code_id", &bound)]),
        (
            "/api/admin/batches/revoke-unused",
            vec![("batch_id", &batch)],
        ),
        ("/api/admin/tokens/revoke", vec![("token_id", &token)]),
        ("/api/admin/webhooks/disable", vec![("endpoint_id", &hook)]),
    ];
    let before = state().await;
    for (path, fields) in &actions {
        for confirm in [None, Some("no")] {
            let mut all = vec![("tenant_id", tenant.as_str())];
            all.extend(fields.iter().copied());
            all.extend(confirm.map(|c| ("confirm", c)));
            let (status, body) = call(&app, &admin, path, &all).await;
            assert_eq!(status, 422, "{path} {confirm:?}: {body}");
            let error: serde_json::Value = serde_json::from_str(&body).expect("json");
            assert_eq!(error["Invalid"]["field"], "confirm", "{path}: {body}");
        }
    }
    assert_eq!(state().await, before, "nothing changed");

    // An unused code goes in one click.
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/codes/revoke",
        &[("tenant_id", &tenant), ("code_id", &codes[1].0.to_string())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Confirmed, each goes through.
    for (path, fields) in &actions {
        let mut all = vec![("tenant_id", tenant.as_str()), ("confirm", "yes")];
        all.extend(fields.iter().copied());
        let (status, body) = call(&app, &admin, path, &all).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (revoked_codes, revoked_tokens, disabled_hooks): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM auth_codes WHERE revoked_at IS NOT NULL),
                (SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT NULL),
                (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL)",
    )
    .fetch_one(&app.pool)
    .await
    .expect("after");
    assert_eq!((revoked_codes, revoked_tokens, disabled_hooks), (3, 1, 1));
}
