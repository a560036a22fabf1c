//! The S3 storage backend against a real S3 server (`moto_server`, started
//! by the test, see `harness::s3`): an upload larger than one multipart
//! part lands whole, learners read it with byte ranges (206, suffix, 416),
//! an upload over the limit leaves neither an object nor an unfinished
//! multipart upload behind, an empty file is stored, and removing a
//! resource removes its object. Everything goes through the real server's
//! HTTP routes; the bucket is looked at from outside.

use reqwest::{StatusCode, header};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, redis_url, spawn_app_with, test_settings};
use crate::support::course::{
    Course, admin, course, enter_code, error_of, issue, learners, upload,
};

/// More than one 8 MiB part of a multipart upload, and not a multiple of it.
const BIG: usize = 9 * 1024 * 1024 + 123;

async fn s3_app(pool: PgPool, limit: u64) -> (TestApp, harness::s3::S3Server) {
    let s3 = harness::s3::S3Server::start(&format!("admitone-{}", Uuid::new_v4()))
        .await
        .expect("moto_server");
    let mut settings = test_settings(&redis_url());
    settings.storage.backend = server::config::sections::StorageBackend::S3;
    settings.storage.s3_bucket = s3.bucket.clone();
    settings.storage.s3_endpoint = s3.endpoint.clone();
    settings.storage.s3_region = "us-east-1".into();
    settings.storage.s3_access_key_id = harness::s3::ACCESS_KEY_ID.into();
    settings.storage.s3_secret_access_key =
        Some(secrecy::SecretString::from(harness::s3::SECRET_ACCESS_KEY));
    settings.storage.s3_allow_http = true;
    settings.storage.max_upload_bytes = limit;
    (spawn_app_with(pool, settings).await, s3)
}

async fn get_range(
    app: &TestApp,
    learner: &reqwest::Client,
    course: &Course,
    range: Option<&str>,
) -> reqwest::Response {
    crate::support::course::fetch(app, learner, course, range).await
}

fn key_of(tenant: Uuid, course: &Course) -> String {
    format!("{tenant}/{}/{}", course.share, course.resource)
}

