//! Who may bind and open: a code binds only to an account whose address
//! is verified (unless the tenant waives it), and a learner the tenant
//! suspended opens nothing of the tenant's, first access or returning.
//! A binding writes the learner's receipt to the mail outbox, in the
//! language of their last sign-in.

use engine::{accounts::AccountId, settlement::SettlementError, suspension};
use sqlx::PgPool;

use crate::fixture::{Policy, State, World, unverified_account};

async fn verify(world: &World, learner: AccountId) {
    sqlx::query("UPDATE accounts SET email_verified_at = now() WHERE id = $1")
        .bind(learner.0)
        .execute(&world.pool)
        .await
        .expect("verify");
}

#[sqlx::test(migrations = "../../migrations")]
async fn an_unverified_account_binds_nothing_and_keeps_its_pending_code_for_later(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = unverified_account(&world.pool, "ann").await;
    let (settler, _) = world.settler(Default::default());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let refused = world.settle(&settler, &request).await;
    assert!(
        matches!(refused, Err(SettlementError::EmailNotVerified)),
        "{refused:?}"
    );
    world
        .assert_untouched("an unverified account binds nothing")
        .await;

    // Verified, the same pending code binds (a new attempt).
    verify(&world, ann).await;
    let grant = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r2"),
        )
        .await
        .expect("bound once verified");
    assert!(grant.bound_now);
    assert_eq!(
        world.state().await,
        State {
            bindings: vec![(world.code(0), ann.0)],
            access_counts: vec![(world.code(0), 1)],
            records: 1,
            quota_used: 1,
            events: State::events(1, 1),
        }
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_tenant_that_waives_verification_binds_an_unverified_account(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    sqlx::query("UPDATE tenants SET require_verified_email = false WHERE id = $1")
        .bind(world.tenant.0)
        .execute(&world.pool)
        .await
        .expect("waive");
    let ann = unverified_account(&world.pool, "ann").await;
    let (settler, _) = world.settler(Default::default());
    let grant = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");
    assert!(grant.bound_now);
}

/// Verification gates binding only: a learner who holds a code (bound
/// before the rule, or whose address was later un-verified) keeps coming
/// back.
#[sqlx::test(migrations = "../../migrations")]
async fn a_bound_learner_keeps_access_whatever_the_verification(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(Default::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");
    sqlx::query("UPDATE accounts SET email_verified_at = NULL WHERE id = $1")
        .bind(ann.0)
        .execute(&world.pool)
        .await
        .expect("unverify");
    let again = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r2"),
        )
        .await
        .expect("returning");
    assert!(again.counted && !again.bound_now);
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_suspended_learner_opens_nothing_of_the_tenant_until_re_enabled(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let (settler, _) = world.settler(Default::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("ann bound");
    let before = world.state().await;
    // Bob holds no code of the tenant: not its learner, nothing to suspend.
    let stranger =
        suspension::set_suspended(&world.pool, world.tenant, world.admin, bob, true).await;
    assert!(
        matches!(stranger, Err(suspension::SuspensionError::NotFound)),
        "{stranger:?}"
    );
    suspension::set_suspended(&world.pool, world.tenant, world.admin, ann, true)
        .await
        .expect("suspended");
    // Returning, even within the live grant of the first access: refused.
    for (resource, id) in [(world.resources[0], "r2"), (world.resources[1], "r3")] {
        let refused = world
            .settle(&settler, &world.request(ann, resource, None, id))
            .await;
        assert!(
            matches!(refused, Err(SettlementError::LearnerSuspended)),
            "{refused:?}"
        );
    }
    assert_eq!(world.state().await, before, "nothing counted");
    let audit: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'learner.%' ORDER BY created_at",
    )
    .bind(world.tenant.0)
    .fetch_all(&world.pool)
    .await
    .expect("audit");
    assert_eq!(audit, vec!["learner.suspended"]);

    suspension::set_suspended(&world.pool, world.tenant, world.admin, ann, false)
        .await
        .expect("re-enabled");
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r4"),
        )
        .await
        .expect("back in");
}

#[sqlx::test(migrations = "../../migrations")]
async fn the_receipt_names_the_course_in_the_learners_language(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    sqlx::query("UPDATE accounts SET lang = 'zh-CN' WHERE id = $1")
        .bind(ann.0)
        .execute(&world.pool)
        .await
        .expect("lang");
    let (settler, _) = world.settler(Default::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");
    // Two more accesses: no more receipts.
    for (resource, id) in [(world.resources[1], "r2"), (world.resources[2], "r3")] {
        world
            .settle(&settler, &world.request(ann, resource, None, id))
            .await
            .expect("returning");
    }
    let receipts: Vec<(String, String, serde_json::Value, Option<uuid::Uuid>)> = sqlx::query_as(
        "SELECT m.to_address, m.lang, m.params, m.account_id FROM mail_outbox m
         WHERE m.tenant_id = $1 AND m.template = 'code_bound'",
    )
    .bind(world.tenant.0)
    .fetch_all(&world.pool)
    .await
    .expect("receipts");
    assert_eq!(receipts.len(), 1, "one receipt per binding");
    let (to, lang, params, account) = &receipts[0];
    assert!(to.starts_with("ann-"), "{to}");
    assert_eq!(lang, "zh-CN");
    assert_eq!(*account, Some(ann.0));
    assert_eq!(params["course"], "Course course");
    assert_eq!(params["course_slug"], "course");
    assert_eq!(params["tenant"], "School");
}
