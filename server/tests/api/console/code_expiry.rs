//! Code expiry: an unused code past its date (its own, else its batch's)
//! is refused like a revoked one, with its own error; a code bound before
//! its date keeps working. The settlement decides inside its transaction
//! (the trigger on the binding), so a code typed in before its date and
//! opened after it is refused too. Admins set dates at issuing and later,
//! per batch and per code (API and console), never in the past; an expired
//! code is not replaced by an expired one.
//!
//! Time passing is simulated by moving a stored date into the past in SQL:
//! the product refuses past dates, and a test does not wait for the clock.
//! One exception: a retried issuing compares the date its client sent
//! again, which no row holds, so that test waits two seconds and a half.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use time::{Duration, OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app};
use crate::support::course::{
    self, Admin, Course, admin, assert_invariants, course, enter_code, error_of, issue, learners,
    open, post_json, state_of,
};

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("format")
}

/// A moment `days` from now, in whole seconds (what PostgreSQL stores
/// comes back as sent).
fn in_days(days: i64) -> OffsetDateTime {
    (OffsetDateTime::now_utc() + Duration::days(days))
        .replace_nanosecond(0)
        .expect("whole seconds")
}

/// Issues `n` codes through the API with `expires_at`: (batch id, codes).
async fn issue_expiring(
    app: &TestApp,
    admin: &Admin,
    share: Uuid,
    n: usize,
    expires_at: Value,
) -> (Uuid, Vec<(Uuid, String)>) {
    let response = post_json(
        app,
        &admin.client,
        &format!("/api/v1/shares/{share}/codes"),
        json!({ "count": n, "expires_at": expires_at }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.expect("json");
    let codes = body["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id").parse().expect("uuid"),
                c["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect();
    (
        body["batch_id"]
            .as_str()
            .expect("batch")
            .parse()
            .expect("uuid"),
        codes,
    )
}

/// Moves a batch's date to now, as time passing would (every binding so
/// far came before it, as it would have).
async fn let_batch_expire(app: &TestApp, batch: Uuid) {
    sqlx::query("UPDATE code_batches SET expires_at = now() WHERE id = $1")
        .bind(batch)
        .execute(&app.pool)
        .await
        .expect("expire the batch");
}

async fn batch_of(app: &TestApp, code: Uuid) -> Uuid {
    sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(code)
        .fetch_one(&app.pool)
        .await
        .expect("batch")
}

async fn get_json(app: &TestApp, client: &reqwest::Client, path: &str) -> Value {
    let response = client
        .get(format!("{}{path}", app.address))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.expect("json")
}

/// What a refused code must leave unchanged: the share's bindings, quota
/// and records, and the code itself.
async fn snapshot(app: &TestApp, course: &Course, code: Uuid) -> (course::ShareState, Value) {
    let row: Value =
        sqlx::query_scalar("SELECT to_jsonb(c) - 'created_at' FROM auth_codes c WHERE id = $1")
            .bind(code)
            .fetch_one(&app.pool)
            .await
            .expect("code");
    (state_of(app, course.share).await, row)
}

#[sqlx::test(migrations = "../migrations")]
async fn an_unused_code_past_its_date_is_refused_and_a_bound_one_keeps_working(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let (batch, codes) =
        issue_expiring(&app, &admin, course.share, 3, json!(rfc3339(in_days(30)))).await;
    let mut people = learners(&app, 3).await.into_iter();
    let (_, holder) = people.next().expect("learner");
    let (_, late) = people.next().expect("learner");
    let (_, typed_in_time) = people.next().expect("learner");

    // Before the date: a code binds as usual; another is typed in (pending)
    // but not opened yet.
    assert_eq!(
        enter_code(&app, &holder, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &holder, &course, None).await.status(), 200);
    assert_eq!(
        enter_code(&app, &typed_in_time, &course.slug, &codes[2].1)
            .await
            .status(),
        200
    );

    let_batch_expire(&app, batch).await;

    // The bound code keeps working: its learner opens again (a fresh
    // request id; the grant is reused or a new access counted).
    assert_eq!(open(&app, &holder, &course, None).await.status(), 200);

    // An unused code is refused at entry with its own error, and nothing
    // changes.
    let before = snapshot(&app, &course, codes[1].0).await;
    let refused = enter_code(&app, &late, &course.slug, &codes[1].1).await;
    assert_eq!(error_of(refused).await, (409, "code_expired".to_owned()));
    assert_eq!(snapshot(&app, &course, codes[1].0).await, before);

    // A code typed in before the date and opened after it: the settlement
    // refuses it inside its transaction (the binding's trigger), and
    // nothing stays (no binding, no access record, no quota spent).
    let before = snapshot(&app, &course, codes[2].0).await;
    let opened = open(&app, &typed_in_time, &course, None).await;
    assert_eq!(error_of(opened).await, (409, "code_expired".to_owned()));
    assert_eq!(snapshot(&app, &course, codes[2].0).await, before);

    // The code table says which is which.
    let page = get_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/codes", course.share),
    )
    .await;
    let states: Vec<(&str, &str)> = page["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id"),
                c["state"].as_str().expect("state"),
            )
        })
        .collect();
    let state_of_code = |id: Uuid| {
        states
            .iter()
            .find(|(c, _)| *c == id.to_string())
            .map(|(_, s)| *s)
    };
    assert_eq!(state_of_code(codes[0].0), Some("bound"));
    assert_eq!(state_of_code(codes[1].0), Some("expired"));
    assert_eq!(state_of_code(codes[2].0), Some("expired"));
    let expired = get_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/codes?state=expired", course.share),
    )
    .await;
    assert_eq!(expired["codes"].as_array().expect("codes").len(), 2);
    let detail = get_json(&app, &admin.client, &format!("/api/v1/batches/{batch}")).await;
    assert_eq!(
        (&detail["unused"], &detail["bound"], &detail["expired"]),
        (&json!(0), &json!(1), &json!(2)),
        "{detail}"
    );
    assert_invariants(&app, "after expiry").await;

    // Unbinding the bound code after its date: it is expired now, and the
    // unbind says so (not "unused"); nobody can bind it again.
    let unbound = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/unbind", codes[0].0),
        json!({ "reason": "changed account" }),
    )
    .await;
    assert_eq!(unbound.status(), 200);
    let unbound: Value = unbound.json().await.expect("json");
    assert_eq!(unbound["state"], "expired", "{unbound}");
    let refused = enter_code(&app, &holder, &course.slug, &codes[0].1).await;
    assert_eq!(error_of(refused).await.1, "code_expired");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_code_date_overrides_its_batch_and_brings_an_expired_code_back(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let batch = batch_of(&app, codes[0].0).await;
    let ((_, learner), (_, other)) = {
        let mut people = learners(&app, 2).await.into_iter();
        (
            people.next().expect("learner"),
            people.next().expect("learner"),
        )
    };
    // The batch's date moves in the future through the API, then passes.
    let later = in_days(7);
    let changed = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/batches/{batch}/expiry"),
        json!({ "expires_at": rfc3339(later) }),
    )
    .await;
    assert_eq!(changed.status(), 200);
    let changed: Value = changed.json().await.expect("json");
    assert_eq!(changed["expires_at"], json!(rfc3339(later)));
    let_batch_expire(&app, batch).await;
    let refused = enter_code(&app, &learner, &course.slug, &codes[0].1).await;
    assert_eq!(error_of(refused).await.1, "code_expired");

    // One code gets a date of its own: it works again, its sibling not.
    let own = in_days(2);
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/expiry", codes[0].0),
        json!({ "expires_at": rfc3339(own) }),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.expect("json");
    assert_eq!(answer["code"]["state"], "unused");
    assert_eq!(answer["code"]["expires_at"], json!(rfc3339(own)));
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let refused = enter_code(&app, &other, &course.slug, &codes[1].1).await;
    assert_eq!(error_of(refused).await.1, "code_expired");

    // A bound code's date no longer applies: changing it is refused.
    let bound = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/expiry", codes[0].0),
        json!({ "expires_at": null }),
    )
    .await;
    assert_eq!(error_of(bound).await, (409, "code_not_unused".to_owned()));

    // Both changes are in the audit log, by whom and from what to what.
    let actions: Vec<(String, Value)> = sqlx::query_as(
        "SELECT action, details FROM audit_log WHERE action LIKE '%.expiry_changed' ORDER BY created_at",
    )
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert_eq!(actions[0].0, "batch.expiry_changed");
    assert_eq!(actions[0].1["to"], json!(rfc3339(later)));
    assert_eq!(actions[1].0, "code.expiry_changed");
    assert_eq!(actions[1].1["to"], json!(rfc3339(own)));
    assert_invariants(&app, "after overriding").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_date_in_the_past_or_not_a_date_is_refused_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let batch = batch_of(&app, codes[0].0).await;
    let past = rfc3339(OffsetDateTime::now_utc() - Duration::minutes(1));
    let batches = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM code_batches")
            .fetch_one(&app.pool)
            .await
            .expect("count")
    };
    let dates = || async {
        sqlx::query_as::<_, (Option<OffsetDateTime>, Option<OffsetDateTime>)>(
            "SELECT b.expires_at, c.expires_at FROM auth_codes c
             JOIN code_batches b ON b.id = c.batch_id WHERE c.id = $1",
        )
        .bind(codes[0].0)
        .fetch_one(&app.pool)
        .await
        .expect("dates")
    };
    let issued_before = batches().await;
    for bad in [
        json!(past),
        json!("next tuesday"),
        json!("2031-02-30T00:00:00Z"),
        // Valid RFC 3339, but past what a date may be: refused, never a 500.
        json!("9999-12-31T23:30:00-01:00"),
        json!(rfc3339(in_days(365 * 101))),
    ] {
        let answer = post_json(
            &app,
            &admin.client,
            &format!("/api/v1/shares/{}/codes", course.share),
            json!({ "count": 5, "expires_at": bad }),
        )
        .await;
        assert_eq!(answer.status(), 422, "{bad}");
        let body: Value = answer.json().await.expect("json");
        assert_eq!(body["field"], "expires_at", "{bad}: {body}");
        for path in [
            format!("/api/v1/batches/{batch}/expiry"),
            format!("/api/v1/codes/{}/expiry", codes[0].0),
        ] {
            let answer = post_json(&app, &admin.client, &path, json!({ "expires_at": bad })).await;
            assert_eq!(answer.status(), 422, "{path} {bad}");
        }
    }
    assert_eq!(batches().await, issued_before, "no batch was issued");
    assert_eq!(dates().await, (None, None), "no date was set");
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action LIKE '%.expiry_changed'")
            .fetch_one(&app.pool)
            .await
            .expect("audit");
    assert_eq!(audited, 0);

    // Another tenant's admin cannot change this batch's date.
    let stranger = course::admin(&app).await;
    for path in [
        format!("/api/v1/batches/{batch}/expiry"),
        format!("/api/v1/codes/{}/expiry", codes[0].0),
    ] {
        let answer = post_json(
            &app,
            &stranger.client,
            &path,
            json!({ "expires_at": rfc3339(in_days(3)) }),
        )
        .await;
        assert_eq!(answer.status(), 403, "{path}");
    }
    assert_eq!(dates().await, (None, None));
}

