//! Imported codes: codes a shop or an LMS already sold, brought into a
//! share (API and console), stored only as digests, deduplicated against
//! every code of the platform, with a report of the lines left out; a
//! learner redeems one like ours. Shared here: importing through the API
//! and the console's form, and what the database holds afterwards.

mod form;
mod once;
mod reports;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::app::TestApp;
use crate::support::course::{course, post_json};

async fn import(app: &TestApp, client: &reqwest::Client, share: Uuid, body: Value) -> (u16, Value) {
    let response = post_json(
        app,
        client,
        &format!("/api/v1/shares/{share}/imports"),
        body,
    )
    .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What the database holds for a share: (codes, batches, foreign_codes).
async fn stored(app: &TestApp, share: Uuid) -> (i64, i64, bool) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM auth_codes WHERE share_id = $1),
                (SELECT count(*) FROM code_batches WHERE share_id = $1),
                (SELECT foreign_codes FROM shares WHERE id = $1)",
    )
    .bind(share)
    .fetch_one(&app.pool)
    .await
    .expect("stored")
}

/// (digest, hint, batch count, batch source, batch alphabet).
type CodeRow = (Vec<u8>, String, i32, String, Option<String>);

fn rejected(report: &Value) -> Vec<(u64, String)> {
    report["first_rejected"]
        .as_array()
        .expect("first_rejected")
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().expect("line"),
                r["reason"].as_str().expect("reason").to_owned(),
            )
        })
        .collect()
}

/// Fails if any row of the tables an import writes holds one of `texts`
/// (the plain codes): codes, batches and their reports, the audit log, the
/// outbox, idempotency records.
async fn assert_no_plain_text(app: &TestApp, texts: &[&str]) {
    for table in [
        "auth_codes",
        "code_batches",
        "audit_log",
        "outbox",
        "idempotency_keys",
    ] {
        let rows: Vec<String> = sqlx::query_scalar(&format!("SELECT t::text FROM {table} t"))
            .fetch_all(&app.pool)
            .await
            .expect("rows");
        for row in rows {
            for text in texts {
                assert!(!row.contains(text), "{table} holds {text}: {row}");
            }
        }
    }
}

/// A second share of the admin's tenant.
async fn course_b(app: &TestApp, admin: &crate::support::course::Admin) -> Uuid {
    course(app, admin, json!({ "title": "Another course" }))
        .await
        .share
}

/// Posts the console's import form (multipart) as `client`.
async fn import_form(
    app: &TestApp,
    client: &reqwest::Client,
    tenant: Uuid,
    share: Uuid,
    fields: &[(&str, &str)],
    file: &str,
) -> reqwest::Response {
    let mut form = reqwest::multipart::Form::new();
    for (name, value) in fields {
        form = form.text((*name).to_owned(), (*value).to_owned());
    }
    let part = reqwest::multipart::Part::bytes(file.as_bytes().to_vec())
        .file_name("codes.csv")
        .mime_str("text/csv")
        .expect("mime");
    client
        .post(format!("{}/admin/t/{tenant}/s/{share}/import", app.address))
        .multipart(form.part("file", part))
        .send()
        .await
        .expect("request")
}
