//! Course fixtures: an admin with a tenant, active shares with a resource,
//! issued codes, many signed-in learners, a learner with a pending or a
//! bound code; the learner's code entry, opening and bytes; what the
//! database holds for a share, and the SQL invariants.

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, test_settings};

pub const PASSWORD: &str = "correct horse battery";

/// Settings whose attempt limits stay out of the way of load tests.
pub fn load_settings() -> server::config::Settings {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.sign_in_per_email = 1_000_000;
    settings.throttle.sign_in_per_ip = 1_000_000;
    settings.throttle.code_per_account = 1_000_000;
    settings.throttle.code_per_ip = 1_000_000;
    settings.throttle.code_per_share = 1_000_000;
    settings.database.max_connections = 20;
    settings
}

/// How many times each concurrency case repeats (`make stress` raises it).
pub fn repeats() -> usize {
    std::env::var("STRESS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

pub struct Admin {
    pub client: reqwest::Client,
    pub tenant: Uuid,
}

pub async fn admin(app: &TestApp) -> Admin {
    use engine::tenants::{TenantName, TenantSlug, ensure_tenant_with_owner};
    let email = format!("admin-{}@example.com", Uuid::new_v4());
    let id = app.create_account(&email, PASSWORD).await;
    let (tenant, _) = ensure_tenant_with_owner(
        &app.pool,
        &TenantSlug::parse(&format!("t-{}", &Uuid::new_v4().simple().to_string()[..12]))
            .expect("slug"),
        &TenantName::parse("Course Co").expect("name"),
        id,
    )
    .await
    .expect("tenant");
    let client = new_client();
    app.login_as(&client, &email, PASSWORD).await;
    Admin {
        client,
        tenant: tenant.0,
    }
}

#[derive(Clone, Debug)]
pub struct Course {
    pub share: Uuid,
    pub slug: String,
    pub resource: Uuid,
}

pub async fn post_json(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
    body: Value,
) -> reqwest::Response {
    client
        .post(format!("{}{path}", app.address))
        .json(&body)
        .send()
        .await
        .expect("request")
}

pub async fn put_json(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
    body: Value,
) -> reqwest::Response {
    client
        .put(format!("{}{path}", app.address))
        .json(&body)
        .send()
        .await
        .expect("request")
}

/// An active share (with `extra` fields) and one uploaded video resource.
/// Its quota is far above what any test spends, so that every settlement
/// debits a quota slot (`"quota": null` in `extra` for none).
pub async fn course(app: &TestApp, admin: &Admin, extra: Value) -> Course {
    let mut body = json!({ "title": "Rust in Depth", "status": "active", "quota": 1_000_000 });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let response = post_json(
        app,
        &admin.client,
        &format!("/api/v1/tenants/{}/shares", admin.tenant),
        body,
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.text().await.unwrap_or_default()
    );
    let share: Value = response.json().await.expect("json");
    let share_id: Uuid = share["id"].as_str().expect("id").parse().expect("uuid");
    let resource = upload(
        app,
        admin,
        share_id,
        "Lesson 1",
        "video/mp4",
        b"0123456789abcdefghij".to_vec(),
    )
    .await;
    Course {
        share: share_id,
        slug: share["slug"].as_str().expect("slug").to_owned(),
        resource,
    }
}

pub async fn upload(
    app: &TestApp,
    admin: &Admin,
    share: Uuid,
    title: &str,
    content_type: &str,
    bytes: Vec<u8>,
) -> Uuid {
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name("lesson.mp4")
        .mime_str(content_type)
        .expect("mime");
    let form = reqwest::multipart::Form::new()
        .text("title", title.to_owned())
        .part("file", part);
    let response = admin
        .client
        .post(format!("{}/api/v1/shares/{share}/resources", app.address))
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.text().await.unwrap_or_default()
    );
    let resource: Value = response.json().await.expect("json");
    resource["id"].as_str().expect("id").parse().expect("uuid")
}

/// Issues `n` codes; returns (id, plain code) pairs.
pub async fn issue(app: &TestApp, admin: &Admin, share: Uuid, n: usize) -> Vec<(Uuid, String)> {
    let response = post_json(
        app,
        &admin.client,
        &format!("/api/v1/shares/{share}/codes"),
        json!({ "count": n }),
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.text().await.unwrap_or_default()
    );
    let body: Value = response.json().await.expect("json");
    body["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id").parse().expect("uuid"),
                c["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect()
}

/// `n` learner accounts (inserted in one statement, their addresses
/// verified), each signed in with its own client.
pub async fn learners(app: &TestApp, n: usize) -> Vec<(Uuid, reqwest::Client)> {
    use engine::accounts::{Password, hash_password};
    let hash = hash_password(&Password::parse(secrecy::SecretString::from(PASSWORD)).expect("pw"))
        .await
        .expect("hash");
    let ids: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
    let emails: Vec<String> = ids
        .iter()
        .map(|id| format!("learner-{id}@example.com"))
        .collect();
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
         SELECT id, email, 'Learner', $3, now() FROM UNNEST($1::uuid[], $2::text[]) AS l(id, email)",
    )
    .bind(&ids)
    .bind(&emails)
    .bind(&hash)
    .execute(&app.pool)
    .await
    .expect("insert learners");
    let clients: Vec<reqwest::Client> = (0..n).map(|_| new_client()).collect();
    join_all(
        clients
            .iter()
            .zip(&emails)
            .map(|(c, e)| app.login_as(c, e, PASSWORD)),
    )
    .await;
    ids.into_iter().zip(clients).collect()
}

pub async fn enter_code(
    app: &TestApp,
    client: &reqwest::Client,
    slug: &str,
    code: &str,
) -> reqwest::Response {
    post_json(
        app,
        client,
        &format!("/api/v1/s/{slug}/code"),
        json!({ "code": code }),
    )
    .await
}

/// Opens the course's resource the way a learner does (`POST …/open`, the
/// one request that may count an access), and, when it opened, fetches
/// the bytes under the grant it left, which must serve. The opening's
/// answer.
pub async fn open(
    app: &TestApp,
    client: &reqwest::Client,
    course: &Course,
    key: Option<&str>,
) -> reqwest::Response {
    let opened = open_only(app, client, course, key).await;
    if opened.status() == 200 {
        let bytes = fetch(app, client, course, None).await;
        assert_eq!(bytes.status(), 200, "the bytes under the grant just opened");
    }
    opened
}

/// `POST …/open` alone: the opening's answer, without fetching the bytes
/// (for a test that revokes or unbinds concurrently, where a grant may
/// rightly end between the opening and the bytes).
pub async fn open_only(
    app: &TestApp,
    client: &reqwest::Client,
    course: &Course,
    key: Option<&str>,
) -> reqwest::Response {
    let mut request = client.post(format!(
        "{}/api/v1/s/{}/resources/{}/open",
        app.address, course.slug, course.resource
    ));
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.expect("request")
}

/// `GET …/content` of the course's resource (with `range`): the bytes,
/// served only under a live grant; never counts.
pub async fn fetch(
    app: &TestApp,
    client: &reqwest::Client,
    course: &Course,
    range: Option<&str>,
) -> reqwest::Response {
    let mut request = client.get(content_url(app, course));
    if let Some(range) = range {
        request = request.header("range", range);
    }
    request.send().await.expect("request")
}

/// Where the course's resource's bytes are.
pub fn content_url(app: &TestApp, course: &Course) -> String {
    format!(
        "{}/api/v1/s/{}/resources/{}/content",
        app.address, course.slug, course.resource
    )
}

/// Ends every live grant of `share` now, as if its time had run out:
/// the next opening counts a new access (a test that waits for grants to
/// expire would depend on how fast the machine is).
pub async fn end_grants(app: &TestApp, share: Uuid) {
    sqlx::query(
        "UPDATE access_records SET expires_at = now() - interval '1 second'
          WHERE share_id = $1 AND expires_at > now() - interval '1 second'",
    )
    .bind(share)
    .execute(&app.pool)
    .await
    .expect("grants ended");
}

/// The error code of a JSON error response.
pub async fn error_of(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["code"].as_str().unwrap_or("").to_owned())
}

