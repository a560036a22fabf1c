//! A share's quota to its edge, through its slots: a learner whose own
//! slot is full is debited in another with room, by one, never past a
//! slot's cap; exactly the quota is spent, then the next access is
//! refused; and another share's slots are never touched.

use engine::settlement::{SettlementError, options::SettlementOptions};
use sqlx::PgPool;

use crate::fixture::{Policy, World};

/// (slot, used, cap) of a share's quota slots.
async fn slots(world: &World, share: uuid::Uuid) -> Vec<(i16, i32, i32)> {
    sqlx::query_as(
        "SELECT slot, used, cap FROM share_quota_slots WHERE share_id = $1 ORDER BY slot",
    )
    .bind(share)
    .fetch_all(&world.pool)
    .await
    .expect("slots")
}

#[sqlx::test(migrations = "../../migrations")]
async fn one_learner_spends_the_quota_through_every_slot_and_then_is_refused(pool: PgPool) {
    let world = World::new(
        pool,
        Policy {
            per_learner_limit: None,
            quota: Some(20),
        },
    )
    .await;
    // Another share of the tenant with a quota of its own.
    let (other, _, _) = world.other_share().await;
    let other_before = slots(&world, other.id.0).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    for n in 0..20 {
        // Each opening a new access: the last grant ended.
        sqlx::query("UPDATE access_records SET expires_at = now() - interval '1 second'")
            .execute(&world.pool)
            .await
            .expect("ending the grants");
        let pending = (n == 0).then(|| world.code(0));
        let grant = world
            .settle(
                &settler,
                &world.request(ann, world.resources[n % 3], pending, &format!("r{n}")),
            )
            .await;
        assert!(
            grant.as_ref().is_ok_and(|g| g.counted),
            "access {n}: {grant:?}"
        );
        let used: i32 = slots(&world, world.share.id.0)
            .await
            .iter()
            .map(|s| s.1)
            .sum();
        assert_eq!(
            used,
            i32::try_from(n).expect("small") + 1,
            "access {n} debits one"
        );
    }
    let full = slots(&world, world.share.id.0).await;
    assert!(
        full.iter().all(|(_, used, cap)| used == cap),
        "every slot full: {full:?}"
    );
    sqlx::query("UPDATE access_records SET expires_at = now() - interval '1 second'")
        .execute(&world.pool)
        .await
        .expect("ending the grants");
    let refused = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], None, "r20"),
        )
        .await;
    assert!(
        matches!(refused, Err(SettlementError::QuotaExhausted)),
        "{refused:?}"
    );
    let state = world.state().await;
    assert_eq!((state.records, state.quota_used), (20, 20));
    assert_eq!(
        slots(&world, world.share.id.0).await,
        full,
        "nothing past a cap"
    );
    assert_eq!(
        slots(&world, other.id.0).await,
        other_before,
        "another share's slots untouched"
    );
}