#[sqlx::test(migrations = "../migrations")]
async fn resources_live_in_s3_and_are_read_by_ranges(pool: PgPool) {
    let (app, s3) = s3_app(pool, 64 * 1024 * 1024).await;
    let admin = admin(&app).await;
    let first = course(&app, &admin, json!({})).await;
    let bytes: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    let resource = upload(
        &app,
        &admin,
        first.share,
        "Long video",
        "video/mp4",
        bytes.clone(),
    )
    .await;
    let big = Course {
        resource,
        ..first.clone()
    };
    let stored = s3.object(&key_of(admin.tenant, &big)).await.expect("read");
    assert_eq!(
        stored.as_deref().map(<[u8]>::len),
        Some(BIG),
        "the object is whole"
    );
    assert!(
        stored.as_deref() == Some(&bytes[..]),
        "the object holds the upload"
    );
    assert!(s3.unfinished_uploads().await.expect("uploads").is_empty());

    let (_, learner) = learners(&app, 1).await.pop().expect("learner");
    let codes = issue(&app, &admin, big.share, 1).await;
    assert_eq!(
        enter_code(&app, &learner, &big.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(
        crate::support::course::open(&app, &learner, &big, None)
            .await
            .status(),
        200
    );

    // A range across the parts' seam.
    let seam = 8 * 1024 * 1024;
    let response = get_range(
        &app,
        &learner,
        &big,
        Some(&format!("bytes={}-{}", seam - 5, seam + 4)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        response.headers()[header::CONTENT_RANGE],
        format!("bytes {}-{}/{BIG}", seam - 5, seam + 4).as_str()
    );
    assert_eq!(
        response.bytes().await.expect("body"),
        &bytes[seam - 5..seam + 5]
    );
    // The last bytes, as a player asks for them.
    let response = get_range(&app, &learner, &big, Some("bytes=-7")).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(response.bytes().await.expect("body"), &bytes[BIG - 7..]);
    // Numbers past any object's end: the rest of it, or all of it.
    let response = get_range(&app, &learner, &big, Some("bytes=5-18446744073709551614")).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        response.headers()[header::CONTENT_RANGE],
        format!("bytes 5-{}/{BIG}", BIG - 1).as_str()
    );
    assert!(response.bytes().await.expect("body") == bytes[5..]);
    let response = get_range(&app, &learner, &big, Some("bytes=-18446744073709551615")).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert!(response.bytes().await.expect("body") == bytes);
    // Past the end.
    let response = get_range(&app, &learner, &big, Some(&format!("bytes={BIG}-"))).await;
    assert_eq!(response.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        response.headers()[header::CONTENT_RANGE],
        format!("bytes */{BIG}").as_str()
    );
    // The whole.
    let response = get_range(&app, &learner, &big, None).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.bytes().await.expect("body") == bytes,
        "the whole file"
    );

    // An empty file is stored too.
    let empty = upload(&app, &admin, big.share, "Empty", "text/plain", Vec::new()).await;
    let empty = Course {
        resource: empty,
        ..big.clone()
    };
    assert_eq!(
        s3.object(&key_of(admin.tenant, &empty))
            .await
            .expect("read"),
        Some(Vec::new())
    );
    // It has no bytes to give by range (416), as on the local store.
    assert_eq!(
        crate::support::course::open(&app, &learner, &empty, None)
            .await
            .status(),
        200
    );
    for range in ["bytes=0-", "bytes=-5", "bytes=-18446744073709551615"] {
        let response = get_range(&app, &learner, &empty, Some(range)).await;
        assert_eq!(
            response.status(),
            StatusCode::RANGE_NOT_SATISFIABLE,
            "{range}"
        );
        assert_eq!(
            response.headers()[header::CONTENT_RANGE],
            "bytes */0",
            "{range}"
        );
    }

    // Removing a resource removes its object, and only its.
    let response = admin
        .client
        .delete(format!(
            "{}/api/v1/shares/{}/resources/{}?force=true",
            app.address, big.share, big.resource
        ))
        .send()
        .await
        .expect("remove");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        s3.object(&key_of(admin.tenant, &big)).await.expect("read"),
        None
    );
    let mut left = s3.keys().await.expect("keys");
    left.sort();
    let mut expected = vec![key_of(admin.tenant, &first), key_of(admin.tenant, &empty)];
    expected.sort();
    assert_eq!(left, expected);
    assert_eq!(
        get_range(&app, &learner, &big, None).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn an_upload_over_the_limit_leaves_nothing_in_the_bucket(pool: PgPool) {
    let (app, s3) = s3_app(pool, 10 * 1024 * 1024).await;
    let admin = admin(&app).await;
    let share = course(&app, &admin, json!({})).await;
    let before = s3.keys().await.expect("keys");
    assert_eq!(before, [key_of(admin.tenant, &share)]);
    // Two parts' worth: the first part is sent before the limit is passed.
    let part = reqwest::multipart::Part::bytes(vec![7u8; 17 * 1024 * 1024])
        .file_name("too-big.mp4")
        .mime_str("video/mp4")
        .expect("mime");
    let response = admin
        .client
        .post(format!(
            "{}/api/v1/shares/{}/resources",
            app.address, share.share
        ))
        .multipart(
            reqwest::multipart::Form::new()
                .text("title", "Too big")
                .part("file", part),
        )
        .send()
        .await
        .expect("upload");
    assert_eq!(error_of(response).await, (413, "too_large".into()));
    assert_eq!(s3.keys().await.expect("keys"), before, "no object was left");
    assert!(
        s3.unfinished_uploads().await.expect("uploads").is_empty(),
        "the multipart upload was aborted"
    );
    let resources: i64 = sqlx::query_scalar("SELECT count(*) FROM resources")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(resources, 1, "only the course's own resource");
}
