//! The concurrency suite: real parallel HTTP requests through the running
//! app, then the final state checked with SQL.

use engine::settlement::options::{FailurePolicy, FaultPoint, SettlementProbe};
use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{spawn_app_with, spawn_app_with_settlement};
use crate::support::course::{
    self, Course, ShareState, admin, assert_invariants, enter_code, error_of, issue, learners,
    load_settings, open, post_json, repeats, state_of,
};

/// Case 1: 100 learners claim the same code at once.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_learners_claiming_one_code_bind_it_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    race_for_one_code(&app, 100, repeats(), "case 1").await;
}

/// Case 2: one learner, 100 parallel sessions, each with a different
/// pending code, opens content at once.
#[sqlx::test(migrations = "../migrations")]
async fn one_learner_with_a_hundred_pending_codes_binds_exactly_one(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    one_learner_with_many_codes(&app, false, false, false, "case 2").await;
}

/// Case 2 with the reservation failing (`db-only`): every attempt reaches
/// PostgreSQL, and the partial unique index (one code per learner and
/// share) alone keeps the learner to one code.
#[sqlx::test(migrations = "../migrations")]
async fn one_learner_with_a_hundred_pending_codes_binds_exactly_one_with_the_reservation_failing(
    pool: PgPool,
) {
    let probe = std::sync::Arc::new(SettlementProbe::default());
    let options = engine::settlement::options::SettlementOptions {
        failure_policy: FailurePolicy::DbOnly,
        probe: Some(probe.clone()),
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    one_learner_with_many_codes(&app, true, true, false, "case 2 db-only").await;
    let (transactions, binds, start_overs) = probe.counts();
    eprintln!(
        "case 2 db-only: {transactions} transactions, {binds} binds, {start_overs} start-overs"
    );
    let rounds = u64::try_from(repeats()).expect("small");
    assert!(
        transactions >= 100 * rounds,
        "every request reached PostgreSQL: {transactions}"
    );
}

/// Case 2 with reservations that expire at once (TTL 1 ms): Redis turns
/// almost nobody away, so the learner's attempts with different codes
/// reach PostgreSQL together and the partial unique index (one code per
/// learner and share) is what keeps the learner to one code. (A settlement
/// is one quick call, so the test makes "together" certain: it holds the
/// share's quota lock, as a quota change would, until several attempts
/// wait on it, then lets them all go at once.)
#[sqlx::test(migrations = "../migrations")]
async fn one_learner_with_a_hundred_pending_codes_binds_exactly_one_with_reservations_expiring_instantly(
    pool: PgPool,
) {
    let probe = std::sync::Arc::new(SettlementProbe::default());
    let options = engine::settlement::options::SettlementOptions {
        reservation_ttl: std::time::Duration::from_millis(1),
        probe: Some(probe.clone()),
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    one_learner_with_many_codes(&app, false, true, true, "case 2 ttl 1ms").await;
    let (transactions, binds, start_overs) = probe.counts();
    eprintln!(
        "case 2 ttl 1ms: {transactions} transactions, {binds} binds, {start_overs} start-overs"
    );
    let rounds = u64::try_from(repeats()).expect("small");
    assert!(
        binds > rounds,
        "more than one attempt a round got past Redis to bind: {binds}"
    );
    // A second code's bind hit the partial unique index and started over.
    assert!(
        start_overs > 0,
        "the unique index was contended: {start_overs}"
    );
}

/// A connection of the test's own holding `share`'s quota lock exclusively,
/// as `share_quota_rebalance` does: settlements of the share wait on it.
async fn hold_quota_lock(
    app: &crate::support::app::TestApp,
    share: Uuid,
) -> sqlx::pool::PoolConnection<sqlx::Postgres> {
    let mut held = app.pool.acquire().await.expect("connection");
    sqlx::query("SELECT pg_advisory_lock(share_quota_lock_key($1))")
        .bind(share)
        .execute(&mut *held)
        .await
        .expect("the share's quota lock");
    held
}

/// Lets the lock of [`hold_quota_lock`] go once `waiters` settlements wait
/// on it (or after three seconds, below the settlements' own budget).
async fn release_when_waited_on(
    mut held: sqlx::pool::PoolConnection<sqlx::Postgres>,
    waiters: i64,
) {
    for _ in 0..300 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_one(&mut *held)
        .await
        .expect("pg_locks");
        if waiting >= waiters {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut *held)
        .await
        .expect("release");
}

/// One learner, 100 sessions, each with its own pending code, opens content
/// at once, `repeats()` times; `poison_learner`: the learner's reservation key
/// makes `reserve.lua` fail. `may_time_out`: with the reservation out of
/// the way, the learner's settlements queue on its binding's row lock in
/// PostgreSQL; on a loaded machine some exceed the transaction timeout and
/// get the documented retryable 503 (`unavailable`, with Retry-After).
/// `gate`: the settlements are held at the share's quota lock until
/// several wait there, then released together.
async fn one_learner_with_many_codes(
    app: &crate::support::app::TestApp,
    poison_learner: bool,
    may_time_out: bool,
    gate: bool,
    context: &str,
) {
    let admin = admin(app).await;
    let (learner, _) = learners(app, 1).await.remove(0);
    let email = format!("learner-{learner}@example.com");
    let sessions: Vec<reqwest::Client> = (0..100)
        .map(|_| crate::support::app::new_client())
        .collect();
    join_all(
        sessions
            .iter()
            .map(|c| app.login_as(c, &email, course::PASSWORD)),
    )
    .await;
    for round in 0..repeats() {
        let course = course::course(app, &admin, json!({})).await;
        let codes = issue(app, &admin, course.share, 100).await;
        let entered = join_all(
            sessions
                .iter()
                .zip(&codes)
                .map(|(c, (_, code))| enter_code(app, c, &course.slug, code)),
        )
        .await;
        assert!(
            entered.iter().all(|r| r.status() == 200),
            "{context} round {round}: all pending"
        );
        if poison_learner {
            poison(
                app,
                &app.redis
                    .keys()
                    .reservation_user(admin.tenant, course.share, learner),
            )
            .await;
        }

        let opened = if gate {
            let held = hold_quota_lock(app, course.share).await;
            let (opened, ()) = tokio::join!(
                join_all(sessions.iter().map(|c| open(app, c, &course, None))),
                release_when_waited_on(held, 2),
            );
            opened
        } else {
            join_all(sessions.iter().map(|c| open(app, c, &course, None))).await
        };
        let mut granted = 0;
        for response in opened {
            if response.status() == 200 {
                granted += 1;
            } else {
                let retry_after = response.headers().contains_key("retry-after");
                let (status, error) = error_of(response).await;
                if may_time_out && (status, error.as_str()) == (503, "unavailable") {
                    assert!(retry_after, "{context} round {round}: 503 with Retry-After");
                    continue;
                }
                assert_eq!(
                    (status, error.as_str()),
                    (409, "busy_retry"),
                    "{context} round {round}"
                );
            }
        }
        assert!(granted >= 1, "{context} round {round}: the learner got in");
        let bound: Vec<(Uuid, Uuid)> = sqlx::query_as(
            "SELECT id, bound_principal FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL",
        )
        .bind(course.share)
        .fetch_all(&app.pool)
        .await
        .expect("bound");
        assert_eq!(
            bound.len(),
            1,
            "{context} round {round}: exactly one code bound"
        );
        assert_eq!(bound[0].1, learner);
        let state = state_of(app, course.share).await;
        assert_eq!(
            (state.quota_used, state.records),
            (1, 1),
            "{context} round {round}: one access counted"
        );
    }
    assert_invariants(app, context).await;
}

/// Case 3: a bound learner requests content 100 times, half retries of one
/// attempt, half fresh requests.
#[sqlx::test(migrations = "../migrations")]
async fn a_bound_learner_never_spends_a_second_code(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    for round in 0..repeats() {
        let course = course::course(&app, &admin, json!({})).await;
        let codes = issue(&app, &admin, course.share, 2).await;
        assert_eq!(
            enter_code(&app, &client, &course.slug, &codes[0].1)
                .await
                .status(),
            200
        );
        let key = Uuid::new_v4().to_string();
        let first = open(&app, &client, &course, Some(&key)).await;
        assert_eq!(first.status(), 200);
        assert_eq!(first.headers()["x-admitone-access"], "bound");

        let retries = join_all((0..50).map(|_| open(&app, &client, &course, Some(&key)))).await;
        let fresh = join_all((0..50).map(|_| open(&app, &client, &course, None))).await;
        for response in retries {
            assert_eq!(response.status(), 200);
            assert_eq!(response.headers()["x-admitone-access"], "replayed");
        }
        for response in fresh {
            assert_eq!(response.status(), 200);
            assert_eq!(
                response.headers()["x-admitone-access"],
                "reused",
                "inside the grant: not counted"
            );
        }
        // Entering the second code is refused: the learner already has access.
        let (status, error) =
            error_of(enter_code(&app, &client, &course.slug, &codes[1].1).await).await;
        assert_eq!(
            (status, error.as_str()),
            (409, "already_has_access"),
            "round {round}"
        );
        assert_eq!(
            state_of(&app, course.share).await,
            ShareState {
                bound: 1,
                quota_used: 1,
                records: 1
            },
            "round {round}: one code, one access"
        );
    }
    assert_invariants(&app, "after case 3").await;
}

/// Seed test 3: 100 concurrent *first* accesses with one request id (a
/// client retrying an attempt that is still in flight). They all get past
/// Redis (one owner re-takes its own reservation), race into PostgreSQL
/// (released together from the share's quota lock, which the test holds
/// until they wait on it) while the code is still unbound, and queue on
/// the code's row: one binds
/// and counts, every other one answers from that attempt (its record) or
/// its live grant. Nothing is counted twice.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_first_accesses_with_one_request_id_bind_and_count_once(pool: PgPool) {
    let probe = std::sync::Arc::new(SettlementProbe::default());
    let options = engine::settlement::options::SettlementOptions {
        probe: Some(probe.clone()),
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    let admin = admin(&app).await;
    let (learner, client) = learners(&app, 1).await.remove(0);
    let rounds = repeats();
    for round in 0..rounds {
        let course = course::course(&app, &admin, json!({})).await;
        let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
        assert_eq!(
            enter_code(&app, &client, &course.slug, &code)
                .await
                .status(),
            200
        );
        let key = Uuid::new_v4().to_string();
        // A settlement is one quick call: hold the share's quota lock (as a
        // quota change would) until several duplicates wait on it, so that
        // they certainly race into PostgreSQL together.
        let held = hold_quota_lock(&app, course.share).await;
        let (opened, ()) = tokio::join!(
            join_all((0..100).map(|_| open(&app, &client, &course, Some(&key)))),
            release_when_waited_on(held, 2),
        );
        let mut answers = std::collections::BTreeMap::<String, usize>::new();
        for response in opened {
            let answer = if response.status() == 200 {
                response.headers()["x-admitone-access"]
                    .to_str()
                    .expect("ascii")
                    .to_owned()
            } else {
                // Only the documented retryable answer of a loaded machine.
                assert!(response.headers().contains_key("retry-after"));
                let (status, error) = error_of(response).await;
                assert_eq!(
                    (status, error.as_str()),
                    (503, "unavailable"),
                    "round {round}"
                );
                "unavailable".to_owned()
            };
            *answers.entry(answer).or_default() += 1;
        }
        let bound_answers = answers.get("bound").copied().unwrap_or(0);
        assert!(bound_answers <= 1, "round {round}: {answers:?}");
        assert!(
            answers
                .keys()
                .all(|a| ["bound", "replayed", "reused", "unavailable"].contains(&a.as_str())),
            "round {round}: nothing else, never a second count: {answers:?}"
        );
        assert!(
            answers.get("unavailable").copied().unwrap_or(0) < 100,
            "round {round}: someone got in: {answers:?}"
        );
        // Once they are all answered, the same id replays the first result.
        let again = open(&app, &client, &course, Some(&key)).await;
        assert_eq!(again.status(), 200, "round {round}");
        assert_eq!(again.headers()["x-admitone-access"], "replayed");
        assert_eq!(
            state_of(&app, course.share).await,
            ShareState {
                bound: 1,
                quota_used: 1,
                records: 1
            },
            "round {round}: one binding, one access counted, one record: {answers:?}"
        );
        let owner: Uuid = sqlx::query_scalar(
            "SELECT bound_principal FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL",
        )
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("owner");
        assert_eq!(owner, learner);
    }
    let (transactions, binds, start_overs) = probe.counts();
    eprintln!("seed test 3: {transactions} transactions, {binds} binds, {start_overs} start-overs");
    let rounds = u64::try_from(rounds).expect("small");
    // The duplicates were not turned away by Redis: more than one a round
    // reached the bind of the still-unbound code (every request also runs
    // a transaction to answer, so `transactions` alone proves little).
    assert!(transactions > 100 * rounds / 2, "{transactions}");
    assert!(binds > rounds, "in-flight duplicates contended: {binds}");
    assert_invariants(&app, "after seed test 3").await;
}

/// A person opening a course while another request of theirs holds the
/// reservation waits one schedule (about 0.75 s in all), then hears "busy,
/// try again": not a wait inside a wait (the page used to retry the whole
/// settlement five times, each retry waiting its own four rounds: 25
/// reservations and ~2.6 s).
#[sqlx::test(migrations = "../migrations")]
async fn a_busy_learner_waits_one_schedule_not_nested_ones(pool: PgPool) {
    let probe = std::sync::Arc::new(SettlementProbe::default());
    let options = engine::settlement::options::SettlementOptions {
        probe: Some(probe.clone()),
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    let admin = admin(&app).await;
    let (learner, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({})).await;
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    assert_eq!(
        enter_code(&app, &client, &course.slug, &code)
            .await
            .status(),
        200
    );
    // Another request of this learner holds the learner's reservation.
    let key = app
        .redis
        .keys()
        .reservation_user(admin.tenant, course.share, learner);
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("another-request")
        .arg("PX")
        .arg(30_000)
        .query_async(&mut app.redis.conn())
        .await
        .expect("hold the learner's reservation");
    let page = client
        .get(format!(
            "{}/s/{}/r/{}",
            app.address, course.slug, course.resource
        ))
        .header("accept", "text/html")
        .send()
        .await
        .expect("page");
    let html = page.text().await.expect("html");
    assert!(html.contains(r#"data-reason="busy""#), "{html}");
    let reservations = probe.reservations();
    assert!(
        (2..=6).contains(&reservations),
        "one first try and one schedule of retries: {reservations}"
    );
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        },
        "nothing bound while busy"
    );
}

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

/// Case 5a: reservations that expire at once (TTL 1 ms) protect nothing;
/// PostgreSQL still binds the code once.
#[sqlx::test(migrations = "../migrations")]
async fn with_reservations_expiring_instantly_the_code_is_still_bound_once(pool: PgPool) {
    let probe = std::sync::Arc::new(SettlementProbe::default());
    let options = engine::settlement::options::SettlementOptions {
        reservation_ttl: std::time::Duration::from_millis(1),
        probe: Some(probe.clone()),
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    race_for_one_code(&app, 100, repeats(), "ttl 1ms").await;
    let (transactions, binds, start_overs) = probe.counts();
    eprintln!("case 5a: {transactions} transactions, {binds} binds, {start_overs} start-overs");
    let rounds = u64::try_from(repeats()).expect("small");
    assert!(
        binds > rounds,
        "more than one attempt a round got past Redis to bind: {binds}"
    );
}

/// Makes every use of `key` fail in Redis (a hash where a string is
/// expected): the reservation script errors while sessions still work.
async fn poison(app: &crate::support::app::TestApp, key: &str) {
    use redis::AsyncCommands as _;
    let _: () = app
        .redis
        .conn()
        .hset(key, "not", "a string")
        .await
        .expect("hset");
    let _: () = app.redis.conn().expire(key, 60).await.expect("expire");
}

/// Case 5b: the reservation fails (Redis errors) with `db-only`: PostgreSQL
/// alone keeps the invariants in a race.
#[sqlx::test(migrations = "../migrations")]
async fn with_the_reservation_failing_db_only_still_binds_once(pool: PgPool) {
    let options = engine::settlement::options::SettlementOptions {
        failure_policy: FailurePolicy::DbOnly,
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    let admin = admin(&app).await;
    let crowd = learners(&app, 100).await;
    for round in 0..repeats() {
        let course = course::course(&app, &admin, json!({})).await;
        let (code_id, code) = issue(&app, &admin, course.share, 1).await.remove(0);
        join_all(
            crowd
                .iter()
                .map(|(_, c)| enter_code(&app, c, &course.slug, &code)),
        )
        .await;
        poison(
            &app,
            &app.redis
                .keys()
                .reservation_code(admin.tenant, course.share, code_id),
        )
        .await;
        let opened = join_all(crowd.iter().map(|(_, c)| open(&app, c, &course, None))).await;
        let mut winners = 0;
        for response in opened {
            if response.status() == 200 {
                winners += 1;
            } else {
                assert_eq!(
                    error_of(response).await,
                    (409, "code_bound".into()),
                    "round {round}"
                );
            }
        }
        assert_eq!(winners, 1, "round {round}");
        assert_eq!(
            state_of(&app, course.share).await,
            ShareState {
                bound: 1,
                quota_used: 1,
                records: 1
            }
        );
    }
    assert_invariants(&app, "db-only").await;
}

/// The reservation fails with `fail-closed`: a clear 503 with Retry-After,
/// nothing bound; once Redis answers again, the same learner gets in.
#[sqlx::test(migrations = "../migrations")]
async fn with_the_reservation_failing_fail_closed_refuses_and_binds_nothing(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (learner, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({})).await;
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    assert_eq!(
        enter_code(&app, &client, &course.slug, &code)
            .await
            .status(),
        200
    );
    let key = app
        .redis
        .keys()
        .reservation_user(admin.tenant, course.share, learner);
    poison(&app, &key).await;

    let refused = open(&app, &client, &course, None).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(error_of(refused).await.1, "unavailable");
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        }
    );

    let _: i64 = redis::AsyncCommands::del(&mut app.redis.conn(), &key)
        .await
        .expect("del");
    assert_eq!(open(&app, &client, &course, None).await.status(), 200);
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );
}

/// Case 5c: reservation keys deleted while requests are in flight.
#[sqlx::test(migrations = "../migrations")]
async fn with_reservation_keys_deleted_mid_flight_the_code_is_bound_once(pool: PgPool) {
    let probe = std::sync::Arc::new(SettlementProbe::default());
    let options = engine::settlement::options::SettlementOptions {
        probe: Some(probe.clone()),
        ..load_settings().settlement_options()
    };
    let app = spawn_app_with_settlement(pool, load_settings(), options).await;
    let admin = admin(&app).await;
    let crowd = learners(&app, 50).await;
    let rounds = repeats().min(10);
    let mut deleted = 0;
    for round in 0..rounds {
        let course = course::course(&app, &admin, json!({})).await;
        let (code_id, code) = issue(&app, &admin, course.share, 1).await.remove(0);
        join_all(
            crowd
                .iter()
                .map(|(_, c)| enter_code(&app, c, &course.slug, &code)),
        )
        .await;
        // The code's reservation key (every attempt of this round takes it),
        // deleted over and over until every request has been answered.
        let key = app
            .redis
            .keys()
            .reservation_code(admin.tenant, course.share, code_id);
        let redis = app.redis.clone();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let deleter = tokio::spawn({
            let done = done.clone();
            async move {
                use redis::AsyncCommands as _;
                let mut deleted: u64 = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let n: u64 = redis.conn().del(&key).await.expect("DEL of a reservation");
                    deleted += n;
                    tokio::task::yield_now().await;
                }
                deleted
            }
        });
        let opened = join_all(crowd.iter().map(|(_, c)| open(&app, c, &course, None))).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        deleted += deleter.await.expect("deleter");
        let winners = opened.iter().filter(|r| r.status() == 200).count();
        assert_eq!(winners, 1, "round {round}");
        assert_eq!(state_of(&app, course.share).await.bound, 1, "round {round}");
    }
    let (transactions, binds, start_overs) = probe.counts();
    eprintln!(
        "keys deleted: {deleted} deletions, {transactions} transactions, {binds} binds, {start_overs} start-overs"
    );
    assert!(deleted > 0, "the deleter deleted a reservation in flight");
    assert_invariants(&app, "keys deleted").await;
}

/// `crowd` learners enter the same code and open content at once, `rounds`
/// times: exactly one wins, the others get a clear refusal, and the
/// database holds one binding, one debit and one record.
async fn race_for_one_code(
    app: &crate::support::app::TestApp,
    crowd: usize,
    rounds: usize,
    context: &str,
) {
    let admin = admin(app).await;
    let crowd = learners(app, crowd).await;
    for round in 0..rounds {
        let course = course::course(app, &admin, json!({})).await;
        let code = issue(app, &admin, course.share, 1).await.remove(0).1;
        let entered = join_all(
            crowd
                .iter()
                .map(|(_, c)| enter_code(app, c, &course.slug, &code)),
        )
        .await;
        assert!(
            entered.iter().all(|r| r.status() == 200),
            "{context} round {round}: every code is pending"
        );
        let opened = join_all(crowd.iter().map(|(_, c)| open(app, c, &course, None))).await;
        let mut winners = 0;
        for (response, (_, client)) in opened.into_iter().zip(&crowd) {
            if response.status() == 200 {
                winners += 1;
                let bytes = course::fetch(app, client, &course, None).await;
                assert_eq!(
                    bytes.bytes().await.expect("body").as_ref(),
                    b"0123456789abcdefghij"
                );
            } else {
                let (status, error) = error_of(response).await;
                assert!(
                    status == 409 && (error == "code_bound" || error == "busy_retry"),
                    "{context} round {round}: a loser gets a clear refusal, got {status} {error}"
                );
            }
        }
        assert_eq!(winners, 1, "{context} round {round}: exactly one winner");
        assert_eq!(
            state_of(app, course.share).await,
            ShareState {
                bound: 1,
                quota_used: 1,
                records: 1
            },
            "{context} round {round}"
        );
    }
    assert_invariants(app, context).await;
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

/// The existing-binding look-up uses the partial unique index even as a
/// generic prepared plan (its predicate is repeated in the query).
#[sqlx::test(migrations = "../migrations")]
async fn the_binding_lookup_uses_the_partial_index(pool: PgPool) {
    let mut conn = pool.acquire().await.expect("conn");
    for sql in [
        "SET plan_cache_mode = force_generic_plan",
        "SET enable_seqscan = off",
        "PREPARE binding(uuid, uuid, uuid) AS
         SELECT id FROM auth_codes
         WHERE tenant_id = $1 AND share_id = $2 AND bound_principal = $3 AND bound_principal IS NOT NULL
         FOR UPDATE",
    ] {
        sqlx::query(sql).execute(&mut *conn).await.expect(sql);
    }
    let plan: Vec<String> = sqlx::query_scalar(&format!(
        "EXPLAIN EXECUTE binding('{}', '{}', '{}')",
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4()
    ))
    .fetch_all(&mut *conn)
    .await
    .expect("explain");
    let plan = plan.join("\n");
    assert!(plan.contains("auth_codes_one_per_learner"), "{plan}");
}

/// Any interleaving of binds, unbinds and revocations keeps the invariants.
#[sqlx::test(migrations = "../migrations")]
async fn random_interleavings_of_bind_unbind_and_revoke_keep_the_invariants(pool: PgPool) {
    use rand::{Rng as _, SeedableRng as _};
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 4).await;
    for seed in 0..repeats() as u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let course: Course = course::course(&app, &admin, json!({})).await;
        let codes = issue(&app, &admin, course.share, 5).await;
        for step in 0..6 {
            let ops = (0..6).map(|_| {
                let (_, client) = &people[rng.gen_range(0..people.len())];
                let (code_id, code) = &codes[rng.gen_range(0..codes.len())];
                let op = rng.gen_range(0..10);
                let (app, admin, course) = (&app, &admin, &course);
                async move {
                    match op {
                        0..=5 => {
                            enter_code(app, client, &course.slug, code).await;
                            open(app, client, course, None).await.status().as_u16()
                        }
                        6..=7 => post_json(
                            app,
                            &admin.client,
                            &format!("/api/v1/codes/{code_id}/unbind"),
                            json!({ "reason": "learner changed account" }),
                        )
                        .await
                        .status()
                        .as_u16(),
                        _ => post_json(
                            app,
                            &admin.client,
                            &format!("/api/v1/codes/{code_id}/revoke"),
                            json!({}),
                        )
                        .await
                        .status()
                        .as_u16(),
                    }
                }
            });
            for status in join_all(ops).await {
                assert!(status < 500, "seed {seed} step {step}: {status}");
            }
            assert_invariants(&app, &format!("seed {seed} step {step}")).await;
        }
    }
}

