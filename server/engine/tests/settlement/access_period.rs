//! The access period, as the transaction reads it: counted from the first
//! access (`shares.access_days`), extended by the creator
//! (`auth_codes.access_until`). Past it, a returning learner and a retry of
//! their earlier attempt are refused with the day it ended and keep the
//! binding; inside it they are served; and a grant never outlives it.

use engine::settlement::{SettlementError, options::SettlementOptions};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::fixture::{Policy, World};

async fn sql(world: &World, statement: &str, id: Uuid) {
    sqlx::query(statement)
        .bind(id)
        .execute(&world.pool)
        .await
        .expect(statement);
}

async fn first_used(world: &World, code: Uuid) -> OffsetDateTime {
    sqlx::query_scalar("SELECT first_used_at FROM auth_codes WHERE id = $1")
        .bind(code)
        .fetch_one(&world.pool)
        .await
        .expect("first use")
}

/// Ann bound code 0 two days ago (resource 0, request "r1").
async fn bound_two_days_ago(world: &World) -> engine::accounts::AccountId {
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");
    sql(
        world,
        "UPDATE auth_codes SET first_used_at = first_used_at - interval '2 days' WHERE id = $1",
        world.code(0),
    )
    .await;
    ann
}

#[sqlx::test(migrations = "../../migrations")]
async fn past_the_period_a_returning_learner_is_refused_with_its_end_and_keeps_the_binding(
    pool: PgPool,
) {
    let world = World::new(pool, Policy::default()).await;
    let ann = bound_two_days_ago(&world).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    // A period of 30 days: well inside it, a new resource is a new access.
    sql(
        &world,
        "UPDATE shares SET access_days = 30 WHERE id = $1",
        world.share.id.0,
    )
    .await;
    let inside = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r2"),
        )
        .await
        .expect("inside the period");
    assert!(inside.counted, "{inside:?}");
    let ends = first_used(&world, world.code(0)).await + time::Duration::days(30);
    assert_eq!(inside.binding.access_ends, Some(ends));

    // One day: it ended yesterday, a live grant or not.
    sql(
        &world,
        "UPDATE shares SET access_days = 1 WHERE id = $1",
        world.share.id.0,
    )
    .await;
    let ended_at = first_used(&world, world.code(0)).await + time::Duration::days(1);
    for (resource, request) in [(0, "r3"), (2, "r4")] {
        let answer = world
            .settle(
                &settler,
                &world.request(ann, world.resources[resource], None, request),
            )
            .await;
        assert!(
            matches!(answer, Err(SettlementError::AccessEnded { ended_at: at }) if at == ended_at),
            "resource {resource}: {answer:?}"
        );
    }
    let state = world.state().await;
    assert_eq!(
        state.bindings,
        vec![(world.code(0), ann.0)],
        "the binding stays"
    );
    assert_eq!(state.records, 2, "nothing counted past the period");
}

/// The creator's extension (`access_until`) moves the end; the grant ends
/// with the period when that comes before the grant's own lifetime.
#[sqlx::test(migrations = "../../migrations")]
async fn an_extension_serves_again_and_the_grant_ends_with_the_period(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = bound_two_days_ago(&world).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    sql(
        &world,
        "UPDATE shares SET access_days = 1 WHERE id = $1",
        world.share.id.0,
    )
    .await;
    sql(
        &world,
        "UPDATE auth_codes SET access_until = date_trunc('second', now()) + interval '1 hour' WHERE id = $1",
        world.code(0),
    )
    .await;
    let until: OffsetDateTime =
        sqlx::query_scalar("SELECT access_until FROM auth_codes WHERE id = $1")
            .bind(world.code(0))
            .fetch_one(&world.pool)
            .await
            .expect("access_until");
    let grant = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r2"),
        )
        .await
        .expect("extended");
    assert!(grant.counted, "{grant:?}");
    assert_eq!(grant.binding.access_ends, Some(until));
    // The grant's own lifetime is hours; the period ends in one.
    assert_eq!(grant.expires_at, until, "the grant ends with the period");
}

