//! The reconciler finds violations planted behind the constraints' backs
//! (in this test's own scratch database) and repairs counter drift, never
//! bindings.

use std::process::Command;

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, learners, open};
use crate::support::processes::database_url_of;

/// `server reconcile [args]` with the test's Redis prefix: exit success
/// and standard output.
fn reconcile_with(pool: &PgPool, prefix: &str, args: &[&str]) -> (bool, String) {
    let (code, report) = reconcile_status(pool, prefix, args);
    (code == Some(0), report)
}

/// `server reconcile [args]`: exit status and standard output.
fn reconcile_status(pool: &PgPool, prefix: &str, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("reconcile")
        .args(args)
        .env("DATABASE_URL", database_url_of(pool))
        .env("REDIS_URL", crate::support::app::redis_url())
        .env("APP_REDIS__KEY_PREFIX", prefix)
        .env("RUST_LOG", "off")
        .output()
        .expect("run server reconcile");
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

/// The checks' findings with batches of `batch` rows (and shares).
async fn findings(pool: &PgPool, batch: i64) -> Vec<(&'static str, i64)> {
    let options = engine::invariants::Options {
        batch,
        shares_batch: batch,
        hook: None,
    };
    engine::invariants::check_all_with(pool, &options)
        .await
        .expect("checks")
        .into_iter()
        .map(|c| (c.name, c.violations))
        .collect()
}

/// Only `name` is violated, `n` times (`None`: nothing is).
fn assert_only(findings: &[(&'static str, i64)], name: Option<&str>, n: i64) {
    assert_exactly(findings, name.map(|name| (name, n)).as_slice());
}

/// Every check has no violations but those `expected` names, which have
/// exactly their counts.
fn assert_exactly(findings: &[(&'static str, i64)], expected: &[(&str, i64)]) {
    for (check, violations) in findings {
        let want = expected
            .iter()
            .find(|(name, _)| name == check)
            .map_or(0, |(_, n)| *n);
        assert_eq!(*violations, want, "{check}: {findings:?}");
    }
    for (name, _) in expected {
        assert!(findings.iter().any(|(c, _)| c == name), "no check {name}");
    }
}

/// Ids of `table` in the checks' keyset order.
async fn keyset_ids(pool: &PgPool, table: &str) -> Vec<uuid::Uuid> {
    sqlx::query_scalar(&format!("SELECT id FROM {table} ORDER BY tenant_id, id"))
        .fetch_all(pool)
        .await
        .expect("ids")
}

#[sqlx::test(migrations = "../migrations")]
async fn batched_checks_find_violations_at_batch_boundaries_exactly_once(pool: PgPool) {
    const BATCH: i64 = 2;
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let mut courses = Vec::new();
    for _ in 0..4 {
        let course = course(&app, &admin, json!({})).await;
        let codes = issue(&app, &admin, course.share, 2).await;
        courses.push((course, codes));
    }
    // One learner bound in each course: a record and its announcements each.
    let learners = learners(&app, 4).await;
    for ((course, codes), (_, learner)) in courses.iter().zip(&learners) {
        let entered = enter_code(&app, learner, &course.slug, &codes[0].1).await;
        assert_eq!(entered.status(), 200);
        assert_eq!(open(&app, learner, course, None).await.status(), 200);
    }
    let codes = keyset_ids(&pool, "auth_codes").await;
    let shares = keyset_ids(&pool, "shares").await;
    let records = keyset_ids(&pool, "access_records").await;
    for (table, n) in [
        ("auth_codes", codes.len()),
        ("shares", shares.len()),
        ("access_records", records.len()),
    ] {
        assert!(
            n as i64 > BATCH && n as i64 % BATCH == 0,
            "{table}: {n} rows, not whole batches of {BATCH}"
        );
    }

    // Clean data over several batches (the last one full): nothing found.
    assert_only(&findings(&pool, BATCH).await, None, 0);

    // First-use times broken on the first and last row of batches.
    let last = codes.len() - 1;
    let planted = vec![codes[0], codes[3], codes[4], codes[last]];
    sqlx::query("ALTER TABLE auth_codes DROP CONSTRAINT auth_codes_check")
        .execute(&pool)
        .await
        .expect("drop the constraint");
    let toggle = "UPDATE auth_codes SET first_used_at =
                      CASE WHEN first_used_at IS NULL THEN now() END WHERE id = ANY($1)";
    sqlx::query(toggle)
        .bind(&planted)
        .execute(&pool)
        .await
        .expect("plant");
    assert_only(
        &findings(&pool, BATCH).await,
        Some("a bound code has its first-use time, an unbound one has none"),
        4,
    );
    // Restored (a bound code gets a first-use time back).
    sqlx::query(toggle)
        .bind(&planted)
        .execute(&pool)
        .await
        .expect("restore");
    assert_only(&findings(&pool, BATCH).await, None, 0);

    // A share's counter drifted: the last of one batch, the first of the next.
    sqlx::query(
        "UPDATE share_quota_slots SET used = used + 1 WHERE share_id = ANY($1) AND slot = 15",
    )
    .bind(vec![shares[1], shares[2]])
    .execute(&pool)
    .await
    .expect("drift");
    assert_only(
        &findings(&pool, BATCH).await,
        Some("a share's used quota equals its counted accesses"),
        2,
    );
    sqlx::query(
        "UPDATE share_quota_slots SET used = used - 1 WHERE share_id = ANY($1) AND slot = 15",
    )
    .bind(vec![shares[1], shares[2]])
    .execute(&pool)
    .await
    .expect("restore");

    // Announcements lost for the first and the last record.
    let last = records.len() - 1;
    let lost = vec![records[0].to_string(), records[last].to_string()];
    sqlx::query(
        "DELETE FROM outbox WHERE event_type = 'access.recorded'
           AND payload->>'access_id' = ANY($1)",
    )
    .bind(&lost)
    .execute(&pool)
    .await
    .expect("lose announcements");
    assert_only(
        &findings(&pool, BATCH).await,
        Some("every access record was announced in the outbox, once"),
        2,
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn double_bindings_are_found_once_across_group_batches(pool: PgPool) {
    const BATCH: i64 = 2;
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 8).await;
    let learners = learners(&app, 4).await;
    for ((_, learner), (_, code)) in learners.iter().zip(&codes) {
        let entered = enter_code(&app, learner, &course.slug, code).await;
        assert_eq!(entered.status(), 200);
        assert_eq!(open(&app, learner, &course, None).await.status(), 200);
    }
    // Four (share, learner) groups, two batches of two.
    let principals: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT bound_principal FROM auth_codes WHERE bound_principal IS NOT NULL
         ORDER BY tenant_id, share_id, bound_principal",
    )
    .fetch_all(&pool)
    .await
    .expect("groups");
    assert_eq!(principals.len(), 4);
    assert_only(&findings(&pool, BATCH).await, None, 0);

    // The last group of the first batch and the first of the second each
    // get a second code.
    sqlx::query("DROP INDEX auth_codes_one_per_learner")
        .execute(&pool)
        .await
        .expect("drop the constraint");
    let spare: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT id FROM auth_codes WHERE bound_principal IS NULL ORDER BY id LIMIT 2",
    )
    .fetch_all(&pool)
    .await
    .expect("spare codes");
    for (code, principal) in spare.iter().zip([principals[1], principals[2]]) {
        sqlx::query(
            "UPDATE auth_codes SET bound_principal = $1, first_used_at = now() WHERE id = $2",
        )
        .bind(principal)
        .bind(code)
        .execute(&pool)
        .await
        .expect("plant a double binding");
    }
    // Planted by hand, the two bindings were also never made by their
    // learners (no first access), nor moved to them on the audited path.
    assert_exactly(
        &findings(&pool, BATCH).await,
        &[
            ("an account holds at most one code per share", 2),
            (
                "a binding is its learner's own, an approved transfer's or a replacement's",
                2,
            ),
        ],
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_binding_committed_during_a_run_is_not_a_violation(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 4).await;
    let learners = learners(&app, 3).await;
    for ((_, learner), (_, code)) in learners.iter().zip(&codes).take(2) {
        assert_eq!(
            enter_code(&app, learner, &course.slug, code).await.status(),
            200
        );
        assert_eq!(open(&app, learner, &course, None).await.status(), 200);
    }
    let (_, late) = &learners[2];
    let late_code = &codes[2].1;
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM access_records")
        .fetch_one(&pool)
        .await
        .expect("records");

    // A learner's first access settles (its record and its announcements in
    // one transaction) after the run has walked the records and before it
    // walks the outbox.
    const CHECK: &str = "every first binding was announced in the outbox";
    let settled = std::sync::atomic::AtomicBool::new(false);
    let hook = |name: &'static str,
                walk: usize|
     -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        let (app, course, settled) = (&app, &course, &settled);
        Box::pin(async move {
            if name == CHECK && walk == 1 {
                let entered = enter_code(app, late, &course.slug, late_code).await;
                assert_eq!(entered.status(), 200);
                assert_eq!(open(app, late, course, None).await.status(), 200);
                settled.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    let options = engine::invariants::Options {
        batch: 2,
        shares_batch: 2,
        hook: Some(&hook),
    };
    let found: Vec<_> = engine::invariants::check_all_with(&pool, &options)
        .await
        .expect("checks")
        .into_iter()
        .map(|c| (c.name, c.violations))
        .collect();
    assert!(settled.load(std::sync::atomic::Ordering::SeqCst));
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM access_records")
        .fetch_one(&pool)
        .await
        .expect("records");
    assert!(after > before, "the late learner's access was recorded");
    assert_only(&found, None, 0);
    // And the next run, which sees it, finds nothing either.
    assert_only(&findings(&pool, 2).await, None, 0);
}
