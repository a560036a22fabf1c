//! Many learners race for one code: it binds exactly once, also when the
//! Redis reservation protects nothing (keys that expire at once, fail, or
//! are deleted mid-flight) and PostgreSQL alone decides; with the
//! reservation failing `fail-closed` nothing binds; a learner whose own
//! reservation is held waits one schedule, not nested ones.

use engine::settlement::options::{FailurePolicy, SettlementProbe};
use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;

use super::poison;
use crate::support::app::{spawn_app_with, spawn_app_with_settlement};
use crate::support::course::{
    self, ShareState, admin, assert_invariants, enter_code, error_of, issue, learners,
    load_settings, open, repeats, state_of,
};

/// Case 1: 100 learners claim the same code at once.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_learners_claiming_one_code_bind_it_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    race_for_one_code(&app, 100, repeats(), "case 1").await;
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
