//! Losing a PostgreSQL node in the middle of first accesses: a highly
//! available PostgreSQL of the test's own (pg_auto_failover, a monitor and
//! two nodes with synchronous replication, `harness::pg_ha`), one node's
//! whole process group killed while learners race two by two for the same
//! codes, each replaying its opening under one request id until it has a
//! final answer. Then, in SQL on the primary: every 200 holds exactly one
//! binding and one access record, no code has two holders, every code has
//! its one winner; clients saw only 503 with `Retry-After` or the
//! retryable 409s meanwhile, never a 500; and the killed node rejoins as a
//! standby holding the same bindings.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use futures::future::join_all;
use harness::pg_ha::HaPostgres;
use serde_json::json;
use uuid::Uuid;

use crate::support::{
    app::{TestApp, spawn_app_with},
    course::{
        Course, admin, assert_invariants, course, enter_code, issue, learners, load_settings,
        open_only,
    },
};

const CODES: usize = 30;

fn repository() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned()
}

/// What happens to a node.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Its whole process group killed: a machine that died.
    Kill,
    /// Its whole process group stopped (SIGSTOP): a machine that froze,
    /// or was cut off without a word; its connections stay open and
    /// nothing answers on them.
    Freeze,
}

/// The formation, the app on it (its pool following the primary), a
/// course with [`CODES`] codes and two learners per code, each with the
/// code pending.
struct Race {
    ha: HaPostgres,
    app: TestApp,
    course: Course,
    codes: Vec<(Uuid, String)>,
    crowd: Vec<(Uuid, reqwest::Client)>,
}

impl Race {
    async fn set_up() -> Self {
        Self::set_up_with(|_| ()).await
    }

    async fn set_up_with(adjust: impl FnOnce(&mut server::config::Settings)) -> Self {
        let ha = tokio::task::spawn_blocking(|| HaPostgres::start(&repository()))
            .await
            .expect("join")
            .expect("a highly available PostgreSQL (scripts/pg-ha.sh)");
        let node2 = ("127.0.0.1".to_owned(), ha.port + 2);
        engine::db::migrate(&ha.url(1), std::slice::from_ref(&node2))
            .await
            .expect("migrate");
        // Synchronous replication is on (else the kill below could pass
        // by luck of a short lag): node 1's standby is a quorum member.
        let mut primary = <sqlx::PgConnection as sqlx::Connection>::connect(&ha.url(1))
            .await
            .expect("node 1");
        let sync: Vec<String> = sqlx::query_scalar(
            "SELECT sync_state FROM pg_stat_replication
             WHERE current_setting('synchronous_standby_names') <> ''",
        )
        .fetch_all(&mut primary)
        .await
        .expect("pg_stat_replication");
        assert_eq!(
            sync,
            ["quorum"],
            "node 1 replicates synchronously to node 2"
        );
        let mut settings = load_settings();
        settings.database.failover_hosts = ha.failover_hosts();
        settings.database.primary_probe_interval_ms = 200;
        adjust(&mut settings);
        let pool =
            engine::db::pool_with_timeouts(ha.url(1).parse().expect("url"), &settings.db_options());
        let app = spawn_app_with(pool, settings).await;
        let admin = admin(&app).await;
        let course = course(&app, &admin, json!({})).await;
        let codes = issue(&app, &admin, course.share, CODES).await;
        let crowd = learners(&app, 2 * CODES).await;
        let entered = join_all(
            crowd
                .iter()
                .enumerate()
                .map(|(i, (_, client))| enter_code(&app, client, &course.slug, &codes[i / 2].1)),
        )
        .await;
        assert!(entered.iter().all(|r| r.status() == 200));
        Self {
            ha,
            app,
            course,
            codes,
            crowd,
        }
    }

    async fn run_killing(
        &self,
        node: u16,
    ) -> (Vec<Vec<(u16, String)>>, BTreeMap<(u16, String), usize>) {
        self.run_with(node, Fault::Kill).await
    }

