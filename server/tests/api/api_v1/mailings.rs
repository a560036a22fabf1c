//! A mailable batch's codes sent by mail (`POST /api/v1/batches/{id}/send`,
//! `GET …/recipients`), against real PostgreSQL, Redis and SMTP: a
//! thousand addresses get a thousand distinct codes of the batch, one
//! mail each; the same list again mails no one; two sends racing hand no
//! code out twice; a bad list is refused whole. Checked in the SMTP
//! server and the database.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::TestApp;
use crate::support::course::{self, admin, enter_code, learners, open};
use crate::support::mail::spawn_app_with_mail;
use crate::support::tokens::{as_token, create_token};

/// A course and a token that may write.
pub(super) async fn shop(app: &TestApp) -> (course::Course, String) {
    let admin = admin(app).await;
    let course = course::course(app, &admin, json!({ "quota": null })).await;
    let token = create_token(app, &admin, &["read", "write"]).await;
    (course, token)
}

/// Issues a batch of `count` codes (`mailable` or not); its id and the
/// codes its answer carried (none for a mailable batch).
pub(super) async fn batch(
    app: &TestApp,
    token: &str,
    share: Uuid,
    count: usize,
    mailable: bool,
) -> (Uuid, Vec<String>) {
    let (status, issued) = as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/shares/{share}/codes"),
        Some(json!({ "count": count, "mailable": mailable })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let codes = issued["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c["code"].as_str().expect("code").to_owned())
        .collect();
    (
        issued["batch_id"]
            .as_str()
            .expect("id")
            .parse()
            .expect("uuid"),
        codes,
    )
}

pub(super) async fn send(
    app: &TestApp,
    token: &str,
    batch: Uuid,
    body: Value,
) -> (StatusCode, Value) {
    as_token(
        app,
        token,
        Method::POST,
        &format!("/api/v1/batches/{batch}/send"),
        Some(body),
    )
    .await
}

pub(super) async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.pool)
        .await
        .expect(sql)
}

/// The code a mail of codes carries (its indented `XXXX-XXXX-XXXX` line).
pub(crate) fn code_in(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|line| line.len() == 14 && line.matches('-').count() == 2)
        .unwrap_or_else(|| panic!("no code in {text}"))
        .to_owned()
}

