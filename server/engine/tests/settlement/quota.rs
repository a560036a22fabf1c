//! A share's quota to its edge, through its slots: a learner whose own
//! slot is full is debited in another with room, by one, never past a
//! slot's cap; exactly the quota is spent, then the next access is
//! refused; another share's slots are never touched; and a slot filled
//! while the fallback waits on it is passed over, never overfilled.

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

/// The fallback checks a slot's room again as it debits it: a slot that a
/// concurrent settlement fills between the fallback's read and its update
/// is passed over for the next one with room, never debited past its cap.
/// (The test's transaction is that concurrent settlement: it fills the
/// first slot the fallback will try and holds it until the fallback
/// waits on it.)
#[sqlx::test(migrations = "../../migrations")]
async fn a_slot_filled_while_the_fallback_waits_on_it_is_passed_over(pool: PgPool) {
    let world = World::new(
        pool,
        Policy {
            per_learner_limit: None,
            quota: Some(32),
        },
    )
    .await;
    let ann = world.learner("ann").await;
    let own: i16 = sqlx::query_scalar("SELECT (hashtextextended($1::text, 0) & 15)::smallint")
        .bind(ann.0)
        .fetch_one(&world.pool)
        .await
        .expect("ann's slot");
    let (next, after) = ((own + 1) % 16, (own + 2) % 16);
    let share = world.share.id.0;
    // Ann's own slot is full: the fallback tries the next, then the one after.
    sqlx::query("UPDATE share_quota_slots SET used = cap WHERE share_id = $1 AND slot = $2")
        .bind(share)
        .bind(own)
        .execute(&world.pool)
        .await
        .expect("filling ann's slot");
    let mut concurrent = world.pool.begin().await.expect("begin");
    sqlx::query("UPDATE share_quota_slots SET used = cap WHERE share_id = $1 AND slot = $2")
        .bind(share)
        .bind(next)
        .execute(&mut *concurrent)
        .await
        .expect("filling the next slot, uncommitted");
    let (settler, _) = world.settler(SettlementOptions::default());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let settling = {
        let (settler, request) = (settler.clone(), request.clone());
        tokio::spawn(async move { settler.settle(&request).await })
    };
    crate::fixture::wait_until_blocked(&world.pool).await;
    concurrent
        .commit()
        .await
        .expect("the concurrent debit commits");
    let grant = settling.await.expect("task").expect("granted");
    assert!(grant.counted, "{grant:?}");
    let slots = slots(&world, share).await;
    let used = |slot: i16| slots.iter().find(|s| s.0 == slot).map(|s| (s.1, s.2));
    assert_eq!(used(own), Some((2, 2)), "{slots:?}");
    assert_eq!(used(next), Some((2, 2)), "never past its cap: {slots:?}");
    assert_eq!(used(after), Some((1, 2)), "the next with room: {slots:?}");
    assert_eq!(
        slots.iter().map(|s| s.1).sum::<i32>(),
        5,
        "two full slots and one debit: {slots:?}"
    );
}
