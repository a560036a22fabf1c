//! The reconciler finds violations planted behind the constraints' backs
//! (in this test's own scratch database) and repairs counter drift, never
//! bindings: among them a code bound after its date and a binding moved
//! outside the audited transfer path. A second reconciler skips while one
//! runs.

use std::process::Command;

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app;
use crate::support::course::{admin, assert_invariants, course, enter_code, issue, learners, open};
use crate::support::processes::database_url_of;
use crate::support::transfers::{bound_course, confirmed_request, decide};

/// `server reconcile [args]` with the test's Redis prefix: exit success
/// and standard output.
fn reconcile_with(pool: &PgPool, prefix: &str, args: &[&str]) -> (bool, String) {
    let (code, report) = reconcile_status(pool, prefix, args);
    (code == Some(0), report)
}

/// `server reconcile [args]`: exit status and standard output.
fn reconcile_status(pool: &PgPool, prefix: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_server"));
    command
        .arg("reconcile")
        .args(args)
        .env("DATABASE_URL", database_url_of(pool))
        .env("REDIS_URL", crate::support::app::redis_url())
        .env("APP_REDIS__KEY_PREFIX", prefix)
        .env("RUST_LOG", "off");
    // The Redis the test servers use: the cluster on its run.
    if let Ok(nodes) = std::env::var("REDIS_CLUSTER_NODES")
        && !nodes.is_empty()
    {
        command
            .env("REDIS_URL", nodes)
            .env("APP_REDIS__CLUSTER", "true");
    }
    let output = command.output().expect("run server reconcile");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[sqlx::test(migrations = "../migrations")]
async fn the_reconciler_reports_planted_violations_and_repairs_only_counters(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let prefix = app.redis.keys().prefix().to_owned();
    let reconcile = |pool: &PgPool, args: &[&str]| reconcile_with(pool, &prefix, args);
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let (learner_id, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);

    let (clean, report) = reconcile(&pool, &[]);
    assert!(clean, "{report}");
    assert!(!report.contains("VIOLATED"), "{report}");
    assert!(
        report.contains("ok  every Redis reservation expires within its TTL"),
        "{report}"
    );

    // A reservation that would never expire (no script writes one): found,
    // then removed by the repair.
    let stuck = app
        .redis
        .keys()
        .reservation_code(admin.tenant, course.share, codes[1].0);
    let _: () = redis::cmd("SET")
        .arg(&stuck)
        .arg("someone")
        .query_async(&mut app.redis.conn())
        .await
        .expect("plant a reservation");
    let (clean, report) = reconcile(&pool, &[]);
    assert!(!clean, "{report}");
    assert!(
        report.contains("VIOLATED (1)  every Redis reservation expires within its TTL"),
        "{report}"
    );
    // A live reservation (within the 4 s TTL) is neither reported nor removed.
    let live = app
        .redis
        .keys()
        .reservation_user(admin.tenant, course.share, uuid::Uuid::new_v4());
    let _: () = redis::cmd("SET")
        .arg(&live)
        .arg("someone else")
        .arg("PX")
        .arg(3_900)
        .query_async(&mut app.redis.conn())
        .await
        .expect("a live reservation");
    let (clean, report) = reconcile(&pool, &["--repair"]);
    assert!(clean, "{report}");
    assert!(
        report.contains("removed 1 stale Redis reservation(s)"),
        "{report}"
    );
    let kept: i64 = redis::cmd("EXISTS")
        .arg(&live)
        .query_async(&mut app.redis.conn())
        .await
        .expect("exists");
    assert_eq!(kept, 1, "the live reservation stays");
    let left: i64 = redis::cmd("EXISTS")
        .arg(&stuck)
        .query_async(&mut app.redis.conn())
        .await
        .expect("exists");
    assert_eq!(left, 0);

    // Plant a second code for the same learner, the constraint dropped.
    sqlx::query("DROP INDEX auth_codes_one_per_learner")
        .execute(&pool)
        .await
        .expect("drop the constraint");
    sqlx::query("UPDATE auth_codes SET bound_principal = $1, first_used_at = now() WHERE id = $2")
        .bind(learner_id)
        .bind(codes[1].0)
        .execute(&pool)
        .await
        .expect("plant a double binding");
    // And drift a counter.
    sqlx::query("UPDATE share_quota_slots SET used = used + 5 WHERE share_id = $1 AND slot = 15")
        .bind(course.share)
        .execute(&pool)
        .await
        .expect("drift");

    let (clean, report) = reconcile(&pool, &[]);
    assert!(!clean, "violations fail the command");
    assert!(
        report.contains("VIOLATED (1)  an account holds at most one code per share"),
        "{report}"
    );
    assert!(
        report.contains("VIOLATED (1)  a share's used quota equals its counted accesses"),
        "{report}"
    );

    // Repair fixes the counter, never the bindings.
    let (clean, report) = reconcile(&pool, &["--repair"]);
    assert!(!clean, "the binding problem remains");
    assert!(
        report.contains("repaired the used quota of 1 share(s)"),
        "{report}"
    );
    assert!(
        !report.contains("VIOLATED (1)  a share's used quota"),
        "{report}"
    );
    let bound: i64 =
        sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE bound_principal = $1")
            .bind(learner_id)
            .fetch_one(&pool)
            .await
            .expect("bindings");
    assert_eq!(bound, 2, "bindings are left for a person to decide");
}

/// Stale reservations of many shares (many cluster slots, so on a cluster
/// every primary holds some) are all found and all removed: the audit
/// reaches every node, not one.
#[sqlx::test(migrations = "../migrations")]
async fn the_reservation_audit_reaches_every_redis_node(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let prefix = app.redis.keys().prefix().to_owned();
    let planted: Vec<String> = (0..24)
        .map(|_| {
            app.redis
                .keys()
                .reservation_code(Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4())
        })
        .collect();
    for key in &planted {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg("someone")
            .query_async(&mut app.redis.conn())
            .await
            .expect("plant a reservation");
    }
    let (clean, report) = reconcile_with(&pool, &prefix, &[]);
    assert!(!clean, "{report}");
    assert!(
        report.contains("VIOLATED (24)  every Redis reservation expires within its TTL"),
        "{report}"
    );
    let (clean, report) = reconcile_with(&pool, &prefix, &["--repair"]);
    assert!(clean, "{report}");
    assert!(
        report.contains("removed 24 stale Redis reservation(s)"),
        "{report}"
    );
    for key in &planted {
        let left: i64 = redis::cmd("EXISTS")
            .arg(key)
            .query_async(&mut app.redis.conn())
            .await
            .expect("exists");
        assert_eq!(left, 0, "{key} removed");
    }
}

/// A Redis the audit cannot reach is said so, and is not a pass: a cron
/// reading the exit status must not see "all hold" for keys never seen.
#[sqlx::test(migrations = "../migrations")]
async fn a_redis_the_audit_cannot_reach_is_not_a_pass(pool: PgPool) {
    let output = Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("reconcile")
        .env("DATABASE_URL", database_url_of(&pool))
        .env("REDIS_URL", "redis://127.0.0.1:1")
        .env("APP_REDIS__RESPONSE_TIMEOUT_MS", "500")
        .env("RUST_LOG", "off")
        .output()
        .expect("run server reconcile");
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert!(
        report.contains("NOT CHECKED  every Redis reservation expires within its TTL"),
        "{report}"
    );
    assert!(
        report.contains("ok  an account holds at most one code per share"),
        "the database checks still ran: {report}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_second_reconciler_skips_while_one_runs(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let prefix = app.redis.keys().prefix().to_owned();
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 2).await;

    // Another reconciler is running: it holds the reconciler's advisory
    // lock (`engine::invariants::RECONCILE_LOCK`) on its own connection.
    use sqlx::Connection as _;
    let mut running = sqlx::PgConnection::connect(&database_url_of(&pool))
        .await
        .expect("connect");
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(0x4164_6d69_744f_6e65_i64)
        .execute(&mut running)
        .await
        .expect("lock");
    let (code, report) = reconcile_status(&pool, &prefix, &[]);
    assert_eq!(
        code,
        Some(3),
        "a skip is neither a pass nor a violation: {report}"
    );
    assert!(
        report.contains("skipped: another reconciler is running"),
        "{report}"
    );
    assert!(!report.contains("ok  "), "it checked anyway: {report}");

    // Once that one is done, the next run checks everything.
    running.close().await.expect("close");
    let (clean, report) = reconcile_with(&pool, &prefix, &[]);
    assert!(clean, "{report}");
    assert!(!report.contains("skipped"), "{report}");
    assert!(
        report.contains("ok  a share never uses more than its quota"),
        "{report}"
    );
}

/// The reconciler finds a binding made after its code's date (planted
/// behind the trigger's back) and nothing in a clean database.
#[sqlx::test(migrations = "../migrations")]
async fn the_reconciler_finds_a_code_bound_after_its_date(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, learner) = learners(&app, 1).await.remove(0);
    enter_code(&app, &learner, &course.slug, &codes[0].1).await;
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    const CHECK: &str = "no code was bound after its expiry date";
    let found = |checks: Vec<engine::invariants::Check>| {
        checks
            .into_iter()
            .find(|c| c.name == CHECK)
            .expect("the check runs")
            .violations
    };
    let clean = engine::invariants::check_all(&app.pool)
        .await
        .expect("checks");
    assert_eq!(found(clean), 0);
    sqlx::query(
        "UPDATE auth_codes SET expires_at = first_used_at - interval '1 day' WHERE id = $1",
    )
    .bind(codes[0].0)
    .execute(&app.pool)
    .await
    .expect("plant");
    let planted = engine::invariants::check_all(&app.pool)
        .await
        .expect("checks");
    assert_eq!(found(planted), 1);
}

