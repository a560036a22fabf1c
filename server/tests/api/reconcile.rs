//! The reconciler finds violations planted behind the constraints' backs
//! (in this test's own scratch database) and repairs counter drift, never
//! bindings.

use std::process::Command;

use serde_json::json;
use sqlx::PgPool;

use crate::course::{admin, course, enter_code, issue, learners, open};
use crate::helpers::{database_url_of, spawn_app};

/// `server reconcile [args]` with the test's Redis prefix: exit success
/// and standard output.
fn reconcile_with(pool: &PgPool, prefix: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("reconcile")
        .args(args)
        .env("DATABASE_URL", database_url_of(pool))
        .env("REDIS_URL", crate::helpers::redis_url())
        .env("APP_REDIS__KEY_PREFIX", prefix)
        .env("RUST_LOG", "off")
        .output()
        .expect("run server reconcile");
    (
        output.status.success(),
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
    sqlx::query("UPDATE shares SET quota_used = quota_used + 5 WHERE id = $1")
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
    let (clean, report) = reconcile_with(&pool, &prefix, &[]);
    assert!(clean, "{report}");
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