/// What the database says about a share.
#[derive(Debug, PartialEq, Eq)]
pub struct ShareState {
    pub bound: i64,
    pub quota_used: i64,
    pub records: i64,
}

pub async fn state_of(app: &TestApp, share: Uuid) -> ShareState {
    let (bound, quota_used, records): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL),
                (SELECT coalesce(sum(used), 0)::bigint FROM share_quota_slots WHERE share_id = $1),
                (SELECT count(*) FROM access_records WHERE share_id = $1)",
    )
    .bind(share)
    .fetch_one(&app.pool)
    .await
    .expect("state");
    ShareState {
        bound,
        quota_used,
        records,
    }
}

/// Asserts that every SQL invariant holds.
pub async fn assert_invariants(app: &TestApp, context: &str) {
    let violations = engine::invariants::violations(&app.pool)
        .await
        .expect("checks");
    assert!(violations.is_empty(), "{context}: {violations:?}");
}

/// A course with one learner who entered a code, and the code's id.
pub async fn one_learner(app: &TestApp, admin: &Admin) -> (Course, Uuid, Uuid, reqwest::Client) {
    let course = course(app, admin, json!({})).await;
    let (code_id, code) = issue(app, admin, course.share, 1).await.remove(0);
    let (learner, client) = learners(app, 1).await.remove(0);
    assert_eq!(
        enter_code(app, &client, &course.slug, &code).await.status(),
        200
    );
    (course, code_id, learner, client)
}

/// A course with one code, bound to a learner who opened it once.
pub async fn bound_course(
    app: &TestApp,
    owner: &Admin,
) -> (Course, (Uuid, String), (Uuid, reqwest::Client)) {
    let course = course(app, owner, json!({ "title": "Rust 101" })).await;
    let code = issue(app, owner, course.share, 1).await.remove(0);
    let mut people = learners(app, 1).await;
    let ann = people.remove(0);
    assert_eq!(
        enter_code(app, &ann.1, &course.slug, &code.1)
            .await
            .status(),
        200
    );
    assert_eq!(open(app, &ann.1, &course, None).await.status(), 200);
    (course, code, ann)
}

/// A 1×1 PNG.
pub const PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
