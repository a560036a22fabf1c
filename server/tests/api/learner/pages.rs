//! The learner's way from a link to the content with plain forms (no
//! JavaScript): server-rendered states, form errors coming back to the
//! page (typos not counted), and a pending code that stays with its browser
//! session, never bound to the next account signing in there.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, learners, open};
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
