//! Stale-tolerant reads on a real standby (`database.read_from_standby`,
//! `engine::db::reads`): a pg_auto_failover formation of the test's own
//! (`harness::pg_ha`), node 1 the primary, node 2 its synchronous standby.
//!
//! The console's lists, audit log and CSV exports run on the standby (its
//! one `admitone reads` connection ran the query), yet each sees every
//! write committed before it began: with the standby's replay paused, a
//! read after a revocation still lists it (it ran on the primary, while
//! the standby itself is shown not to have the revocation yet). Resumed,
//! reads go back to the standby; the standby killed, they go on, on the
//! primary.

use futures::future::join_all;
use harness::pg_ha::HaPostgres;
use serde_json::{Value, json};
use sqlx::{Connection as _, PgConnection};
use uuid::Uuid;

use crate::support::{
    app::{TestApp, spawn_app_with},
    course::{Admin, admin, course, enter_code, issue, learners, load_settings, open, post_json},
};

fn repository() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned()
}

async fn get_json(app: &TestApp, admin: &Admin, path: &str) -> Value {
    let response = admin
        .client
        .get(format!("{}{path}", app.address))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "GET {path}");
    response.json().await.expect("JSON")
}

/// The queries the standby's reads pool last ran (one per connection).
async fn standby_queries(standby: &mut PgConnection) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT query FROM pg_stat_activity
         WHERE application_name = 'admitone reads' AND backend_type = 'client backend'
           AND pid <> pg_backend_pid()",
    )
    .fetch_all(standby)
    .await
    .expect("pg_stat_activity on the standby")
}

/// Whether the standby's reads pool last ran a query containing `text`.
async fn standby_ran(standby: &mut PgConnection, text: &str) -> bool {
    standby_queries(standby)
        .await
        .iter()
        .any(|query| query.contains(text))
}

