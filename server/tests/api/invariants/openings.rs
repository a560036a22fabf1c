//! The access rule under concurrency: a hundred concurrent first openings
//! with one request id bind and count once; two learners sending the same
//! key do not see or block each other; a learner's parallel openings (two
//! tabs) and Range requests all succeed and count one access.

use engine::settlement::options::SettlementProbe;
use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{hold_quota_lock, release_when_waited_on};
use crate::support::app::{spawn_app_with, spawn_app_with_settlement};
use crate::support::course::{
    self, ShareState, admin, assert_invariants, enter_code, error_of, issue, learners,
    load_settings, one_learner, open, repeats, state_of,
};

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

/// 100 concurrent first openings by one learner with one request id (a
/// client retrying hard) bind once and count one access.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_concurrent_first_openings_with_one_request_id_count_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;
    let url = format!(
        "{}/api/v1/s/{}/resources/{}/open",
        app.address, course.slug, course.resource
    );
    let key = Uuid::new_v4().to_string();
    let answers =
        join_all((0..100).map(|_| client.post(&url).header("idempotency-key", &key).send())).await;
    let mut bound = 0;
    for answer in answers {
        let answer = answer.expect("request");
        let status = answer.status();
        let access = answer
            .headers()
            .get("x-admitone-access")
            .map(|v| v.to_str().expect("ascii").to_owned());
        match (status.as_u16(), access.as_deref()) {
            (200, Some("bound")) => bound += 1,
            (200, Some("replayed" | "reused")) => {}
            // Busy: the documented "retry with the same request id".
            (409, None) => assert_eq!(error_of(answer).await.1, "busy"),
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(bound, 1, "one opening bound the code");
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );
    // The retry after the storm is answered from the record.
    let again = client
        .post(&url)
        .header("idempotency-key", &key)
        .send()
        .await
        .expect("request");
    assert_eq!(again.headers()["x-admitone-access"], "replayed");
    course::assert_invariants(&app, "after 100 openings with one request id").await;
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
