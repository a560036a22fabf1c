//! A grant is live until it expires, and the transaction's lock waits are
//! its own to end: past its budget PostgreSQL stops waiting by itself, so
//! no attempt the caller gave up on lingers behind a lock.

use std::time::Duration;

use engine::settlement::{SettlementError, options::SettlementOptions};
use sqlx::PgPool;

use crate::fixture::{Policy, World};

/// Ann bound code 0 and opened resource 0 (request "r1").
async fn ann_bound(world: &World) -> engine::accounts::AccountId {
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");
    ann
}

async fn end_grants(world: &World) {
    sqlx::query("UPDATE access_records SET expires_at = now() - interval '1 second'")
        .execute(&world.pool)
        .await
        .expect("ending the grants");
}

#[sqlx::test(migrations = "../../migrations")]
async fn an_expired_grant_is_not_live_and_the_next_opening_counts(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = ann_bound(&world).await;
    end_grants(&world).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let again = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], None, "r2"),
        )
        .await
        .expect("granted again");
    assert!(again.counted && !again.replayed, "{again:?}");
    let state = world.state().await;
    assert_eq!(state.records, 2);
    assert_eq!(state.access_counts, vec![(world.code(0), 2)]);
}

/// The test holds the learner's binding row; the settlement, bounded at
/// 500 ms, answers "unavailable", and by then its backend has stopped
/// waiting (its `lock_timeout`), while the row is still held.
#[sqlx::test(migrations = "../../migrations")]
async fn a_settlement_past_its_budget_stops_waiting_on_its_own(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = ann_bound(&world).await;
    end_grants(&world).await;
    let mut holder = world.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM auth_codes WHERE id = $1 FOR UPDATE")
        .bind(world.code(0))
        .execute(&mut *holder)
        .await
        .expect("hold the binding");
    let (settler, _) = world.settler(SettlementOptions {
        transaction_timeout: Duration::from_millis(500),
        ..SettlementOptions::default()
    });
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], None, "r2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::Unavailable)),
        "{answer:?}"
    );
    let mut waiting = -1_i64;
    for _ in 0..100 {
        waiting = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&world.pool)
        .await
        .expect("pg_stat_activity");
        if waiting == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(waiting, 0, "a backend still waits on the held row");
    holder.rollback().await.expect("release");
    assert_eq!(world.state().await.records, 1, "nothing counted");
}

/// Every lock wait is short, but together they run past the budget: the
/// call gives up before it commits (`settle_access_within`), and nothing
/// is counted behind the caller's back. The test holds the share's quota
/// lock, then the learner's binding, each for less than the budget.
#[sqlx::test(migrations = "../../migrations")]
async fn short_waits_past_the_budget_together_commit_nothing(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = ann_bound(&world).await;
    end_grants(&world).await;
    let mut quota_lock = world.pool.acquire().await.expect("a connection");
    sqlx::query("SELECT pg_advisory_lock(share_quota_lock_key($1))")
        .bind(world.share.id.0)
        .execute(&mut *quota_lock)
        .await
        .expect("hold the share's quota lock");
    let mut binding = world.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM auth_codes WHERE id = $1 FOR UPDATE")
        .bind(world.code(0))
        .execute(&mut *binding)
        .await
        .expect("hold the binding");
    // A budget of 6.4 s (four fifths of 8 s); each wait below is 3.3 s,
    // about 3 s short of the lock timeout, and together 6.6 s.
    let (settler, _) = world.settler(SettlementOptions {
        transaction_timeout: Duration::from_secs(8),
        ..SettlementOptions::default()
    });
    let request = world.request(ann, world.resources[0], None, "r2");
    let settling = world.settle(&settler, &request);
    let holding = async {
        wait_for(&world, "advisory").await;
        tokio::time::sleep(Duration::from_millis(3_300)).await;
        sqlx::query("SELECT pg_advisory_unlock(share_quota_lock_key($1))")
            .bind(world.share.id.0)
            .execute(&mut *quota_lock)
            .await
            .expect("let the quota lock go");
        wait_for(&world, "transactionid").await;
        tokio::time::sleep(Duration::from_millis(3_300)).await;
        binding.rollback().await.expect("let the binding go");
    };
    let (answer, ()) = tokio::join!(settling, holding);
    assert!(
        matches!(answer, Err(SettlementError::Unavailable)),
        "{answer:?}"
    );
    // Whatever the backend still does ends before this reads.
    wait_for_no_settlement(&world).await;
    assert_eq!(world.state().await.records, 1, "nothing counted");
}

/// Until a backend of this database waits on a lock of this kind.
async fn wait_for(world: &World, event: &str) {
    for _ in 0..400 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1",
        )
        .bind(event)
        .fetch_one(&world.pool)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the settlement never waited on the test's {event} lock");
}

async fn wait_for_no_settlement(world: &World) {
    for _ in 0..400 {
        let running: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND state = 'active' AND query LIKE '%settle_access(%'
               AND pid <> pg_backend_pid()",
        )
        .fetch_one(&world.pool)
        .await
        .expect("pg_stat_activity");
        if running == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("a settlement is still running");
}
