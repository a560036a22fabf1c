//! The learner's pages as a browser without JavaScript gets them: server
//! rendered states, plain form posts redirected back, and the database's
//! final state after each step.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::course::{Course, admin, course, enter_code, issue, learners, open, post_json};
use crate::support::learner::{bound_codes, page, post_page_form};

#[sqlx::test(migrations = "../migrations")]
async fn a_learner_goes_from_link_to_content_with_plain_forms(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(
        &app,
        &admin,
        json!({ "title": "</title><script>alert('x')</script> Rust", "description": "Line one\n<b>two</b>" }),
    )
    .await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let here = format!("/s/{}", course.slug);

    // Signed out: the page explains and keeps the link for afterwards.
    let (status, html) = page(&app, &crate::support::app::new_client(), &here).await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"data-state="signed-out""#), "{html}");
    assert!(html.contains(&format!("/login?next=/s/{}", course.slug)));
    assert!(html.contains("Lesson 1"), "resources listed");
    // Titles and descriptions are text, never markup.
    assert!(!html.contains("<script>alert"), "title escaped: {html}");
    assert!(
        !html.contains("</title><script>"),
        "the <title> is escaped too"
    );
    assert!(html.contains("&lt;script&gt;alert"), "{html}");
    assert!(!html.contains("<b>two</b>"), "description escaped");

    let (learner, client) = learners(&app, 1).await.remove(0);
    let (_, html) = page(&app, &client, &here).await;
    assert!(html.contains(r#"data-state="needs-code""#), "{html}");
    assert!(
        html.contains(r#"action="/api/learner/code""#),
        "a plain form"
    );

    // Phase 1+2 without JavaScript: posted, redirected back, pending.
    let typed = codes[0].1.to_lowercase().replace('-', " ");
    let response = post_page_form(
        &app,
        &client,
        &here,
        "/api/learner/code",
        &[("slug", course.slug.as_str()), ("code", typed.as_str())],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let location = response.headers()["location"].to_str().expect("location");
    // (server_fn strips old error details from the Referer, leaving a `?`.)
    assert_eq!(
        location.trim_end_matches('?'),
        format!("{}{here}", app.address)
    );
    let (_, html) = page(&app, &client, &here).await;
    assert!(html.contains(r#"data-state="pending""#), "{html}");
    assert!(html.contains("It will be bound to this account"));
    assert!(
        bound_codes(&app, course.share).await.is_empty(),
        "entering binds nothing"
    );

    // Phase 3: the resource page settles while rendering.
    let (status, html) = page(&app, &client, &format!("{here}/r/{}", course.resource)).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("now bound to this account"), "{html}");
    assert!(html.contains("<video controls"), "{html}");
    assert_eq!(
        bound_codes(&app, course.share).await,
        vec![(codes[0].0, learner)]
    );

    // Back on the share page: bound, no form; a reload binds nothing more.
    let (_, html) = page(&app, &client, &here).await;
    assert!(html.contains(r#"data-state="has-access""#), "{html}");
    assert!(html.contains("Bound to "), "{html}");
    assert!(!html.contains(r#"name="code""#), "no code asked");
    let (status, html) = page(&app, &client, &format!("{here}/r/{}", course.resource)).await;
    assert_eq!(status, 200);
    assert!(!html.contains("now bound"), "bound once only");
    assert_eq!(bound_codes(&app, course.share).await.len(), 1);
    assert!(
        codes.iter().all(|(_, code)| !html.contains(code.as_str())),
        "plain codes never appear on pages"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn form_errors_come_back_to_the_page_and_typos_are_not_counted(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let here = format!("/s/{}", course.slug);

    // A typo in the check symbol, 30 times: more than the attempt limit.
    let mut typo = codes[0].1.clone();
    let last = typo.pop().expect("symbol");
    typo.push(if last == 'Z' { 'Y' } else { 'Z' });
    for _ in 0..30 {
        let response = post_page_form(
            &app,
            &client,
            &here,
            "/api/learner/code",
            &[("slug", course.slug.as_str()), ("code", typo.as_str())],
        )
        .await;
        assert_eq!(response.status(), StatusCode::FOUND);
        let location = response.headers()["location"].to_str().expect("location");
        assert!(location.contains("__err="), "{location}");
        let back = location.trim_start_matches(&app.address).to_owned();
        let (_, html) = page(&app, &client, &back).await;
        assert!(html.contains("This code has a typo"), "{html}");
    }
    // None of them counted: the right code still goes through.
    let response = enter_code(&app, &client, &course.slug, &codes[0].1).await;
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
}

/// Every page answers while other servers start in the same process.
/// Starting a server generates Leptos' route list, and route generation
/// sets a process-wide flag (`SuppressResourceLoad`) under which every
/// `Resource` created anywhere waits forever: pages rendered meanwhile by
/// other servers never answered (the hang that kept integration tests
/// serial). The route list is now generated once per process. Here four
/// servers serve 16 signed-in browsers (a typo, then the page it comes back
/// to, the plain page or home, 50 times each) while 12 more servers start,
/// answer a page and stop; every answer must come within 20 s (they take
/// milliseconds), complete.
#[sqlx::test(migrations = "../migrations")]
async fn pages_always_answer_while_many_render_at_once(pool: PgPool) {
    let mut apps = Vec::new();
    for _ in 0..4 {
        apps.push(spawn_app(pool.clone()).await);
    }
    let app = &apps[0];
    let admin = admin(app).await;
    let course = course(app, &admin, json!({})).await;
    let codes = issue(app, &admin, course.share, 1).await;
    let mut typo = codes[0].1.clone();
    let last = typo.pop().expect("symbol");
    typo.push(if last == 'Z' { 'Y' } else { 'Z' });
    let here = format!("/s/{}", course.slug);
    // Four signed-in browsers on each server.
    let mut browsers = Vec::new();
    for app in &apps {
        for (_, client) in learners(app, 4).await {
            browsers.push((app, client));
        }
    }
    let unanswered = std::sync::atomic::AtomicUsize::new(0);
    // Meanwhile other servers start, answer a page and stop (as other
    // tests' servers do in a parallel run).
    let churn = async {
        for _ in 0..12 {
            let other = spawn_app(pool.clone()).await;
            let client = crate::support::app::new_client();
            let answer = tokio::time::timeout(
                std::time::Duration::from_secs(20),
                other.get_page_as(&client, &here),
            )
            .await;
            if answer.is_err() {
                unanswered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // Stopping a server waits for its runtime: off this runtime, so
            // the browsers above keep going meanwhile.
            tokio::task::spawn_blocking(move || drop(other))
                .await
                .expect("stop the server");
        }
    };
    let browsing = futures::future::join_all(browsers.iter().map(|(app, client)| {
        let (unanswered, here, typo, slug) = (&unanswered, &here, &typo, &course.slug);
        async move {
            for i in 0..50 {
                let answer = tokio::time::timeout(std::time::Duration::from_secs(20), async {
                    // A typo sends the browser back to the page with the
                    // error (the sequence the hang was seen in), then the
                    // plain page, then home.
                    let response = post_page_form(
                        app,
                        client,
                        here,
                        "/api/learner/code",
                        &[("slug", slug.as_str()), ("code", typo.as_str())],
                    )
                    .await;
                    assert_eq!(response.status(), StatusCode::FOUND);
                    let location = response.headers()["location"].to_str().expect("location");
                    let back = location.trim_start_matches(&app.address).to_owned();
                    let path = [back.as_str(), here.as_str(), "/"][i % 3].to_owned();
                    let response = app.get_page_as(client, &path).await;
                    let status = response.status();
                    (path, status, response.text().await.unwrap_or_default())
                })
                .await;
                match answer {
                    Ok((path, status, html)) => {
                        assert_eq!(status, StatusCode::OK, "{path}");
                        assert!(html.contains("</body>"), "{path}: incomplete");
                    }
                    Err(_) => {
                        unanswered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        }
    }));
    futures::future::join(churn, browsing).await;
    assert_eq!(unanswered.into_inner(), 0, "pages never answered");
}

#[sqlx::test(migrations = "../migrations")]
async fn drafts_archived_and_unknown_shares_are_not_found(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let draft = course(&app, &admin, json!({ "status": "draft" })).await;
    let archived = course(&app, &admin, json!({ "status": "archived" })).await;
    let client = crate::support::app::new_client();
    for path in [
        format!("/s/{}", draft.slug),
        format!("/s/{}", archived.slug),
        "/s/no-such-course".to_owned(),
        format!("/s/{}/r/{}", draft.slug, draft.resource),
    ] {
        let (status, html) = page(&app, &client, &path).await;
        assert_eq!(status, 404, "{path}");
        assert!(html.contains("Page not found"), "{path}: {html}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn opening_without_a_code_or_from_another_site_binds_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let resource_page = format!("/s/{}/r/{}", course.slug, course.resource);

    let (status, html) = page(&app, &client, &resource_page).await;
    assert_eq!(status, 403);
    assert!(html.contains(r#"data-reason="code_required""#), "{html}");
    assert!(html.contains("Enter your access code first"), "{html}");

    // A link on another site reaches the page with the cookie (SameSite=Lax)
    // but must not spend the pending code.
    assert_eq!(
        enter_code(&app, &client, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    let response = client
        .get(format!("{}{resource_page}", app.address))
        .header("accept", "text/html")
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 403);
    assert!(bound_codes(&app, course.share).await.is_empty());

    // Signed out: sent to sign in, and back here afterwards.
    let response = app
        .get_page_as(&crate::support::app::new_client(), &resource_page)
        .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let location = response.headers()["location"].to_str().expect("location");
    assert!(location.starts_with("/login?next=/s/"), "{location}");
}

/// A link from another site to a resource the learner holds, with no
/// live grant: the page counts nothing and offers the one click on this
/// site that opens it.
#[sqlx::test(migrations = "../migrations")]
async fn a_link_from_another_site_counts_nothing_and_offers_to_open_here(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let resource_page = format!("/s/{}/r/{}", course.slug, course.resource);
    assert_eq!(
        enter_code(&app, &client, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    let (status, _) = page(&app, &client, &resource_page).await;
    assert_eq!(status, 200, "opened here: bound and counted");
    sqlx::query("UPDATE access_records SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .expect("end the grant");
    let records = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM access_records")
            .fetch_one(&app.pool)
            .await
            .expect("records")
    };

    for lang in ["en", "zh-CN", "zh-TW"] {
        let response = client
            .get(format!("{}{resource_page}", app.address))
            .header("accept", "text/html")
            .header("accept-language", lang)
            .header("sec-fetch-site", "cross-site")
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 403);
        let html = response.text().await.expect("body");
        assert!(
            html.contains(r#"data-reason="open_from_course_page""#),
            "{html}"
        );
        let (sentence, button) = match lang {
            "en" => ("Open this resource from its course page.", "Open it"),
            "zh-CN" => ("请从课程页面打开这个资源", "打开"),
            _ => ("請從課程頁面開啟這個資源", "開啟"),
        };
        assert!(html.contains(sentence), "{lang}: {html}");
        assert!(
            html.contains(&format!(
                r#"<a rel="external" href="{resource_page}" class="button">{button}</a>"#
            )),
            "{lang}: {html}"
        );
    }
    assert_eq!(records().await, 1, "nothing counted from the other site");

    // The offered click is a request from this site: a new access.
    let (status, _) = page(&app, &client, &resource_page).await;
    assert_eq!(status, 200);
    assert_eq!(records().await, 2);
}

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

#[sqlx::test(migrations = "../migrations")]
async fn each_unavailable_state_is_explained_on_the_share_page(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let now = time::OffsetDateTime::now_utc();
    let rfc = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .expect("rfc3339")
    };
    let cases: Vec<(Course, &str)> = vec![
        (
            course(&app, &admin, json!({ "status": "paused" })).await,
            "This course is paused by its provider.",
        ),
        (
            course(
                &app,
                &admin,
                json!({ "valid_from": rfc(now - time::Duration::days(3)), "valid_until": rfc(now - time::Duration::days(1)) }),
            )
            .await,
            "This course has closed.",
        ),
        (
            course(
                &app,
                &admin,
                json!({ "valid_from": rfc(now + time::Duration::days(1)) }),
            )
            .await,
            "This course is not open yet.",
        ),
    ];
    let (_, client) = learners(&app, 1).await.remove(0);
    // Each reason in Chinese too: pages translate the reason itself
    // (`Unavailability`), not its English sentence.
    let chinese = [
        "课程提供方已暂停这门课程。",
        "这门课程已结束。",
        "这门课程尚未开放。",
    ];
    // The JSON door gives the same reason as a word to match on.
    let words = ["paused", "closed", "not_open_yet"];
    for (((course, message), chinese), word) in cases.into_iter().zip(chinese).zip(words) {
        let json: serde_json::Value = client
            .get(format!("{}/api/v1/s/{}", app.address, course.slug))
            .send()
            .await
            .expect("share json")
            .json()
            .await
            .expect("json");
        assert_eq!(json["available"], false, "{json}");
        assert_eq!(json["unavailable"], word, "{json}");
        assert_eq!(
            json["unavailable_reason"],
            message.trim_end_matches('.').to_lowercase(),
            "{json}"
        );
        let (status, html) = page(&app, &client, &format!("/s/{}", course.slug)).await;
        assert_eq!(status, 200);
        assert!(html.contains(r#"data-state="unavailable""#), "{html}");
        assert!(html.contains(message), "{message}: {html}");
        assert!(!html.contains(r#"name="code""#), "no code form");
        let html = client
            .get(format!("{}/s/{}", app.address, course.slug))
            .header("accept", "text/html")
            .header("accept-language", "zh-CN")
            .send()
            .await
            .expect("page")
            .text()
            .await
            .expect("html");
        assert!(html.contains(chinese), "{chinese}: {html}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_pending_code_is_never_bound_to_the_next_account_on_the_same_browser(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    // One browser (one cookie jar): A enters a code, then B signs in
    // without A signing out, and opens the course.
    let browser = crate::support::app::new_client();
    let a = format!("a-{}@example.com", Uuid::new_v4());
    let b = format!("b-{}@example.com", Uuid::new_v4());
    app.create_account(&a, crate::support::course::PASSWORD)
        .await;
    app.create_account(&b, crate::support::course::PASSWORD)
        .await;
    app.login_as(&browser, &a, crate::support::course::PASSWORD)
        .await;
    assert_eq!(
        enter_code(&app, &browser, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    app.login_as(&browser, &b, crate::support::course::PASSWORD)
        .await;
    let response = open(&app, &browser, &course, None).await;
    assert_eq!(response.status(), 403, "B has no code of their own");
    let (_, html) = page(&app, &browser, &format!("/s/{}", course.slug)).await;
    assert!(html.contains(r#"data-state="needs-code""#), "{html}");
    assert!(bound_codes(&app, course.share).await.is_empty());
}

/// A downloaded file keeps a name people recognise: the resource's title
/// with its type's extension, in UTF-8 (`filename*`) with an ASCII
/// fallback, so a Chinese title arrives as itself, not as "content".
#[sqlx::test(migrations = "../migrations")]
async fn a_downloaded_file_is_named_after_its_title(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let course = course(&app, &owner, json!({})).await;
    let pdf = crate::support::course::upload(
        &app,
        &owner,
        course.share,
        "第一课 讲义",
        "application/pdf",
        b"%PDF-1.4 a tiny one".to_vec(),
    )
    .await;
    let code = issue(&app, &owner, course.share, 1).await.remove(0).1;
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &code)
            .await
            .status(),
        200
    );
    let file = Course {
        resource: pdf,
        ..course.clone()
    };
    assert_eq!(open(&app, &learner, &file, None).await.status(), 200);
    let response = crate::support::course::fetch(&app, &learner, &file, None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-disposition"],
        "attachment; filename=\"_ _.pdf\"; \
         filename*=UTF-8''%E7%AC%AC%E4%B8%80%E8%AF%BE%20%E8%AE%B2%E4%B9%89.pdf"
    );
}