/// A thousand addresses: a thousand mails arrive, each to its address,
/// each with a distinct code of the batch (its digest is one of the
/// batch's rows), which the issuing answer never showed; the same list
/// again mails no one; every recipient reads back as sent, and one of
/// them, once redeemed, as redeemed.
#[sqlx::test(migrations = "../migrations")]
async fn a_thousand_addresses_get_a_thousand_distinct_codes_once(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (course, token) = shop(&app).await;
    let (batch_id, issued) = batch(&app, &token, course.share, 1000, true).await;
    assert!(
        issued.is_empty(),
        "a mailable batch's codes are not handed out"
    );
    let keyring = crate::support::app::test_settings(&crate::support::app::redis_url())
        .keyring()
        .expect("keyring");
    let digests: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT digest FROM auth_codes WHERE batch_id = $1")
            .bind(batch_id)
            .fetch_all(&app.pool)
            .await
            .expect("the batch's digests");
    let digests: HashSet<Vec<u8>> = digests.into_iter().collect();
    let of_the_batch = |code: &str| {
        let plain = engine::codes::PlainCode::parse(code).expect("a well-formed code");
        keyring
            .candidates(&plain)
            .iter()
            .any(|digest| digests.contains(digest))
    };
    let addresses: Vec<String> = (0..1000)
        .map(|i| format!("reader-{i}@example.com"))
        .collect();

    let (status, report) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": addresses, "addressed": false, "dry_run": true }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(
        (
            report["sent"].clone(),
            report["to_send"].clone(),
            report["free"].clone()
        ),
        (json!(0), json!(1000), json!(1000)),
        "a dry run sends nothing"
    );
    assert_eq!(count(&app, "SELECT count(*) FROM code_mailings").await, 0);

    let (status, report) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": addresses, "addressed": false }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["sent"], 1000);
    let mails = sink.wait_for_count(1000, Duration::from_secs(180)).await;
    let mut code_of: HashMap<String, String> = HashMap::new();
    for mail in &mails {
        assert_eq!(mail.to.len(), 1);
        let code = code_in(&mail.text);
        assert!(of_the_batch(&code), "{code} is one of the batch's");
        assert!(
            code_of.insert(mail.to[0].clone(), code).is_none(),
            "{} got two mails",
            mail.to[0]
        );
    }
    let codes: HashSet<&String> = code_of.values().collect();
    assert_eq!(
        (code_of.len(), codes.len()),
        (1000, 1000),
        "distinct codes, one each"
    );
    assert!(addresses.iter().all(|a| code_of.contains_key(a)));

    // The same list again: nobody is mailed.
    let (status, again) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": addresses, "addressed": false }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (
            again["sent"].clone(),
            again["already_sent"].clone(),
            again["free"].clone()
        ),
        (json!(0), json!(1000), json!(0))
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM mail_outbox WHERE template = 'codes_sent'"
        )
        .await,
        1000
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.received().len(), 1000, "no mail went twice");

    // Someone redeems the code mailed to reader-0 (not addressed: anyone).
    let (_, client) = learners(&app, 1).await.pop().expect("a learner");
    let code = &code_of["reader-0@example.com"];
    assert!(
        enter_code(&app, &client, &course.slug, code)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    let (status, page) = as_token(
        &app,
        &token,
        Method::GET,
        &format!("/api/v1/batches/{batch_id}/recipients?limit=1000"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let states: Vec<(&str, &str)> = page["recipients"]
        .as_array()
        .expect("recipients")
        .iter()
        .map(|r| {
            (
                r["email"].as_str().expect("email"),
                r["state"].as_str().expect("state"),
            )
        })
        .collect();
    assert_eq!(states.len(), 1000);
    assert!(states.contains(&("reader-0@example.com", "redeemed")));
    assert_eq!(states.iter().filter(|(_, s)| *s == "sent").count(), 999);
}

/// Two sends of overlapping lists at once: every address gets exactly one
/// code, no code goes to two addresses, and each code is addressed to its
/// recipient (the default).
#[sqlx::test(migrations = "../migrations")]
async fn racing_sends_hand_out_each_code_once(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (course, token) = shop(&app).await;
    let (batch_id, _) = batch(&app, &token, course.share, 30, true).await;
    let first: Vec<String> = (0..20).map(|i| format!("p{i}@example.com")).collect();
    let second: Vec<String> = (10..30).map(|i| format!("p{i}@example.com")).collect();
    let (a, b) = tokio::join!(
        send(&app, &token, batch_id, json!({ "addresses": first })),
        send(&app, &token, batch_id, json!({ "addresses": second }))
    );
    assert_eq!(
        (a.0, b.0),
        (StatusCode::OK, StatusCode::OK),
        "{} {}",
        a.1,
        b.1
    );
    let sent = a.1["sent"].as_i64().expect("sent") + b.1["sent"].as_i64().expect("sent");
    assert_eq!(sent, 30, "{} {}", a.1, b.1);
    assert_eq!(count(&app, "SELECT count(*) FROM code_mailings").await, 30);
    assert_eq!(
        count(&app, "SELECT count(DISTINCT code_id) FROM code_mailings").await,
        30
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM code_mailings m JOIN auth_codes c ON c.tenant_id = m.tenant_id
             AND c.id = m.code_id WHERE c.addressed_to = m.email"
        )
        .await,
        30,
        "each code addressed to its recipient"
    );
    // The batch is spent: one more address is refused, with nothing sent.
    let (status, refused) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": ["late@example.com"] }),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("not_enough_codes"))
    );
}

