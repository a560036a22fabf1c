//! A resource's bytes (`GET …/content`): served only under the grant an
//! opening left, with HTTP byte ranges (206, suffix, 416) and never cached;
//! they never count, bind or debit anything; they are limited per account;
//! and a downloaded file is named after its title.

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    self, Course, ShareState, admin, course, enter_code, error_of, fetch, issue, learners,
    load_settings, one_learner, open, state_of,
};

/// Content is streamed with HTTP Range (video seeking) and never cached.
#[sqlx::test(migrations = "../migrations")]
async fn content_honours_byte_ranges_and_is_never_cached(pool: PgPool) {
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
    // Bytes are served only under the grant an opening leaves.
    let before = course::fetch(&app, &client, &course, None).await;
    assert_eq!(
        error_of(before).await,
        (403, "open_from_course_page".into())
    );
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    let url = course::content_url(&app, &course);
    let get = |range: Option<&'static str>| {
        let mut request = client.get(&url);
        if let Some(range) = range {
            request = request.header("range", range);
        }
        request.send()
    };
    let whole = get(None).await.expect("whole");
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.headers()["cache-control"], "private, no-store");
    assert_eq!(whole.headers()["content-type"], "video/mp4");
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    assert_eq!(
        whole.bytes().await.expect("body").as_ref(),
        b"0123456789abcdefghij"
    );

    for (range, status, body, content_range) in [
        ("bytes=2-5", 206, &b"2345"[..], "bytes 2-5/20"),
        ("bytes=15-", 206, &b"fghij"[..], "bytes 15-19/20"),
        ("bytes=-3", 206, &b"hij"[..], "bytes 17-19/20"),
    ] {
        let response = get(Some(range)).await.expect("range");
        assert_eq!(response.status(), status, "{range}");
        assert_eq!(
            response.headers()["content-range"],
            content_range,
            "{range}"
        );
        assert_eq!(response.headers()["cache-control"], "private, no-store");
        assert_eq!(
            response.bytes().await.expect("body").as_ref(),
            body,
            "{range}"
        );
    }
    let unsatisfiable = get(Some("bytes=50-")).await.expect("range");
    assert_eq!(unsatisfiable.status(), 416);
    assert_eq!(unsatisfiable.headers()["content-range"], "bytes */20");
    // Seeking within the grant counted one access only.
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );
}

/// What the settlement wrote for a share, with the learner's allowance and
/// the audit log: the bytes route must leave all of it alone.
async fn written(app: &TestApp, course: &Course) -> (ShareState, i64, i64) {
    let (allowance, audit): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT coalesce(sum(access_count), 0)::bigint FROM auth_codes WHERE share_id = $1),
                (SELECT count(*) FROM audit_log)",
    )
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("state");
    (state_of(app, course.share).await, allowance, audit)
}

/// The bytes route never writes: many Range requests, from this site and
/// from others, leave the records, the allowance, the quota and the audit
/// log as the opening left them.
#[sqlx::test(migrations = "../migrations")]
async fn the_bytes_never_count_bind_or_debit(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;

    // Before any opening, the bytes bind nothing (the code stays pending).
    let early = fetch(&app, &client, &course, Some("bytes=0-1")).await;
    assert_eq!(error_of(early).await, (403, "open_from_course_page".into()));
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );

    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    let before = written(&app, &course).await;
    let url = course::content_url(&app, &course);
    let requests = (0..40).map(|i| {
        let mut request = client
            .get(&url)
            .header("range", format!("bytes={}-{}", i % 8, i % 8 + 1));
        if i % 2 == 0 {
            request = request.header("sec-fetch-site", "cross-site");
        }
        request.send()
    });
    for response in join_all(requests).await {
        assert_eq!(response.expect("request").status(), 206);
    }
    assert_eq!(written(&app, &course).await, before, "nothing was written");
}

/// The bytes route is limited per account: past the limit, 429 with
/// `Retry-After`, and another learner is unaffected.
#[sqlx::test(migrations = "../migrations")]
async fn the_bytes_are_limited_per_account(pool: PgPool) {
    let mut settings = load_settings();
    settings.throttle.content_per_account_per_minute = 5;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;
    // `open` fetches the bytes once: four more are allowed.
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    for _ in 0..4 {
        assert_eq!(fetch(&app, &client, &course, None).await.status(), 200);
    }
    let refused = fetch(&app, &client, &course, None).await;
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(error_of(refused).await, (429, "rate_limited".into()));

    let (other_course, _, _, other) = one_learner(&app, &admin).await;
    assert_eq!(open(&app, &other, &other_course, None).await.status(), 200);
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