/// Two learners who happen to send the same Idempotency-Key do not see or
/// block each other.
#[sqlx::test(migrations = "../migrations")]
async fn request_ids_belong_to_their_learner(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let people = learners(&app, 2).await;
    let course = course::course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    for ((_, client), (_, code)) in people.iter().zip(&codes) {
        assert_eq!(
            enter_code(&app, client, &course.slug, code).await.status(),
            200
        );
    }
    let both = join_all(
        people
            .iter()
            .map(|(_, c)| open(&app, c, &course, Some("1"))),
    )
    .await;
    for response in both {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-admitone-access"], "bound");
    }
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 2,
            quota_used: 2,
            records: 2
        }
    );
}

/// A learner opening the same resource from two tabs at once (and a video
/// player's parallel Range requests after it) all succeed: the learner's
/// own openings wait for each other instead of failing, one access is
/// counted, and the Range requests count nothing.
#[sqlx::test(migrations = "../migrations")]
async fn parallel_openings_and_range_requests_all_succeed(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    for round in 0..repeats().min(5) {
        let course = course::course(&app, &admin, json!({})).await;
        let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
        assert_eq!(
            enter_code(&app, &client, &course.slug, &code)
                .await
                .status(),
            200
        );
        let opening = format!(
            "{}/api/v1/s/{}/resources/{}/open",
            app.address, course.slug, course.resource
        );
        let openings = join_all((0..4).map(|_| client.post(&opening).send())).await;
        for response in openings {
            assert_eq!(response.expect("request").status(), 200, "round {round}");
        }
        let ranges: Vec<String> = (0..8).map(|i| format!("bytes={i}-{}", i + 1)).collect();
        let ranges = join_all(
            ranges
                .iter()
                .map(|range| course::fetch(&app, &client, &course, Some(range))),
        )
        .await;
        for response in ranges {
            assert_eq!(response.status(), 206, "round {round}");
        }
        assert_eq!(
            state_of(&app, course.share).await,
            ShareState {
                bound: 1,
                quota_used: 1,
                records: 1
            }
        );
    }
}
