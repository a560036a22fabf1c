//! The share as the transaction reads it, not as the request carried it:
//! a share drafted or archived after the page loaded is refused inside the
//! transaction (paused or moved out of its window: `transaction.rs`); one
//! inside its window is served; and another share of the tenant in another
//! state changes nothing for this one.

use engine::{
    settlement::{SettlementError, options::SettlementOptions},
    shares::Unavailability,
};
use sqlx::PgPool;

use crate::fixture::{Policy, World};

async fn set(world: &World, share: uuid::Uuid, change: &str) {
    sqlx::query(&format!("UPDATE shares SET {change} WHERE id = $1"))
        .bind(share)
        .execute(&world.pool)
        .await
        .expect("changing the share");
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_share_drafted_or_archived_after_the_page_loaded_is_not_available(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler(SettlementOptions::default());
    // The request carries the share as read while it was active.
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    for status in ["draft", "archived"] {
        set(&world, world.share.id.0, &format!("status = '{status}'")).await;
        let answer = world.settle(&settler, &request).await;
        assert!(
            matches!(
                answer,
                Err(SettlementError::ShareUnavailable(
                    Unavailability::NotAvailable
                ))
            ),
            "{status}: {answer:?}"
        );
    }
    assert_eq!(
        probe.counts().0,
        2,
        "each refused by the transaction's own read"
    );
    world.assert_untouched("a share no longer published").await;
}

/// A window that has opened and not closed serves; the bounds are read
/// as bounds, not as "a window exists".
#[sqlx::test(migrations = "../../migrations")]
async fn a_share_inside_its_window_is_served(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob, cy) = (
        world.learner("ann").await,
        world.learner("bob").await,
        world.learner("cy").await,
    );
    let (settler, _) = world.settler(SettlementOptions::default());
    set(
        &world,
        world.share.id.0,
        "valid_from = now() - interval '1 hour'",
    )
    .await;
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("opened an hour ago");
    set(
        &world,
        world.share.id.0,
        "valid_from = NULL, valid_until = now() + interval '1 hour'",
    )
    .await;
    world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(1)), "r2"),
        )
        .await
        .expect("closes in an hour");
    set(
        &world,
        world.share.id.0,
        "valid_from = now() - interval '1 hour', valid_until = now() + interval '1 hour'",
    )
    .await;
    world
        .settle(
            &settler,
            &world.request(cy, world.resources[0], Some(world.code(2)), "r3"),
        )
        .await
        .expect("inside both bounds");
    assert_eq!(world.state().await.bindings.len(), 3);
}

/// Another share of the tenant, archived, paused or closed, is another
/// share: this one is read by its own id. The others' ids sort first and
/// this one's row is rewritten onto a later page than theirs, so that a
/// read that lost the id would meet another first, in index order and in
/// table order.
#[sqlx::test(migrations = "../../migrations")]
async fn another_share_of_the_tenant_in_another_state_changes_nothing(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let other = uuid::Uuid::from_u128(1);
    sqlx::query(
        "INSERT INTO shares (tenant_id, id, slug, title, status, created_by)
         VALUES ($1, $2, 'other', 'Other', 'archived', $3)",
    )
    .bind(world.tenant.0)
    .bind(other)
    .bind(world.admin.0)
    .execute(&world.pool)
    .await
    .expect("another share");
    // Enough archived shares to fill the table's first page, all with ids
    // that sort first: this share's row, rewritten below, can then only
    // move to a later page, after all of them, whatever the scan.
    sqlx::query(
        "INSERT INTO shares (tenant_id, id, slug, title, status, created_by)
         SELECT $1, ('00000000-0000-0000-0000-' || lpad(to_hex(n), 12, '0'))::uuid,
                'filler-' || n, 'Filler ' || n || repeat('.', 100), 'archived', $2
           FROM generate_series(2, 201) AS n",
    )
    .bind(world.tenant.0)
    .bind(world.admin.0)
    .execute(&world.pool)
    .await
    .expect("filler shares");
    let (settler, _) = world.settler(SettlementOptions::default());
    for (n, change) in [
        "status = 'archived'",
        "status = 'paused'",
        "status = 'active', valid_until = now() - interval '1 minute'",
    ]
    .into_iter()
    .enumerate()
    {
        set(&world, other, change).await;
        set(&world, world.share.id.0, "title = title").await;
        let learner = world.learner(&format!("learner{n}")).await;
        let grant = world
            .settle(
                &settler,
                &world.request(
                    learner,
                    world.resources[0],
                    Some(world.code(n)),
                    &format!("r{n}"),
                ),
            )
            .await;
        assert!(grant.is_ok(), "{change}: {grant:?}");
    }
    assert_eq!(world.state().await.bindings.len(), 3);
}
