//! A share's quota and a learner's limit are never overspent: the quota in
//! slot rows (`share_quota_slots`) under a storm, rebalanced when the quota
//! changes and absent for a share without one; counted accesses stop at
//! the per-learner limit, one access a grant even when sixteen openings
//! of one learner arrive at once.

use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app_with};
use crate::support::course::{
    self, Admin, Course, ShareState, admin, assert_invariants, enter_code, error_of, issue,
    learners, load_settings, open, state_of,
};

/// (slot, cap, used) of a share's slots.
async fn slots(app: &TestApp, share: Uuid) -> Vec<(i16, i32, i32)> {
    sqlx::query_as(
        "SELECT slot, cap, used FROM share_quota_slots WHERE share_id = $1 ORDER BY slot",
    )
    .bind(share)
    .fetch_all(&app.pool)
    .await
    .expect("slots")
}

/// `n` learners who entered a code of `course` each (clients in order).
async fn entered(app: &TestApp, admin: &Admin, course: &Course, n: usize) -> Vec<reqwest::Client> {
    let codes = issue(app, admin, course.share, n).await;
    let people = learners(app, n).await;
    let answers = join_all(
        people
            .iter()
            .zip(&codes)
            .map(|((_, client), (_, code))| enter_code(app, client, &course.slug, code)),
    )
    .await;
    for answer in answers {
        assert_eq!(answer.status(), 200);
    }
    people.into_iter().map(|(_, client)| client).collect()
}

async fn set_quota(
    app: &TestApp,
    admin: &Admin,
    course: &Course,
    quota: Value,
) -> reqwest::Response {
    admin
        .client
        .put(format!("{}/api/v1/shares/{}", app.address, course.share))
        .json(&json!({ "title": "Rust in Depth", "quota": quota }))
        .send()
        .await
        .expect("update")
}

/// 200 learners open a share at quota − 1 all at once: exactly one gets
/// in, the others hear `quota_exhausted`, and no slot passes its cap.
#[sqlx::test(migrations = "../migrations")]
async fn two_hundred_first_accesses_at_quota_minus_one_take_the_last_access_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let quota = 40;
    let course = course::course(&app, &admin, json!({ "quota": quota })).await;
    let clients = entered(&app, &admin, &course, 239).await;
    let (early, storm) = clients.split_at(quota - 1);
    for answer in join_all(early.iter().map(|c| open(&app, c, &course, None))).await {
        assert_eq!(answer.status(), 200);
    }
    assert_eq!(state_of(&app, course.share).await.records, 39);

    let answers = join_all(storm.iter().map(|c| open(&app, c, &course, None))).await;
    let mut granted = 0;
    for answer in answers {
        match error_of(answer).await {
            (200, _) => granted += 1,
            (403, code) if code == "quota_exhausted" => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(granted, 1, "exactly the last access was taken");
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 40,
            quota_used: 40,
            records: 40
        }
    );
    let slots = slots(&app, course.share).await;
    assert_eq!(slots.len(), 16);
    assert_eq!(
        slots.iter().map(|s| s.1).sum::<i32>(),
        40,
        "caps are the quota"
    );
    assert!(slots.iter().all(|(_, cap, used)| used <= cap), "{slots:?}");
    assert!(
        slots.iter().filter(|s| s.2 > 0).count() > 1,
        "the debits spread over slots: {slots:?}"
    );
    assert_invariants(&app, "after the storm at quota − 1").await;
}

/// Changing the quota rebalances the slots: raised, lowered to what is
/// used, refused below it (changing nothing), removed (no slots at all)
/// and set again (the slots count the records so far).
#[sqlx::test(migrations = "../migrations")]
async fn a_changed_quota_rebalances_its_slots(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({ "quota": 20 })).await;
    let clients = entered(&app, &admin, &course, 12).await;
    for client in &clients[..10] {
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    let sums = |slots: Vec<(i16, i32, i32)>| {
        (
            slots.iter().map(|s| i64::from(s.1)).sum::<i64>(),
            slots.iter().map(|s| i64::from(s.2)).sum::<i64>(),
        )
    };
    assert_eq!(sums(slots(&app, course.share).await), (20, 10));

    assert_eq!(
        set_quota(&app, &admin, &course, json!(30)).await.status(),
        200
    );
    assert_eq!(sums(slots(&app, course.share).await), (30, 10));
    assert_eq!(
        set_quota(&app, &admin, &course, json!(10)).await.status(),
        200
    );
    assert_eq!(sums(slots(&app, course.share).await), (10, 10));
    let refused = set_quota(&app, &admin, &course, json!(9)).await;
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["field"], "quota", "{body}");
    assert_eq!(sums(slots(&app, course.share).await), (10, 10), "unchanged");
    // Full: the eleventh learner is turned away.
    let full = open(&app, &clients[10], &course, None).await;
    assert_eq!(error_of(full).await, (403, "quota_exhausted".into()));

    assert_eq!(
        set_quota(&app, &admin, &course, Value::Null).await.status(),
        200
    );
    assert!(
        slots(&app, course.share).await.is_empty(),
        "no quota, no slots"
    );
    assert_eq!(open(&app, &clients[10], &course, None).await.status(), 200);
    assert_invariants(&app, "without a quota").await;

    assert_eq!(
        set_quota(&app, &admin, &course, json!(12)).await.status(),
        200
    );
    assert_eq!(sums(slots(&app, course.share).await), (12, 11));
    assert_eq!(open(&app, &clients[11], &course, None).await.status(), 200);
    assert_eq!(sums(slots(&app, course.share).await), (12, 12));
    assert_invariants(&app, "with the quota set again").await;

    // The database keeps the two together whoever writes: a quota or a cap
    // changed around `share_quota_rebalance` is refused at commit.
    for statement in [
        "UPDATE shares SET quota = 15 WHERE id = $1",
        "UPDATE share_quota_slots SET cap = cap + 1 WHERE share_id = $1 AND slot = 0",
        "DELETE FROM share_quota_slots WHERE share_id = $1 AND slot = 0",
    ] {
        let refused = sqlx::query(statement)
            .bind(course.share)
            .execute(&app.pool)
            .await
            .expect_err(statement);
        assert_eq!(
            refused
                .as_database_error()
                .and_then(|e| e.code())
                .as_deref(),
            Some("23514"),
            "{statement}: {refused}"
        );
    }
    assert_eq!(sums(slots(&app, course.share).await), (12, 12));
}

