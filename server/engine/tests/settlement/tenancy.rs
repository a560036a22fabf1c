//! Another tenant's rows never decide here, nor another learner's: a
//! suspension is the suspending tenant's and the suspended learner's, a
//! tenant's email rule is its own, and a request id a learner used in
//! another tenant is not a retry here.

use engine::{
    settlement::{SettlementError, options::SettlementOptions},
    tenants::{self, TenantId, TenantName, TenantSlug},
};
use sqlx::PgPool;

use crate::fixture::{Policy, World, unverified_account};

/// A second tenant, its owner the world's admin.
async fn other_tenant(world: &World) -> TenantId {
    tenants::ensure_tenant_with_owner(
        &world.pool,
        &TenantSlug::parse("other-school").expect("slug"),
        &TenantName::parse("Other School").expect("name"),
        world.admin,
    )
    .await
    .expect("tenant")
    .0
}

async fn suspend(world: &World, tenant: TenantId, learner: uuid::Uuid) {
    sqlx::query(
        "INSERT INTO suspended_learners (tenant_id, account_id, suspended_by) VALUES ($1, $2, $3)",
    )
    .bind(tenant.0)
    .bind(learner)
    .bind(world.admin.0)
    .execute(&world.pool)
    .await
    .expect("suspending");
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_suspension_is_the_suspending_tenants_and_the_suspended_learners(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let other = other_tenant(&world).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    // Ann is suspended by the other tenant, Bob by this one.
    suspend(&world, other, ann.0).await;
    suspend(&world, world.tenant, bob.0).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("another tenant's suspension is not this one's");
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(1)), "r2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::LearnerSuspended)),
        "{answer:?}"
    );
    assert_eq!(world.state().await.bindings, vec![(world.code(0), ann.0)]);
}

/// This tenant asks for a verified address; another one waives it (and
/// its row is read first by a read that lost the tenant). Then the other
/// way round: this one waives it, the other asks.
#[sqlx::test(migrations = "../../migrations")]
async fn the_email_rule_is_the_tenants_own(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let other = other_tenant(&world).await;
    sqlx::query("UPDATE tenants SET require_verified_email = false WHERE id = $1")
        .bind(other.0)
        .execute(&world.pool)
        .await
        .expect("the other tenant waives verification");
    sqlx::query("UPDATE tenants SET require_verified_email = true WHERE id = $1")
        .bind(world.tenant.0)
        .execute(&world.pool)
        .await
        .expect("this tenant asks for it (its row rewritten last)");
    let ann = unverified_account(&world.pool, "ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::EmailNotVerified)),
        "{answer:?}"
    );
    world.assert_untouched("an unverified learner").await;

    for (tenant, asks) in [(world.tenant, false), (other, true)] {
        sqlx::query("UPDATE tenants SET require_verified_email = $2 WHERE id = $1")
            .bind(tenant.0)
            .bind(asks)
            .execute(&world.pool)
            .await
            .expect("the rules the other way round");
    }
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r2"),
        )
        .await
        .expect("this tenant waives it");
}

/// Request ids are the caller's: the same id used in another tenant's
/// course first is a new attempt here, bound and counted.
#[sqlx::test(migrations = "../../migrations")]
async fn a_request_id_used_in_another_tenant_is_not_a_retry_here(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    // The other tenant's course, opened first with request id "r1".
    let other = other_tenant(&world).await;
    let elsewhere = World::in_tenant(&world, other).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    elsewhere
        .settle(
            &settler,
            &elsewhere.request(ann, elsewhere.resources[0], Some(elsewhere.code(0)), "r1"),
        )
        .await
        .expect("granted in the other tenant");
    let here = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("a new attempt here");
    assert!(here.bound_now && here.counted && !here.replayed, "{here:?}");
    assert_eq!(world.state().await.records, 1);
    assert_eq!(elsewhere.state().await.records, 1);
}

/// A learner's binding in another course of the same tenant is that
/// course's: here they still need a code.
#[sqlx::test(migrations = "../../migrations")]
async fn a_binding_in_another_course_of_the_tenant_is_not_one_here(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (other, other_resource, other_codes) = world.other_share().await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let mut there = world.request(ann, other_resource, Some(other_codes[0].0), "r1");
    there.share = other;
    world
        .settle(&settler, &there)
        .await
        .expect("bound in the other course");
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], None, "r2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRequired)),
        "{answer:?}"
    );
}