/// A retry of an issuing with the same Idempotency-Key gets the first
/// answer even when the batch's date has passed meanwhile: the key is
/// looked up before the date is judged (a retry is not a new request).
#[sqlx::test(migrations = "../migrations")]
async fn a_retried_issuing_finds_its_batch_after_the_date_passed(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let soon = (OffsetDateTime::now_utc() + Duration::seconds(2))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let issue = || {
        admin
            .client
            .post(format!(
                "{}/api/v1/shares/{}/codes",
                app.address, course.share
            ))
            .header("idempotency-key", "issue-soon")
            .json(&json!({ "count": 2, "expires_at": soon }))
            .send()
    };
    let first = issue().await.expect("first");
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    // The date passes (a client that lost the answer retries later).
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let retry = issue().await.expect("retry");
    assert_eq!(
        retry.status(),
        StatusCode::CREATED,
        "the first answer again"
    );
    let retry: Value = retry.json().await.expect("json");
    assert_eq!(retry["batch_id"], first["batch_id"]);
    assert_eq!(retry["codes"], first["codes"]);
    let batches: i64 = sqlx::query_scalar("SELECT count(*) FROM code_batches WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("batches");
    assert_eq!(batches, 1, "nothing issued twice");
    // A new request with that date now is refused, as any past date: under
    // a new key...
    let new_key = admin
        .client
        .post(format!(
            "{}/api/v1/shares/{}/codes",
            app.address, course.share
        ))
        .header("idempotency-key", "issue-late")
        .json(&json!({ "count": 2, "expires_at": soon }))
        .send()
        .await
        .expect("new key");
    assert_eq!(new_key.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // ... and without one.
    let late = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/codes", course.share),
        json!({ "count": 2, "expires_at": soon }),
    )
    .await;
    assert_eq!(late.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// Replacing a lost code past its date would issue a code that is expired
/// already: refused (`409 code_expired`), nothing changes, and after the
/// admin gives the code a later date its replacement is usable.
#[sqlx::test(migrations = "../migrations")]
async fn an_expired_code_is_not_replaced_by_an_expired_one(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let (batch, codes) =
        issue_expiring(&app, &admin, course.share, 1, json!(rfc3339(in_days(3)))).await;
    let_batch_expire(&app, batch).await;
    let code = codes[0].0;
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("codes");
    let replace_path = format!("/api/v1/codes/{code}/replace");
    let replace = || post_json(&app, &admin.client, &replace_path, json!({}));
    assert_eq!(
        course::error_of(replace().await).await,
        (409, "code_expired".to_owned())
    );
    let after: (i64, bool) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM auth_codes WHERE share_id = $1),
                (SELECT revoked_at IS NOT NULL FROM auth_codes WHERE id = $2)",
    )
    .bind(course.share)
    .bind(code)
    .fetch_one(&app.pool)
    .await
    .expect("after");
    assert_eq!(after, (before, false), "nothing issued, nothing revoked");

    // Given a later date of its own, it is replaced by a usable code.
    let dated = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{code}/expiry"),
        json!({ "expires_at": rfc3339(in_days(5)) }),
    )
    .await;
    assert_eq!(dated.status(), StatusCode::OK);
    let replaced = replace().await;
    assert_eq!(replaced.status(), StatusCode::CREATED);
    let replaced: Value = replaced.json().await.expect("json");
    let (_, learner) = course::learners(&app, 1).await.remove(0);
    let entered = enter_code(
        &app,
        &learner,
        &course.slug,
        replaced["code"].as_str().expect("code"),
    )
    .await;
    assert_eq!(
        entered.status(),
        StatusCode::OK,
        "the replacement is usable"
    );
}
