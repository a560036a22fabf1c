//! Server-rendered pages: the home page with its shell, a 404 page for
//! unknown paths, and every page answering while many render at once and
//! other servers start in the same process.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, issue, learners};
use crate::support::learner::post_page_form;

#[sqlx::test(migrations = "../migrations")]
async fn home_page_is_server_rendered_with_the_shell(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/").await;
    assert_eq!(response.status(), 200);
    let html = response.text().await.expect("body");
    assert!(html.contains("<title>AdmitOne</title>"), "{html}");
    assert!(html.contains("one person, one code"), "{html}");
    assert!(html.contains(r#"class="site-header""#), "header missing");
    assert!(html.contains(r#"class="site-footer""#), "footer missing");
    assert!(
        html.contains("/pkg/admitone.js"),
        "hydration script missing"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn unknown_pages_get_a_404_page(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/no/such/page").await;
    assert_eq!(response.status(), 404);
    let html = response.text().await.expect("body");
    assert!(html.contains("Page not found"), "{html}");
    assert!(
        html.contains(r#"class="site-header""#),
        "404 keeps the page shell"
    );
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