/// A list with a line that is not an address, a list longer than the
/// codes left, an empty list, a batch that is not mailable, another
/// tenant's batch: each refused with its reason, nothing sent.
#[sqlx::test(migrations = "../migrations")]
async fn a_bad_send_is_refused_whole(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let (course, token) = shop(&app).await;
    let (mailable, _) = batch(&app, &token, course.share, 3, true).await;
    let (drawn, _) = batch(&app, &token, course.share, 3, false).await;

    let (status, refused) = send(
        &app,
        &token,
        mailable,
        json!({ "addresses": ["a@example.com", "not an address", "b@example.com"] }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["field"], "addresses");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("line 2")
            || refused["message"]
                .as_str()
                .unwrap_or_default()
                .contains("line 2"),
        "the bad line is named: {refused}"
    );
    let four: Vec<String> = (0..4).map(|i| format!("x{i}@example.com")).collect();
    let (status, refused) = send(&app, &token, mailable, json!({ "addresses": four })).await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("not_enough_codes"))
    );
    let (status, _) = send(&app, &token, mailable, json!({ "addresses": ["", " "] })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = send(
        &app,
        &token,
        mailable,
        json!({ "addresses": ["a@example.com"], "lang": "fr" }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, refused) = send(
        &app,
        &token,
        drawn,
        json!({ "addresses": ["a@example.com"] }),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (StatusCode::CONFLICT, json!("batch_not_mailable"))
    );
    let (_, their_token) = shop(&app).await;
    let (status, _) = send(
        &app,
        &their_token,
        mailable,
        json!({ "addresses": ["a@example.com"] }),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another tenant's batch");
    let (status, _) = as_token(
        &app,
        &their_token,
        Method::GET,
        &format!("/api/v1/batches/{mailable}/recipients"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(count(&app, "SELECT count(*) FROM code_mailings").await, 0);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM mail_outbox WHERE template = 'codes_sent'"
        )
        .await,
        0
    );
}

/// The server is stopped (as a deploy's SIGTERM stops it) while a send of
/// 1,000 is being mailed, and started again: every address gets exactly
/// one mail. The relay that is stopped finishes the round it leased (its
/// mails sent and recorded) and leases no more; the next server mails the
/// rest from the outbox.
#[sqlx::test(migrations = "../migrations")]
async fn a_restart_mid_send_loses_and_duplicates_nothing(pool: PgPool) {
    let (mut app, sink) = spawn_app_with_mail(pool).await;
    let (course, token) = shop(&app).await;
    let (batch_id, _) = batch(&app, &token, course.share, 1000, true).await;
    let addresses: Vec<String> = (0..1000)
        .map(|i| format!("restart-{i}@example.com"))
        .collect();
    let (status, report) = send(
        &app,
        &token,
        batch_id,
        json!({ "addresses": addresses, "addressed": false }),
    )
    .await;
    assert_eq!(
        (status, report["sent"].clone()),
        (StatusCode::OK, json!(1000))
    );
    sink.wait_for_count(100, Duration::from_secs(60)).await;
    app.begin_shutdown();
    let pool = app.pool.clone();
    // Dropping the app waits for its server to stop (and its relay to
    // finish the round it is sending to the sink, on a thread of its own).
    drop(app);
    let at_stop = sink.received().len();
    let waiting = count_in(
        &pool,
        "SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND dead_at IS NULL",
    )
    .await;
    assert!(
        at_stop < 1000 && waiting > 0,
        "the stop fell mid-send ({at_stop} mails arrived, {waiting} waiting)"
    );
    // What the stopped relay left is not leased to a relay that is gone
    // (a mail it tried and failed would wait for its retry, with its error).
    let leased: Vec<(i32, Option<String>)> = sqlx::query_as(
        "SELECT attempts, last_error FROM mail_outbox
         WHERE sent_at IS NULL AND next_attempt_at > now() AND last_error IS NULL",
    )
    .fetch_all(&pool)
    .await
    .expect("leased mails");
    assert!(
        leased.is_empty(),
        "mails left leased by the stopped server: {leased:?}"
    );
    assert_eq!(
        sink.received().len(),
        count_in(
            &pool,
            "SELECT count(*) FROM mail_outbox WHERE sent_at IS NOT NULL"
        )
        .await as usize,
        "every mail that arrived is recorded as sent"
    );

    let again = crate::support::app::spawn_app_with(
        pool.clone(),
        crate::support::mail::mail_settings(&sink),
    )
    .await;
    let mails = sink.wait_for_count(1000, Duration::from_secs(180)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while count_in(
        &again.pool,
        "SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL",
    )
    .await
        > 0
    {
        assert!(tokio::time::Instant::now() < deadline, "the outbox drained");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut per_address: HashMap<String, usize> = HashMap::new();
    for mail in sink.received() {
        *per_address.entry(mail.to[0].clone()).or_default() += 1;
    }
    let twice: Vec<_> = per_address.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "mailed more than once: {twice:?}");
    assert_eq!(per_address.len(), 1000, "every address got its mail");
    assert!(addresses.iter().all(|a| per_address.contains_key(a)));
    let codes: HashSet<String> = mails.iter().map(|m| code_in(&m.text)).collect();
    assert_eq!(codes.len(), 1000, "distinct codes");
}

async fn count_in(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect(sql)
}
