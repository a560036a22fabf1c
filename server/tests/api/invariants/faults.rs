//! Crashes and faults in the settlement: a failure at any point inside its
//! transaction leaves nothing; a process that dies after COMMIT and before
//! answering leaves a binding its client finds on retry, never spent twice.

use engine::settlement::options::FaultPoint;
use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app_with, spawn_app_with_settlement};
use crate::support::course::{
    self, ShareState, admin, assert_invariants, enter_code, issue, learners, load_settings, open,
    repeats, state_of,
};

/// Case 4: a failure inside the settlement transaction leaves nothing,
/// for 100 concurrent first accesses at each fault point.
#[sqlx::test(migrations = "../migrations")]
async fn a_failure_inside_the_transaction_leaves_nothing(pool: PgPool) {
    let faults = [
        FaultPoint::AfterBind,
        FaultPoint::AfterLearnerDebit,
        FaultPoint::AfterShareDebit,
        FaultPoint::AfterRecord,
    ];
    let rounds_per_fault = repeats().div_ceil(faults.len());
    for fault in faults {
        let options = engine::settlement::options::SettlementOptions {
            fault: Some(fault),
            ..load_settings().settlement_options()
        };
        let app = spawn_app_with_settlement(pool.clone(), load_settings(), options).await;
        let admin = admin(&app).await;
        let crowd = learners(&app, 100).await;
        for round in 0..rounds_per_fault {
            let course = course::course(&app, &admin, json!({})).await;
            let codes = issue(&app, &admin, course.share, crowd.len()).await;
            let entered = join_all(
                crowd
                    .iter()
                    .zip(&codes)
                    .map(|((_, c), (_, code))| enter_code(&app, c, &course.slug, code)),
            )
            .await;
            assert!(entered.iter().all(|r| r.status() == 200));
            let outbox_before: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM outbox WHERE event_type <> 'batch.issued'",
            )
            .fetch_one(&app.pool)
            .await
            .expect("outbox");
            let opened = join_all(crowd.iter().map(|(_, c)| open(&app, c, &course, None))).await;
            assert!(
                opened.iter().all(|r| r.status() == 500),
                "{fault:?} round {round}: every attempt failed"
            );
            assert_eq!(
                state_of(&app, course.share).await,
                ShareState {
                    bound: 0,
                    quota_used: 0,
                    records: 0
                },
                "{fault:?} round {round}"
            );
            let (counted, outbox_after): (i64, i64) = sqlx::query_as(
                "SELECT (SELECT coalesce(sum(access_count), 0) FROM auth_codes WHERE share_id = $1),
                        (SELECT count(*) FROM outbox WHERE event_type <> 'batch.issued')",
            )
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("state");
            assert_eq!(
                (counted, outbox_after),
                (0, outbox_before),
                "{fault:?} round {round}"
            );
        }
        assert_invariants(&app, &format!("{fault:?}")).await;
    }
}

/// Case 6: the process dies after COMMIT, before answering, for 100
/// concurrent first accesses; every client retries against another instance
/// and finds its committed result; nothing is spent twice.
#[sqlx::test(migrations = "../migrations")]
async fn a_retry_after_a_crash_past_commit_finds_the_committed_binding(pool: PgPool) {
    use reqwest::cookie::CookieStore as _;
    let dying = engine::settlement::options::SettlementOptions {
        fault: Some(FaultPoint::AfterCommit),
        ..load_settings().settlement_options()
    };
    // Two instances sharing PostgreSQL, Redis (same key prefix) and storage.
    let mut settings = load_settings();
    settings.storage.root = std::env::temp_dir()
        .join(format!("admitone-shared-storage-{}", Uuid::new_v4()))
        .display()
        .to_string();
    let faulty = spawn_app_with_settlement(pool.clone(), settings.clone(), dying).await;
    let healthy = spawn_app_with(pool, settings).await;
    let admin = admin(&faulty).await;
    let from: reqwest::Url = faulty.address.parse().expect("url");
    let to: reqwest::Url = healthy.address.parse().expect("url");
    // Browsers with their own cookie jars, signed in on the faulty instance
    // and carrying the same session to the healthy one.
    let mut browsers = Vec::new();
    for (learner, _) in learners(&faulty, 100).await {
        let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
        let client = reqwest::Client::builder()
            .cookie_provider(jar.clone())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        browsers.push((learner, jar, client));
    }
    let emails: Vec<String> = browsers
        .iter()
        .map(|(l, _, _)| format!("learner-{l}@example.com"))
        .collect();
    join_all(
        browsers
            .iter()
            .zip(&emails)
            .map(|((_, _, client), email)| faulty.login_as(client, email, course::PASSWORD)),
    )
    .await;
    for (_, jar, _) in &browsers {
        let cookies = jar.cookies(&from).expect("session cookie");
        for cookie in cookies.to_str().expect("ascii").split("; ") {
            jar.add_cookie_str(cookie, &to);
        }
    }
    for round in 0..repeats() {
        let course = course::course(&faulty, &admin, json!({})).await;
        let codes = issue(&faulty, &admin, course.share, browsers.len()).await;
        join_all(
            browsers
                .iter()
                .zip(&codes)
                .map(|((_, _, c), (_, code))| enter_code(&faulty, c, &course.slug, code)),
        )
        .await;
        let keys: Vec<String> = browsers
            .iter()
            .map(|_| Uuid::new_v4().to_string())
            .collect();
        let first = join_all(
            browsers
                .iter()
                .zip(&keys)
                .map(|((_, _, c), k)| open(&faulty, c, &course, Some(k))),
        )
        .await;
        assert!(
            first.iter().all(|r| r.status() == 500),
            "round {round}: no answer after commit"
        );
        let n = i64::try_from(browsers.len()).expect("small");
        assert_eq!(
            state_of(&faulty, course.share).await,
            ShareState {
                bound: n,
                quota_used: n,
                records: n
            }
        );

        let retries = join_all(
            browsers
                .iter()
                .zip(&keys)
                .map(|((_, _, c), k)| open(&healthy, c, &course, Some(k))),
        )
        .await;
        for retry in retries {
            assert_eq!(retry.status(), 200, "round {round}");
            assert_eq!(retry.headers()["x-admitone-access"], "replayed");
        }
        assert_eq!(
            state_of(&healthy, course.share).await,
            ShareState {
                bound: n,
                quota_used: n,
                records: n
            },
            "round {round}: nothing spent twice"
        );
    }
    assert_invariants(&healthy, "after the crashes").await;
}
