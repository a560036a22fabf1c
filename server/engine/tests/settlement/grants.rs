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
