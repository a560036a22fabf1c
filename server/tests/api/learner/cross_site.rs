//! Openings from other sites: a link or an embed elsewhere (which
//! `SameSite=Lax` lets through with the cookie) never binds a pending code
//! and never counts an access; the page offers the one click on this site
//! that opens the resource, and the bytes under a live grant still serve.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::course::{
    self, ShareState, admin, course, enter_code, error_of, issue, learners, load_settings, state_of,
};
use crate::support::learner::{bound_codes, page};

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

/// A cross-site navigation never binds a pending code.
#[sqlx::test(migrations = "../migrations")]
async fn a_cross_site_request_cannot_bind_a_pending_code(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({})).await;
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    assert_eq!(
        enter_code(&app, &client, &course.slug, &code)
            .await
            .status(),
        200
    );
    let opening = format!(
        "{}/api/v1/s/{}/resources/{}/open",
        app.address, course.slug, course.resource
    );
    // Neither an opening from another site nor its bytes bind anything.
    let forged = client
        .post(&opening)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("request");
    assert_eq!(
        error_of(forged).await,
        (403, "open_from_course_page".into())
    );
    let forged = client
        .get(course::content_url(&app, &course))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("request");
    assert_eq!(
        error_of(forged).await,
        (403, "open_from_course_page".into())
    );
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );
    let own = client
        .post(&opening)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .expect("request");
    assert_eq!(own.headers()["x-admitone-access"], "bound");
    // Once opened, the learner's own links from elsewhere serve the bytes
    // (and count nothing more).
    let from_mail = client
        .get(course::content_url(&app, &course))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("request");
    assert_eq!(from_mail.status(), 200);
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );
}

/// A cross-site request (a link or an embed on any other site, which
/// `SameSite=Lax` lets through with the cookie) never counts an access:
/// an opening from elsewhere is refused, and the bytes never count at all,
/// so no website can spend a learner's allowance or the share's quota,
/// with or without a live grant.
#[sqlx::test(migrations = "../migrations")]
async fn a_cross_site_request_never_counts_an_access(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({})).await;
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    assert_eq!(
        enter_code(&app, &client, &course.slug, &code)
            .await
            .status(),
        200
    );
    let opening = format!(
        "{}/api/v1/s/{}/resources/{}/open",
        app.address, course.slug, course.resource
    );
    let bytes = course::content_url(&app, &course);
    let own = client
        .post(&opening)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .expect("request");
    assert_eq!(own.headers()["x-admitone-access"], "bound");
    let counts = || async {
        sqlx::query_scalar::<_, i32>("SELECT access_count FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("access count")
    };
    let forged_headers = [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("sec-fetch-site", "elsewhere"),
        ("sec-purpose", "prefetch;prerender"),
    ];

    // With a live grant: the bytes serve to any site, counting nothing.
    let before = state_of(&app, course.share).await;
    let count_before = counts().await;
    for (name, value) in forged_headers {
        let response = client
            .get(&bytes)
            .header(name, value)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200, "{name}: {value}");
    }
    assert_eq!(
        state_of(&app, course.share).await,
        before,
        "nothing counted"
    );
    assert_eq!(counts().await, count_before, "the allowance is untouched");

    // The grant runs out; the learner is still bound. Another site, a
    // sibling subdomain, a value no browser sends, and the browser
    // preloading what nobody opened yet: neither an opening nor the bytes.
    sqlx::query("UPDATE access_records SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .expect("end the grant");
    for (name, value) in forged_headers {
        let forged = client
            .post(&opening)
            .header(name, value)
            .send()
            .await
            .expect("request");
        assert_eq!(
            error_of(forged).await,
            (403, "open_from_course_page".into()),
            "{name}: {value}"
        );
    }
    assert_eq!(
        state_of(&app, course.share).await,
        before,
        "nothing counted"
    );
    assert_eq!(counts().await, count_before, "the allowance is untouched");

    // Opened from the course (same site): a new access, as always; typed
    // or bookmarked (`none`), or from a client that sends no such header,
    // the same.
    let own = client
        .post(&opening)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .expect("request");
    assert_eq!(own.headers()["x-admitone-access"], "counted");
    assert_eq!(counts().await, count_before + 1);
    for site in [Some("none"), None] {
        sqlx::query("UPDATE access_records SET expires_at = now() - interval '1 second'")
            .execute(&app.pool)
            .await
            .expect("end the grant");
        let mut request = client.post(&opening);
        if let Some(site) = site {
            request = request.header("sec-fetch-site", site);
        }
        let response = request.send().await.expect("request");
        assert_eq!(
            response.headers()["x-admitone-access"],
            "counted",
            "{site:?}"
        );
    }
    assert_eq!(counts().await, count_before + 3);
}
