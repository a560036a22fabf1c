//! The reconciler's checks in batches: violations at batch boundaries and
//! double bindings across group batches are found exactly once, and a
//! binding committed during a run is not a violation.

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, learners, open};

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