/// The reconciler's two transfer checks fail when they should: a binding
/// moved by hand on the unbind path (no approved transfer, no audit) and
/// a code moved more often than its limit (constraints dropped).
#[sqlx::test(migrations = "../migrations")]
async fn the_reconciler_flags_a_binding_moved_outside_the_audited_path(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, codes, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let people = learners(&app, 2).await;
    let (bob, carol) = (&people[0], &people[1]);
    let id = confirmed_request(&app, &course, (&ann_client, bob)).await;
    assert_eq!(
        decide(&app, &owner, id, "approve", json!({}))
            .await
            .status(),
        200
    );
    assert_invariants(&app, "an approved transfer is not a violation").await;

    let moved = "a binding is its learner's own, an approved transfer's or a replacement's";
    let limit = "no code was transferred more often than its limit allowed";
    let violations = |name: &'static str| {
        let pool = app.pool.clone();
        async move {
            engine::invariants::violations(&pool)
                .await
                .expect("checks")
                .into_iter()
                .filter(|c| c.name == name)
                .map(|c| c.violations)
                .sum::<i64>()
        }
    };
    // Moved to Carol by hand, the switch set as only the audited path does.
    let mut tx = app.pool.begin().await.expect("tx");
    sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
        .execute(&mut *tx)
        .await
        .expect("switch");
    sqlx::query("UPDATE auth_codes SET bound_principal = $1 WHERE id = $2")
        .bind(carol.0)
        .bind(codes[0].0)
        .execute(&mut *tx)
        .await
        .expect("move by hand");
    tx.commit().await.expect("commit");
    assert_eq!(violations(moved).await, 1);
    assert_eq!(violations(limit).await, 0);

    // Three approved transfers of one code under a limit of 2.
    for sql in [
        "ALTER TABLE transfer_requests DROP CONSTRAINT transfer_requests_within_limit",
        "DROP INDEX transfer_requests_ordinal",
        "DROP INDEX transfer_requests_open",
    ] {
        sqlx::query(sql).execute(&app.pool).await.expect(sql);
    }
    for ordinal in [2_i16, 3] {
        sqlx::query(
            "INSERT INTO transfer_requests (tenant_id, id, share_id, code_id, from_account, to_email,
                 to_account, status, digest, link_expires_at, decided_at, ordinal, code_limit)
             SELECT tenant_id, $2, share_id, code_id, from_account, to_email, to_account,
                    'approved', $3, link_expires_at, now(), $4, 2
             FROM transfer_requests WHERE id = $1",
        )
        .bind(id)
        .bind(Uuid::now_v7())
        .bind(Uuid::now_v7().as_bytes().to_vec())
        .bind(ordinal)
        .execute(&app.pool)
        .await
        .expect("plant");
    }
    assert_eq!(violations(limit).await, 1);
}
