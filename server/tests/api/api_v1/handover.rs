//! What the JSON API hands over once, with an API token: a console batch's
//! codes as a one-time CSV, and a lost code's replacement (its new plain
//! code answered once, and again only to a retry with the same
//! `Idempotency-Key` while it is still unused). Final states are checked
//! with SQL.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, spawn_app};
use crate::support::console::{csv_rows, issue_by_form};
use crate::support::course::{admin, course, enter_code, error_of, learners, open};
use crate::support::tokens::{as_token, create_token, get_as};

async fn replace_as(
    app: &TestApp,
    token: &str,
    code: Uuid,
    key: Option<&str>,
) -> reqwest::Response {
    let mut request = new_client()
        .post(format!("{}/api/v1/codes/{code}/replace", app.address))
        .bearer_auth(token);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.expect("replace")
}

#[sqlx::test(migrations = "../migrations")]
async fn a_token_reads_a_console_batch_and_takes_its_codes_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let (_, batch) = issue_by_form(&app.address, &admin, course.share, "3").await;
    let writer = create_token(&app, &admin, &["read", "write"]).await;
    let reader = create_token(&app, &admin, &["read"]).await;
    let stranger = create_token(
        &app,
        &crate::support::course::admin(&app).await,
        &["read", "write"],
    )
    .await;

    let (status, read) = as_token(
        &app,
        &reader,
        Method::GET,
        &format!("/api/v1/batches/{batch}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["id"], batch.to_string());
    assert_eq!(read["share_id"], course.share.to_string());
    assert_eq!(read["label"], "Big");
    assert_eq!(
        (
            &read["count"],
            &read["unused"],
            &read["bound"],
            &read["revoked"]
        ),
        (&json!(3), &json!(3), &json!(0), &json!(0))
    );
    let (status, _) = as_token(
        &app,
        &stranger,
        Method::GET,
        &format!("/api/v1/batches/{batch}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another tenant's batch");
    let (status, _) = as_token(
        &app,
        &writer,
        Method::GET,
        &format!("/api/v1/batches/{}", Uuid::new_v4()),
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "an unknown batch looks like a stranger's"
    );

    // Plain codes: not for a reader, nor for another tenant.
    let csv = format!("/api/v1/batches/{batch}/codes.csv");
    assert_eq!(
        get_as(&app, &reader, &csv).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        get_as(&app, &stranger, &csv).await.status(),
        StatusCode::FORBIDDEN
    );
    // The issuing member's token takes them, once.
    let rows = csv_rows(get_as(&app, &writer, &csv).await, "code,link,batch_label").await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    let link = format!("/s/{},Big", course.slug);
    for row in &rows {
        assert!(row.ends_with(&link), "{row}");
        let code = row.split(',').next().expect("code");
        let (status, found) = as_token(
            &app,
            &reader,
            Method::POST,
            &format!("/api/v1/tenants/{}/codes/find", admin.tenant),
            Some(json!({ "code": code })),
        )
        .await;
        assert_eq!(status, 200, "{found}");
        assert_eq!(found["code"]["state"], "unused");
    }
    let again = get_as(&app, &writer, &csv).await;
    assert_eq!(
        error_of(again).await,
        (410, "already_downloaded".to_owned())
    );
    // The console's copy was that one copy.
    let console = admin
        .client
        .get(format!(
            "{}/admin/t/{}/s/{}/batches/{batch}/codes.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("console csv");
    assert_eq!(console.status(), StatusCode::GONE);
    let downloads: Vec<Value> = sqlx::query_scalar(
        "SELECT details FROM audit_log WHERE action = 'batch.downloaded' AND target_id = $1",
    )
    .bind(batch)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(downloads.len(), 1, "the download is audited once");
    // Made with a token, and the entry says which: a download the admin
    // did not make stands out.
    let token_id: Uuid = sqlx::query_scalar(
        "SELECT id FROM api_tokens WHERE tenant_id = $1 AND name LIKE '%write%'",
    )
    .bind(admin.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("token");
    assert_eq!(downloads[0]["via"], format!("token:{token_id}"));
}

#[sqlx::test(migrations = "../migrations")]
async fn replacing_a_lost_code_answers_the_new_code_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let writer = create_token(&app, &admin, &["read", "write"]).await;
    let reader = create_token(&app, &admin, &["read"]).await;
    let stranger = create_token(
        &app,
        &crate::support::course::admin(&app).await,
        &["read", "write"],
    )
    .await;
    let codes = crate::support::course::issue(&app, &admin, course.share, 2).await;
    let (lost, lost_code) = codes[0].clone();
    let (kept, _) = codes[1].clone();

    // Refused callers change nothing.
    assert_eq!(
        replace_as(&app, &reader, lost, None).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        replace_as(&app, &stranger, lost, None).await.status(),
        StatusCode::FORBIDDEN
    );
    let bad_key = replace_as(&app, &writer, lost, Some("bad key with spaces")).await;
    assert_eq!(bad_key.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let untouched: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM auth_codes WHERE share_id = $1 AND revoked_at IS NULL",
    )
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("count");
    assert_eq!(untouched, 2);

    let first = replace_as(&app, &writer, lost, Some("replace-1")).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    assert_eq!(first["replaced_id"], lost.to_string());
    let new_id: Uuid = first["id"].as_str().expect("id").parse().expect("uuid");
    let new_code = first["code"].as_str().expect("code").to_owned();
    assert_ne!(new_code, lost_code);
    let batch: Uuid = first["batch_id"]
        .as_str()
        .expect("batch")
        .parse()
        .expect("uuid");

    // A retry of the lost answer gets the same code; nothing new is made.
    let retry = replace_as(&app, &writer, lost, Some("replace-1")).await;
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(retry.json::<Value>().await.expect("json"), first);
    // Without the key, the old code is gone: it cannot be replaced twice.
    let twice = replace_as(&app, &writer, lost, Some("replace-2")).await;
    assert_eq!(
        error_of(twice).await,
        (409, "code_not_replaceable".to_owned())
    );

    // The old code is refused, the new one works, in the same batch.
    let (_, learner) = learners(&app, 1).await.pop().expect("learner");
    let refused = enter_code(&app, &learner, &course.slug, &lost_code).await;
    assert_eq!(
        refused.status().as_u16() / 100,
        4,
        "the lost code still works"
    );
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &new_code)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let stored: Vec<(Uuid, Uuid, bool, bool)> = sqlx::query_as(
        "SELECT id, batch_id, revoked_at IS NOT NULL, bound_principal IS NOT NULL
         FROM auth_codes WHERE share_id = $1 ORDER BY id",
    )
    .bind(course.share)
    .fetch_all(&app.pool)
    .await
    .expect("codes");
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert!(stored.iter().all(|c| c.1 == batch), "one batch: {stored:?}");
    let state = |id: Uuid| stored.iter().find(|c| c.0 == id).map(|c| (c.2, c.3));
    assert_eq!(state(lost), Some((true, false)), "the lost code is revoked");
    assert_eq!(state(new_id), Some((false, true)), "the new code is bound");
    assert_eq!(state(kept), Some((false, false)));
    let (_, read) = as_token(
        &app,
        &reader,
        Method::GET,
        &format!("/api/v1/batches/{batch}"),
        None,
    )
    .await;
    assert_eq!(
        (&read["unused"], &read["bound"], &read["revoked"]),
        (&json!(1), &json!(1), &json!(1)),
        "{read}"
    );

    // A bound code is not replaced (unbind or revoke it instead).
    let bound = replace_as(&app, &writer, new_id, None).await;
    assert_eq!(
        error_of(bound).await,
        (409, "code_not_replaceable".to_owned())
    );
    let codes_now: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(codes_now, 3, "refusals issue nothing");
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'code.replaced' AND target_id = $1",
    )
    .bind(lost)
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audited, 1);
}

/// A replayed replacement is handed out only while it is still unused: a
/// replacement replaced in turn (or bound, or revoked) is never answered
/// again as if fresh.
#[sqlx::test(migrations = "../migrations")]
async fn a_replayed_replacement_is_never_a_dead_code(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let writer = create_token(&app, &admin, &["read", "write"]).await;
    let codes = crate::support::course::issue(&app, &admin, course.share, 1).await;
    let first = replace_as(&app, &writer, codes[0].0, Some("k1")).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    let b: Uuid = first["id"].as_str().expect("id").parse().expect("uuid");
    let again = replace_as(&app, &writer, codes[0].0, Some("k1")).await;
    assert_eq!(
        again.status(),
        StatusCode::CREATED,
        "still unused: replayed"
    );
    let second = replace_as(&app, &writer, b, Some("k2")).await;
    assert_eq!(second.status(), StatusCode::CREATED);
    // B is revoked now: the first answer is not handed out again.
    let stale = replace_as(&app, &writer, codes[0].0, Some("k1")).await;
    assert_eq!(
        error_of(stale).await,
        (409, "idempotent_answer_gone".to_owned())
    );
}