/// A share whose period is taken away serves for good, even a binding
/// whose extension has lapsed: with no period, the extension's date is no
/// end (`binding_access_ends` is NULL without a period or a first use).
#[sqlx::test(migrations = "../../migrations")]
async fn without_a_period_a_lapsed_extension_ends_nothing(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = bound_two_days_ago(&world).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    sql(
        &world,
        "UPDATE auth_codes SET access_until = now() - interval '1 day' WHERE id = $1",
        world.code(0),
    )
    .await;
    // With a one-day period, it ended.
    sql(
        &world,
        "UPDATE shares SET access_days = 1 WHERE id = $1",
        world.share.id.0,
    )
    .await;
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::AccessEnded { .. })),
        "{answer:?}"
    );
    // The period is taken away: for good, whatever the extension said.
    sql(
        &world,
        "UPDATE shares SET access_days = NULL WHERE id = $1",
        world.share.id.0,
    )
    .await;
    let grant = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r3"),
        )
        .await
        .expect("no period, no end");
    assert!(grant.counted, "{grant:?}");
    assert_eq!(grant.binding.access_ends, None);
}

/// Another share of the tenant with a one-day period, its id sorting
/// first (`n` makes it unique).
async fn one_day_share(world: &World, n: u128) {
    sqlx::query(
        "INSERT INTO shares (tenant_id, id, slug, title, status, created_by, access_days)
         VALUES ($1, $2, $3, 'Other', 'active', $4, 1)",
    )
    .bind(world.tenant.0)
    .bind(Uuid::from_u128(n))
    .bind(format!("other-{n}"))
    .bind(world.admin.0)
    .execute(&world.pool)
    .await
    .expect("another share");
}

/// A retry of an attempt that committed is answered from it while the
/// period lasts, and refused with the period's end after. Other shares of
/// the tenant with a one-day period are not this one's: one written before
/// this share's row and one after, both with ids that sort first, so that
/// a read that lost the share meets one of them first whatever its plan
/// (table order, index order, or a hash join's reverse order).
///
/// "Before" in the table means before the row's first line pointer: an
/// update that changes no indexed column keeps the row where it was first
/// written (a heap-only tuple, reached through its first place), so a
/// bitmap scan still meets this share first. The share is rewritten with
/// a changed slug (a new place in the table), then given its slug back.
#[sqlx::test(migrations = "../../migrations")]
async fn a_retry_is_replayed_inside_the_period_and_refused_after_it(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    one_day_share(&world, 1).await;
    for slug in ["course-moved", "course"] {
        sqlx::query("UPDATE shares SET slug = $2 WHERE id = $1")
            .bind(world.share.id.0)
            .bind(slug)
            .execute(&world.pool)
            .await
            .expect("move the share's row past the other's");
    }
    let ann = bound_two_days_ago(&world).await;
    // The first attempt's grant is still live (its lifetime is hours).
    let (settler, _) = world.settler(SettlementOptions::default());
    let retry = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    sql(
        &world,
        "UPDATE shares SET access_days = 30 WHERE id = $1",
        world.share.id.0,
    )
    .await;
    one_day_share(&world, 2).await;
    let replayed = world.settle(&settler, &retry).await.expect("replayed");
    assert!(replayed.replayed, "{replayed:?}");

    sql(
        &world,
        "UPDATE shares SET access_days = 1 WHERE id = $1",
        world.share.id.0,
    )
    .await;
    let ended_at = first_used(&world, world.code(0)).await + time::Duration::days(1);
    let answer = world.settle(&settler, &retry).await;
    assert!(
        matches!(answer, Err(SettlementError::AccessEnded { ended_at: at }) if at == ended_at),
        "{answer:?}"
    );
    assert_eq!(world.state().await.records, 1);
}