    /// Every learner opens (10 ms apart, 600 ms in all), replaying under its
    /// own request id while the answer is retryable; `fault` strikes `node`
    /// 200 ms in. Each learner's answers, in order, and every answer
    /// counted.
    async fn run_with(
        &self,
        node: u16,
        fault: Fault,
    ) -> (Vec<Vec<(u16, String)>>, BTreeMap<(u16, String), usize>) {
        let started = Instant::now();
        let openings = self
            .crowd
            .iter()
            .enumerate()
            .map(|(i, (_, client))| async move {
                tokio::time::sleep(Duration::from_millis(10 * i as u64)).await;
                let key = Uuid::new_v4().to_string();
                let mut answers = Vec::new();
                while started.elapsed() < Duration::from_secs(120) {
                    let response = open_only(&self.app, client, &self.course, Some(&key)).await;
                    let status = response.status().as_u16();
                    let retry_after = response.headers().contains_key("retry-after");
                    let body: serde_json::Value = response.json().await.unwrap_or_default();
                    let code = body["code"].as_str().unwrap_or_default().to_owned();
                    let retryable = (status == 503 && retry_after)
                        || (status == 409
                            && matches!(code.as_str(), "busy_retry" | "idempotency_key_in_flight"));
                    answers.push((status, code));
                    if !retryable {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                answers
            });
        let kill = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let killed_at = started.elapsed();
            tokio::task::block_in_place(|| match fault {
                Fault::Kill => self.ha.kill(node),
                Fault::Freeze => self.ha.freeze(node),
            })
            .expect("the fault");
            killed_at
        };
        let (answers, killed_at) = tokio::join!(join_all(openings), kill);
        let mut seen: BTreeMap<(u16, String), usize> = BTreeMap::new();
        for answer in answers.iter().flatten() {
            *seen.entry(answer.clone()).or_default() += 1;
        }
        eprintln!(
            "node {node}: {fault:?} at {killed_at:?}, every opening answered by {:?}: {seen:?}",
            started.elapsed()
        );
        (answers, seen)
    }

    /// What must hold after the race, in SQL on the primary: clients saw
    /// only successes, the one final refusal and retryable answers; each
    /// code has exactly one winner of its two learners, who holds it with
    /// one binding and one access record.
    async fn assert_one_winner_per_code(
        &self,
        answers: &[Vec<(u16, String)>],
        seen: &BTreeMap<(u16, String), usize>,
    ) {
        let allowed = |(status, code): &(u16, String)| {
            matches!(
                (*status, code.as_str()),
                (200, _)
                    | (503, "unavailable" | "timeout")
                    | (
                        409,
                        "code_bound" | "busy_retry" | "idempotency_key_in_flight"
                    )
            )
        };
        assert!(
            seen.keys().all(allowed),
            "only successes, the final refusal and retryable answers: {seen:?}"
        );
        let mut winners = Vec::new();
        for ((id, _), answers) in self.crowd.iter().zip(answers) {
            let last = answers.last().expect("an answer");
            assert!(
                last.0 == 200 || *last == (409, "code_bound".to_owned()),
                "learner {id} ended on {last:?}: {answers:?}"
            );
            if last.0 == 200 {
                winners.push(*id);
            }
        }
        for (pair, (code, _)) in self.crowd.chunks(2).zip(&self.codes) {
            let won: Vec<Uuid> = pair
                .iter()
                .map(|(id, _)| *id)
                .filter(|id| winners.contains(id))
                .collect();
            assert_eq!(won.len(), 1, "code {code}: one winner of its two learners");
            let holder: Option<Uuid> =
                sqlx::query_scalar("SELECT bound_principal FROM auth_codes WHERE id = $1")
                    .bind(code)
                    .fetch_one(&self.app.pool)
                    .await
                    .expect("the code");
            assert_eq!(holder, Some(won[0]), "code {code} is held by its winner");
        }
        for winner in &winners {
            let (bindings, records): (i64, i64) = sqlx::query_as(
                "SELECT (SELECT count(*) FROM auth_codes WHERE share_id = $1 AND bound_principal = $2),
                        (SELECT count(*) FROM access_records WHERE share_id = $1 AND principal_id = $2)",
            )
            .bind(self.course.share)
            .bind(winner)
            .fetch_one(&self.app.pool)
            .await
            .expect("state");
            assert_eq!(
                (bindings, records),
                (1, 1),
                "learner {winner} was answered 200: one binding, one record"
            );
        }
        assert_eq!(winners.len(), CODES);
        assert_invariants(&self.app, "after the fault").await;
    }

    /// Starts `node` again, waits for the nodes to report `states`, and
    /// for `node` (a standby now) to hold every binding.
    async fn rejoin(&self, node: u16, states: &str) {
        tokio::task::block_in_place(|| self.ha.restart(node)).expect("restart the node");
        self.rejoined(node, states).await;
    }

    /// Waits for the nodes to report `states`, and for `node` (a standby
    /// now) to hold every binding.
    async fn rejoined(&self, node: u16, states: &str) {
        tokio::task::block_in_place(|| self.ha.wait(states, 120))
            .unwrap_or_else(|e| panic!("{e:#}\n{}", self.ha.logs()));
        let mut bound = None;
        for _ in 0..150 {
            let counted: Result<i64, sqlx::Error> = async {
                let mut c =
                    <sqlx::PgConnection as sqlx::Connection>::connect(&self.ha.url(node)).await?;
                let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
                    .fetch_one(&mut c)
                    .await?;
                assert!(standby, "node {node} rejoined as a standby");
                sqlx::query_scalar(
                    "SELECT count(*) FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL",
                )
                .bind(self.course.share)
                .fetch_one(&mut c)
                .await
            }
            .await;
            bound = counted.ok();
            if bound == Some(CODES as i64) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("node {node} holds {bound:?} bindings, not {CODES}");
    }
}

/// The primary's machine dies mid-race: the monitor promotes the
/// synchronous standby, the app's pool follows it without a restart, and
/// nothing answered 200 is missing there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_primary_under_first_accesses_loses_nothing_and_doubles_nothing() {
    let race = Race::set_up().await;
    let (answers, seen) = race.run_killing(1).await;
    let primary = tokio::task::block_in_place(|| race.ha.primary()).expect("a primary");
    assert_eq!(
        primary,
        format!("127.0.0.1:{}", race.ha.port + 2),
        "{}",
        race.ha.logs()
    );
    assert!(
        seen.keys().any(|(status, _)| *status == 503),
        "some openings met the outage: {seen:?}"
    );
    race.assert_one_winner_per_code(&answers, &seen).await;
    race.rejoin(1, "secondary primary").await;
}

/// The primary's machine freezes mid-race (SIGSTOP: its connections stay
/// open, nothing answers on them, as on a silent partition): the monitor
/// promotes the standby, the app leaves the frozen node behind (requests
/// waiting on it end as 503s, and their replays are answered on the new
/// primary), and nothing answered 200 is missing there. Thawed, the old
/// primary takes no write: it rejoins as a standby holding every binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freezing_the_primary_under_first_accesses_loses_nothing_and_doubles_nothing() {
    // A request waiting on the frozen node ends at its deadline (503
    // `timeout`, then replayed): 10 s rather than 60, to keep the test short.
    let race = Race::set_up_with(|settings| settings.server.request_timeout_secs = 10).await;
    let (answers, seen) = race.run_with(1, Fault::Freeze).await;
    let primary = tokio::task::block_in_place(|| race.ha.primary()).expect("a primary");
    assert_eq!(
        primary,
        format!("127.0.0.1:{}", race.ha.port + 2),
        "{}",
        race.ha.logs()
    );
    race.assert_one_winner_per_code(&answers, &seen).await;
    tokio::task::block_in_place(|| race.ha.thaw(1)).expect("thaw node 1");
    race.rejoined(1, "secondary primary").await;
    race.assert_one_winner_per_code(&answers, &seen).await;
}