fn revoked_count(shares: &Value, share: Uuid) -> i64 {
    shares["shares"]
        .as_array()
        .expect("shares")
        .iter()
        .find(|s| s["id"] == json!(share))
        .expect("the course")["revoked"]
        .as_i64()
        .expect("revoked")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_run_on_the_standby_and_still_see_every_write_before_them() {
    let ha = tokio::task::spawn_blocking(|| HaPostgres::start(&repository()))
        .await
        .expect("join")
        .expect("a highly available PostgreSQL (scripts/pg-ha.sh)");
    let node2 = ("127.0.0.1".to_owned(), ha.port + 2);
    engine::db::migrate(&ha.url(1), std::slice::from_ref(&node2))
        .await
        .expect("migrate");
    let mut settings = load_settings();
    settings.database.url = ha.url(1).into();
    settings.database.failover_hosts = ha.failover_hosts();
    settings.database.primary_probe_interval_ms = 200;
    settings.database.read_from_standby = true;
    // One connection: what it last ran is what the last read on the
    // standby was.
    settings.database.standby_max_connections = 1;
    settings.database.standby_wait_ms = 300;
    let pool =
        engine::db::pool_with_timeouts(ha.url(1).parse().expect("url"), &settings.db_options());
    let app = spawn_app_with(pool, settings).await;
    let mut standby = PgConnection::connect(&ha.url(2)).await.expect("node 2");
    let in_recovery: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
        .fetch_one(&mut standby)
        .await
        .expect("node 2's role");
    assert!(in_recovery, "node 2 is the standby");

    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 3).await;
    let shares_path = format!("/api/v1/tenants/{}/shares", admin.tenant);
    let audit_path = format!("/api/v1/tenants/{}/audit", admin.tenant);

    // The write just made is read back at once, and the standby ran the
    // read (the follower finds the standby within a few probes: the
    // first reads may still run on the primary).
    let mut on_standby = false;
    for _ in 0..50 {
        let shares = get_json(&app, &admin, &shares_path).await;
        assert_eq!(
            shares["shares"][0]["issued"], 3,
            "the codes just issued: {shares}"
        );
        if standby_ran(&mut standby, "AS \"issued!\"").await {
            on_standby = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        on_standby,
        "the shares list ran on the standby: {:?}",
        standby_queries(&mut standby).await
    );

    // Replay paused: the standby falls behind the next write.
    sqlx::query("SELECT pg_wal_replay_pause()")
        .execute(&mut standby)
        .await
        .expect("pause the standby's replay");
    let (code_id, _) = &codes[0];
    let revoked = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{code_id}/revoke"),
        json!({}),
    )
    .await;
    assert_eq!(revoked.status(), 200, "revoke");
    let behind: Option<time::OffsetDateTime> =
        sqlx::query_scalar("SELECT revoked_at FROM auth_codes WHERE id = $1")
            .bind(code_id)
            .fetch_one(&mut standby)
            .await
            .expect("the code on the standby");
    assert!(
        behind.is_none(),
        "the standby has not replayed the revocation (else this proves nothing)"
    );
    let audit = get_json(&app, &admin, &audit_path).await;
    assert!(
        audit["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["target_id"] == json!(code_id.to_string())),
        "the audit log lists the revocation just made: {audit}"
    );
    // What the standby's one connection ran last: the check that found it
    // behind, not the audit log.
    assert!(
        !standby_ran(&mut standby, "audit_log").await,
        "the lagging standby did not serve the audit log: {:?}",
        standby_queries(&mut standby).await
    );
    assert_eq!(
        revoked_count(&get_json(&app, &admin, &shares_path).await, course.share),
        1,
        "the shares list counts it"
    );

    // Replay resumed: the standby catches up and serves again.
    sqlx::query("SELECT pg_wal_replay_resume()")
        .execute(&mut standby)
        .await
        .expect("resume the standby's replay");
    let audit = get_json(&app, &admin, &audit_path).await;
    assert!(
        audit["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["target_id"] == json!(code_id.to_string())),
        "{audit}"
    );
    assert!(
        standby_ran(&mut standby, "audit_log").await,
        "the caught-up standby served the audit log: {:?}",
        standby_queries(&mut standby).await
    );

    // An idle primary whose WAL just moved to a new segment (as
    // `archive_timeout` does): the standby, at the same point, still serves.
    let mut primary = PgConnection::connect(&ha.url(1)).await.expect("node 1");
    sqlx::query("SELECT pg_switch_wal()")
        .execute(&mut primary)
        .await
        .expect("switch the WAL segment");
    let flushed: String = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn()::text")
        .fetch_one(&mut primary)
        .await
        .expect("the primary's position");
    for _ in 0..100 {
        let replayed: bool =
            sqlx::query_scalar("SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn")
                .bind(&flushed)
                .fetch_one(&mut standby)
                .await
                .expect("the standby's position");
        if replayed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    get_json(&app, &admin, &shares_path).await;
    get_json(&app, &admin, &audit_path).await;
    assert!(
        standby_ran(&mut standby, "audit_log").await,
        "the standby at the primary's segment boundary served the audit log: {:?}",
        standby_queries(&mut standby).await
    );

    // A learner's first opening, then the records CSV, from the standby.
    let crowd = learners(&app, 2).await;
    let opened = join_all(crowd.iter().enumerate().map(|(i, (_, client))| {
        let (course, code) = (&course, &codes[i + 1].1);
        let app = &app;
        async move {
            assert_eq!(
                enter_code(app, client, &course.slug, code).await.status(),
                200
            );
            open(app, client, course, None).await.status()
        }
    }))
    .await;
    assert!(opened.iter().all(|s| *s == 200), "{opened:?}");
    let csv = admin
        .client
        .get(format!(
            "{}/api/v1/shares/{}/records.csv",
            app.address, course.share
        ))
        .send()
        .await
        .expect("records.csv");
    assert_eq!(csv.status(), 200);
    let csv = csv.text().await.expect("CSV");
    assert_eq!(
        csv.lines().count(),
        3,
        "a header and the two openings just made: {csv}"
    );
    assert!(
        standby_ran(&mut standby, "FROM access_records").await,
        "the standby served the export: {:?}",
        standby_queries(&mut standby).await
    );

    // The standby frozen (SIGSTOP: its connections stay open, nothing
    // answers on them): reads go on, on the primary.
    tokio::task::block_in_place(|| ha.freeze(2)).expect("freeze node 2");
    let audit = get_json(&app, &admin, &audit_path).await;
    assert!(
        audit["entries"].as_array().is_some_and(|e| !e.is_empty()),
        "{audit}"
    );
    let csv = admin
        .client
        .get(format!(
            "{}/api/v1/shares/{}/records.csv",
            app.address, course.share
        ))
        .send()
        .await
        .expect("records.csv");
    assert_eq!(csv.status(), 200);
    assert_eq!(csv.text().await.expect("CSV").lines().count(), 3);
    tokio::task::block_in_place(|| ha.thaw(2)).expect("thaw node 2");

    // The standby's machine lost: reads go on, on the primary.
    drop(standby);
    tokio::task::block_in_place(|| ha.kill(2)).expect("kill node 2");
    let audit = get_json(&app, &admin, &audit_path).await;
    assert!(
        audit["entries"].as_array().is_some_and(|e| !e.is_empty()),
        "{audit}"
    );
    assert_eq!(
        revoked_count(&get_json(&app, &admin, &shares_path).await, course.share),
        1
    );
}