/// A share without a quota: settlements write nothing of the share's (its
/// row keeps its version) and there are no slots.
#[sqlx::test(migrations = "../migrations")]
async fn a_share_without_a_quota_writes_no_row_of_its_own(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let course = course::course(&app, &admin, json!({ "quota": null })).await;
    let clients = entered(&app, &admin, &course, 20).await;
    let version = || async {
        sqlx::query_scalar::<_, String>("SELECT xmin::text FROM shares WHERE id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("version")
    };
    let before = version().await;
    for answer in join_all(clients.iter().map(|c| open(&app, c, &course, None))).await {
        assert_eq!(answer.status(), 200);
    }
    assert_eq!(version().await, before, "the share's row was not updated");
    assert!(slots(&app, course.share).await.is_empty());
    let state = state_of(&app, course.share).await;
    assert_eq!((state.bound, state.records), (20, 20));
    assert_invariants(&app, "a share without a quota").await;
}

/// Per-learner limit: counted accesses stop at the limit.
#[sqlx::test(migrations = "../migrations")]
async fn the_per_learner_limit_stops_further_accesses(pool: PgPool) {
    let mut settings = load_settings();
    settings.settlement.grant_ttl_secs = 1;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({ "per_learner_limit": 2 })).await;
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    assert_eq!(
        enter_code(&app, &client, &course.slug, &code)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(
        open(&app, &client, &course, None).await.headers()["x-admitone-access"],
        "counted"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(
        error_of(open(&app, &client, &course, None).await).await,
        (403, "learner_limit_reached".into())
    );
    let state = state_of(&app, course.share).await;
    assert_eq!((state.bound, state.records), (1, 2));
    assert_invariants(&app, "limit").await;
}

/// Sixteen openings of one learner at once, from two devices: each
/// opening's status and error code (empty when granted).
async fn sixteen_at_once(
    app: &TestApp,
    devices: &[reqwest::Client; 2],
    course: &Course,
) -> Vec<(u16, String)> {
    join_all((0..16).map(|i| async move {
        let response = course::open_only(app, &devices[i % 2], course, None).await;
        if response.status() == 200 {
            (200, String::new())
        } else {
            error_of(response).await
        }
    }))
    .await
}

/// The per-learner limit under parallel openings: each time the grant has
/// run out (ended in SQL, not waited for), sixteen openings at once (from two devices) count one access
/// between them, and once the limit is reached all sixteen are refused;
/// the records stop at the limit.
#[sqlx::test(migrations = "../migrations")]
async fn parallel_openings_count_one_access_a_grant_and_stop_at_the_limit(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (learner, client) = learners(&app, 1).await.remove(0);
    let second_device = crate::support::app::new_client();
    app.login_as(
        &second_device,
        &format!("learner-{learner}@example.com"),
        course::PASSWORD,
    )
    .await;
    let devices = [client, second_device];
    let course = course::course(&app, &admin, json!({ "per_learner_limit": 3 })).await;
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    assert_eq!(
        enter_code(&app, &devices[0], &course.slug, &code)
            .await
            .status(),
        200
    );
    // The first opening binds the code (until then only the device that
    // entered it may open: the other one is rightly asked for a code).
    assert_eq!(
        course::open(&app, &devices[0], &course, None)
            .await
            .status(),
        200
    );
    for round in 2..=4_i64 {
        course::end_grants(&app, course.share).await;
        let answers = sixteen_at_once(&app, &devices, &course).await;
        let records = state_of(&app, course.share).await.records;
        if round <= 3 {
            assert!(
                answers.iter().any(|(status, _)| *status == 200),
                "access {round}: {answers:?}"
            );
            assert!(
                answers
                    .iter()
                    .all(|(status, code)| *status == 200 || code == "busy"),
                "access {round}: {answers:?}"
            );
            assert_eq!(records, round, "access {round}: one access a grant");
        } else {
            assert!(
                answers
                    .iter()
                    .all(|answer| *answer == (403, "learner_limit_reached".to_owned())),
                "past the limit: {answers:?}"
            );
            assert_eq!(records, 3, "the records stop at the limit");
        }
    }
    assert_invariants(&app, "parallel openings at the limit").await;
}