/// The standby's machine dies mid-race: commits wait for it until the
/// monitor lets the primary go on alone (`wait_primary`, synchronous
/// replication off), then every learner gets in as before; the standby
/// rejoins and catches up. (A settlement answered while it was away is on
/// one node only: docs/operations/high-availability.md.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_standby_under_first_accesses_stalls_writes_then_they_go_on() {
    let race = Race::set_up().await;
    let (answers, seen) = race.run_killing(2).await;
    let primary = tokio::task::block_in_place(|| race.ha.primary()).expect("a primary");
    assert_eq!(
        primary,
        format!("127.0.0.1:{}", race.ha.port + 1),
        "{}",
        race.ha.logs()
    );
    race.assert_one_winner_per_code(&answers, &seen).await;
    race.rejoin(2, "primary secondary").await;
}

/// Given the standby's address first, the pool refuses its connections
/// (it takes no writes) and follows the primary named among the failover
/// hosts: every query runs on the primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_given_the_standby_first_finds_the_primary() {
    let ha = tokio::task::spawn_blocking(|| HaPostgres::start(&repository()))
        .await
        .expect("join")
        .expect("a highly available PostgreSQL (scripts/pg-ha.sh)");
    let node1 = ("127.0.0.1".to_owned(), ha.port + 1);
    engine::db::migrate(&ha.url(2), std::slice::from_ref(&node1))
        .await
        .expect("migrate finds the primary");
    let options = engine::db::DbOptions {
        failover_hosts: vec![node1],
        primary_probe_every: Duration::from_millis(200),
        ..engine::db::DbOptions::default()
    };
    let pool = engine::db::pool_with_timeouts(ha.url(2).parse().expect("url"), &options);
    let started = Instant::now();
    let port = loop {
        match sqlx::query_scalar::<_, i32>("SELECT inet_server_port()")
            .fetch_one(&pool)
            .await
        {
            Ok(port) => break port,
            Err(error) => {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "no connection to the primary in 30 s: {error}"
                );
            }
        }
    };
    assert_eq!(port, i32::from(ha.port + 1), "the query ran on the primary");
    let migrated: bool = sqlx::query_scalar("SELECT to_regclass('public.auth_codes') IS NOT NULL")
        .fetch_one(&pool)
        .await
        .expect("read");
    assert!(
        migrated,
        "migrate ran on the primary (the standby replays it)"
    );
    pool.close().await;
}
