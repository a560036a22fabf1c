//! Transfer request fixtures: a course whose code is bound to a learner, a
//! learner asking to move it, the receiving account confirming (with the
//! token the mailed link carries), an admin deciding, and who holds a code.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::app::TestApp;
use crate::support::course::{Admin, Course, course, enter_code, issue, learners, open, post_json};

pub fn email_of(id: Uuid) -> String {
    format!("learner-{id}@example.com")
}

/// A course with one code (of `codes` issued), bound to a learner who
/// opened it once.
pub async fn bound_course(
    app: &TestApp,
    owner: &Admin,
    codes: usize,
) -> (Course, Vec<(Uuid, String)>, (Uuid, reqwest::Client)) {
    let course = course(app, owner, json!({ "title": "Rust 101" })).await;
    let codes = issue(app, owner, course.share, codes).await;
    let ann = learners(app, 1).await.remove(0);
    assert_eq!(
        enter_code(app, &ann.1, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(app, &ann.1, &course, None).await.status(), 200);
    (course, codes, ann)
}

pub async fn ask(
    app: &TestApp,
    client: &reqwest::Client,
    course: &Course,
    body: Value,
) -> reqwest::Response {
    post_json(
        app,
        client,
        &format!("/api/v1/s/{}/transfer", course.slug),
        body,
    )
    .await
}

pub async fn confirm(app: &TestApp, client: &reqwest::Client, token: &str) -> reqwest::Response {
    post_json(
        app,
        client,
        "/api/v1/transfers/confirm",
        json!({ "token": token }),
    )
    .await
}

pub async fn decide(
    app: &TestApp,
    owner: &Admin,
    transfer: Uuid,
    verb: &str,
    body: Value,
) -> reqwest::Response {
    post_json(
        app,
        &owner.client,
        &format!(
            "/api/v1/tenants/{}/transfers/{transfer}/{verb}",
            owner.tenant
        ),
        body,
    )
    .await
}

/// The confirmation link's token as the engine derives it (what the mail
/// carries), for tests that do not read the mail.
pub fn token_for(transfer: Uuid) -> String {
    use secrecy::ExposeSecret as _;
    crate::support::mail::link_key()
        .token(engine::accounts::links::LinkPurpose::Transfer, transfer)
        .expose_secret()
        .to_owned()
}

/// Who a code is bound to.
pub async fn holder(app: &TestApp, code: Uuid) -> Option<Uuid> {
    sqlx::query_scalar("SELECT bound_principal FROM auth_codes WHERE id = $1")
        .bind(code)
        .fetch_one(&app.pool)
        .await
        .expect("holder")
}

pub async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

/// Asks, confirms, and returns the request's id (confirmed: awaiting an
/// admin).
pub async fn confirmed_request(
    app: &TestApp,
    course: &Course,
    (from, to): (&reqwest::Client, &(Uuid, reqwest::Client)),
) -> Uuid {
    let asked = ask(app, from, course, json!({ "email": email_of(to.0) })).await;
    assert_eq!(asked.status(), 201);
    let body: Value = asked.json().await.expect("json");
    let id: Uuid = body["id"].as_str().expect("id").parse().expect("uuid");
    let confirmed = confirm(app, &to.1, &token_for(id)).await;
    assert_eq!(confirmed.status(), 200);
    id
}
