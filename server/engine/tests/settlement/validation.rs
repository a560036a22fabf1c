//! Phase 1: what a typed code is, for this learner in this share. It binds
//! nothing, whatever it answers.

use engine::{
    codes::PlainCode,
    settlement::{self, SettlementError, Validated, options::SettlementOptions},
    shares::{self, ShareStatus, Unavailability},
};
use sqlx::PgPool;

use crate::fixture::{Policy, State, World};

async fn validate(
    world: &World,
    share: &engine::shares::Share,
    learner: engine::accounts::AccountId,
    code: &PlainCode,
) -> Result<Validated, SettlementError> {
    let typed = engine::codes::TypedCode::from(code.clone());
    settlement::validate(&world.pool, &world.keyring, share, learner, &typed).await
}

async fn foreign_attempts(world: &World, code: uuid::Uuid) -> i32 {
    sqlx::query_scalar("SELECT foreign_attempts FROM auth_codes WHERE id = $1")
        .bind(code)
        .fetch_one(&world.pool)
        .await
        .expect("foreign attempts")
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_fresh_code_is_usable_and_nothing_is_bound(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (id, code) = &world.codes[0];
    // Typed as a learner would: lower case, with spaces.
    let typed = PlainCode::parse(&code.display().to_lowercase().replace('-', " ")).expect("typed");
    let answer = validate(&world, &world.share, ann, &typed).await;
    assert_eq!(answer.expect("usable"), Validated::Usable(*id));
    world.assert_untouched("validating binds nothing").await;
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_code_of_another_share_is_refused_even_in_the_same_tenant(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (other, _, other_codes) = world.other_share().await;
    // The other share's code, typed on this share's page: same tenant,
    // different share.
    let answer = validate(&world, &world.share, ann, &other_codes[0].1).await;
    assert!(
        matches!(answer, Err(SettlementError::WrongShare)),
        "{answer:?}"
    );
    // And this share's code on the other share's page.
    let answer = validate(&world, &other, ann, &world.codes[0].1).await;
    assert!(
        matches!(answer, Err(SettlementError::WrongShare)),
        "{answer:?}"
    );
    // On a share of another tenant (even one with the same share id) the
    // code is looked up in that tenant only, and is not there: "not
    // valid", which tells nobody that some other tenant has it.
    let mut elsewhere = world.share.clone();
    elsewhere.tenant_id = engine::tenants::TenantId(uuid::Uuid::now_v7());
    let answer = validate(&world, &elsewhere, ann, &world.codes[0].1).await;
    assert!(
        matches!(answer, Err(SettlementError::InvalidCode)),
        "{answer:?}"
    );
    world.assert_untouched("refusals bind nothing").await;
}

#[sqlx::test(migrations = "../../migrations")]
async fn an_unknown_code_is_invalid(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let answer = validate(&world, &world.share, ann, &PlainCode::generate()).await;
    assert!(
        matches!(answer, Err(SettlementError::InvalidCode)),
        "{answer:?}"
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_revoked_code_is_refused(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    engine::code_actions::revoke_code(&world.pool, world.tenant, world.admin, world.code(0))
        .await
        .expect("revoke");
    let answer = validate(&world, &world.share, ann, &world.codes[0].1).await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRevoked)),
        "{answer:?}"
    );
    // Its neighbour is still fine.
    let answer = validate(&world, &world.share, ann, &world.codes[1].1).await;
    assert_eq!(answer.expect("usable"), Validated::Usable(world.code(1)));
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_bound_code_is_the_holders_and_anyone_else_trying_it_is_counted(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let (settler, _) = world.settler(SettlementOptions::default());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    world.settle(&settler, &request).await.expect("ann binds");

    let code = &world.codes[0].1;
    let answer = validate(&world, &world.share, ann, code).await;
    assert_eq!(
        answer.expect("hers"),
        Validated::AlreadyYours(world.code(0))
    );
    assert_eq!(
        foreign_attempts(&world, world.code(0)).await,
        0,
        "the holder is no leak"
    );

    for attempt in 1..=2 {
        let answer = validate(&world, &world.share, bob, code).await;
        assert!(
            matches!(answer, Err(SettlementError::CodeBound)),
            "{answer:?}"
        );
        assert_eq!(foreign_attempts(&world, world.code(0)).await, attempt);
    }
    let state = world.state().await;
    assert_eq!(state.bindings, vec![(world.code(0), ann.0)], "still ann's");
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_learner_who_holds_a_code_of_the_share_cannot_take_a_second(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    world.settle(&settler, &request).await.expect("ann binds");
    let answer = validate(&world, &world.share, ann, &world.codes[1].1).await;
    assert!(
        matches!(answer, Err(SettlementError::AlreadyHasAccess)),
        "{answer:?}"
    );
    // Another learner may still use that second code.
    let bob = world.learner("bob").await;
    let answer = validate(&world, &world.share, bob, &world.codes[1].1).await;
    assert_eq!(answer.expect("usable"), Validated::Usable(world.code(1)));
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_share_that_is_not_open_refuses_every_code(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    shares::set_status(
        &world.pool,
        world.tenant,
        world.admin,
        world.share.id,
        ShareStatus::Paused,
    )
    .await
    .expect("pause");
    let paused = shares::get_in(&world.pool, world.tenant, world.share.id)
        .await
        .expect("read")
        .expect("share");
    let answer = validate(&world, &paused, ann, &world.codes[0].1).await;
    assert!(
        matches!(
            answer,
            Err(SettlementError::ShareUnavailable(Unavailability::Paused))
        ),
        "{answer:?}"
    );
    assert_eq!(world.state().await, State::default());
}

#[sqlx::test(migrations = "../../migrations")]
async fn binding_and_holdings_read_what_the_settlement_wrote(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    assert_eq!(
        settlement::binding_of(&world.pool, &world.share, ann)
            .await
            .expect("read"),
        None
    );
    assert!(
        settlement::holdings_of(&world.pool, ann)
            .await
            .expect("read")
            .is_empty()
    );
    let (settler, _) = world.settler(SettlementOptions::default());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    world.settle(&settler, &request).await.expect("ann binds");

    let binding = settlement::binding_of(&world.pool, &world.share, ann)
        .await
        .expect("read")
        .expect("bound");
    assert_eq!(binding.code_id, world.code(0));
    assert_eq!(binding.hint, world.codes[0].1.hint());
    assert_eq!(binding.access_count, 1);
    assert!(!binding.revoked);
    let holdings = settlement::holdings_of(&world.pool, ann)
        .await
        .expect("read");
    assert_eq!(holdings.len(), 1, "{holdings:?}");
    assert_eq!(holdings[0].slug, world.share.slug);
    assert_eq!(holdings[0].title, world.share.title);
    assert_eq!(holdings[0].tenant_name, "School");
    assert_eq!(holdings[0].hint, world.codes[0].1.hint());
    assert_eq!(holdings[0].status, ShareStatus::Active);
    assert!(!holdings[0].revoked);
    // Nobody else's.
    assert_eq!(
        settlement::binding_of(&world.pool, &world.share, bob)
            .await
            .expect("read"),
        None
    );
    assert!(
        settlement::holdings_of(&world.pool, bob)
            .await
            .expect("read")
            .is_empty()
    );
}
