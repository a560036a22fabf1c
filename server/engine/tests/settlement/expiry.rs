//! Code expiry, where it is decided: an unused code past its date (its own,
//! else its batch's) is never bound, whoever writes the binding
//! (`auth_codes_refuse_expired` on `auth_codes`, through
//! `code_expires_at`). Phase 1 (`validate`, a typed code) refuses it early
//! for a clear answer; inside the settlement's transaction the trigger is
//! what refuses it, also when the date passes while the bind waits. A
//! code bound in time keeps working for good, and only the audited path
//! may insert a code already bound (revoke and replace). Beside it, the
//! binding's own guard (`auth_codes_keep_binding`): a bound code changes
//! hands only on the audited unbind path.

use engine::{
    accounts::AccountId,
    settlement::{SettlementError, Validated, options::SettlementOptions},
};
use sqlx::PgPool;
use uuid::Uuid;

use crate::fixture::{Policy, World, wait_until_blocked};

async fn sql(world: &World, statement: &str, id: Uuid) {
    sqlx::query(statement)
        .bind(id)
        .execute(&world.pool)
        .await
        .expect(statement);
}

/// Every code of the world shares one batch; this dates it.
async fn date_the_batch(world: &World, when: &str) {
    sqlx::query(&format!(
        "UPDATE code_batches SET expires_at = {when} WHERE tenant_id = $1"
    ))
    .bind(world.tenant.0)
    .execute(&world.pool)
    .await
    .expect("dating the batch");
}

/// Binds `code` to `learner` the way any writer would, with a plain
/// `UPDATE` (on the audited unbind path when `unbind_path`); returns the
/// database's refusal, if any, as (SQLSTATE, message).
async fn bind_by_hand(
    world: &World,
    code: Uuid,
    learner: AccountId,
    unbind_path: bool,
) -> Option<(String, String)> {
    let mut tx = world.pool.begin().await.expect("begin");
    if unbind_path {
        sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
            .execute(&mut *tx)
            .await
            .expect("the unbind path");
    }
    let bound = sqlx::query(
        "UPDATE auth_codes SET bound_principal = $1, first_used_at = now() WHERE id = $2",
    )
    .bind(learner.0)
    .bind(code)
    .execute(&mut *tx)
    .await;
    refusal(bound.map(|_| ()), tx).await
}

/// Inserts a code already bound to `learner` (a copy of `like` with a
/// fresh id and digest, dated `expires`), on the unbind path or not.
async fn insert_bound(
    world: &World,
    like: Uuid,
    learner: AccountId,
    expires: &str,
    unbind_path: bool,
) -> Option<(String, String)> {
    let mut tx = world.pool.begin().await.expect("begin");
    if unbind_path {
        sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
            .execute(&mut *tx)
            .await
            .expect("the unbind path");
    }
    let inserted = sqlx::query(&format!(
        "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint,
                                 bound_principal, first_used_at, expires_at)
         SELECT tenant_id, gen_random_uuid(), share_id, batch_id,
                sha256(convert_to(gen_random_uuid()::text, 'UTF8')), key_version, 'COPY',
                $1, now(), {expires}
           FROM auth_codes WHERE id = $2"
    ))
    .bind(learner.0)
    .bind(like)
    .execute(&mut *tx)
    .await;
    refusal(inserted.map(|_| ()), tx).await
}

/// Commits on success; on a database error rolls back and returns it.
async fn refusal(
    outcome: Result<(), sqlx::Error>,
    tx: sqlx::Transaction<'_, sqlx::Postgres>,
) -> Option<(String, String)> {
    match outcome {
        Ok(()) => {
            tx.commit().await.expect("commit");
            None
        }
        Err(error) => {
            tx.rollback().await.expect("rollback");
            let db = error.as_database_error().expect("a database error");
            Some((
                db.code().map(|c| c.into_owned()).unwrap_or_default(),
                db.message().to_owned(),
            ))
        }
    }
}

/// Phase 1 for the world's code `n`, typed by `learner`.
async fn typed(world: &World, learner: AccountId, n: usize) -> Result<Validated, SettlementError> {
    let code = engine::codes::TypedCode::from(world.codes[n].1.clone());
    engine::settlement::validate(&world.pool, &world.keyring, &world.share, learner, &code).await
}

fn expired() -> Option<(String, String)> {
    Some(("AOREF".to_owned(), "code_expired".to_owned()))
}

async fn bound_to(world: &World, code: Uuid) -> Option<Uuid> {
    sqlx::query_scalar("SELECT bound_principal FROM auth_codes WHERE id = $1")
        .bind(code)
        .fetch_one(&world.pool)
        .await
        .expect("the code")
}

/// Both doors answer alike: phase 1 (`validate`, the typed code) and
/// the settlement's transaction (whose trigger decides) refuse a code past
/// its own date, or past its batch's without one of its own, with nothing
/// written; a code's own later date overrides its batch's; an undated code
/// and one dated later are usable and bound.
#[sqlx::test(migrations = "../../migrations")]
async fn the_settlement_refuses_a_code_past_its_own_or_its_batchs_date(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let (ann, bob, cy) = (
        world.learner("ann").await,
        world.learner("bob").await,
        world.learner("cy").await,
    );
    sql(
        &world,
        "UPDATE auth_codes SET expires_at = now() - interval '1 minute' WHERE id = $1",
        world.code(0),
    )
    .await;
    assert!(
        matches!(
            typed(&world, ann, 0).await,
            Err(SettlementError::CodeExpired)
        ),
        "phase 1, past its own date"
    );
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeExpired)),
        "{answer:?}"
    );
    world.assert_untouched("a code past its own date").await;

    // Code 1 has no date of its own: undated, it binds.
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(1)), "r2"),
        )
        .await
        .expect("an undated code binds");

    // The batch ends; code 2 has no date of its own, code 3 a later one.
    date_the_batch(&world, "now() - interval '1 minute'").await;
    sql(
        &world,
        "UPDATE auth_codes SET expires_at = now() + interval '1 day' WHERE id = $1",
        world.code(3),
    )
    .await;
    assert!(
        matches!(
            typed(&world, bob, 2).await,
            Err(SettlementError::CodeExpired)
        ),
        "phase 1, past its batch's date"
    );
    assert_eq!(
        typed(&world, bob, 3)
            .await
            .expect("phase 1, its own later date"),
        Validated::Usable(world.code(3))
    );
    let before = world.state().await;
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(2)), "r3"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeExpired)),
        "{answer:?}"
    );
    assert_eq!(world.state().await, before, "a code past its batch's date");
    let grant = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(3)), "r4"),
        )
        .await
        .expect("its own later date overrides the batch's");
    assert!(grant.bound_now, "{grant:?}");

    // A batch dated later, a code dated earlier: the code's own date.
    date_the_batch(&world, "now() + interval '1 day'").await;
    sql(
        &world,
        "UPDATE auth_codes SET expires_at = now() - interval '1 minute' WHERE id = $1",
        world.code(4),
    )
    .await;
    assert!(
        matches!(
            typed(&world, cy, 4).await,
            Err(SettlementError::CodeExpired)
        ),
        "phase 1, its own earlier date"
    );
    let answer = world
        .settle(
            &settler,
            &world.request(cy, world.resources[0], Some(world.code(4)), "r5"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeExpired)),
        "{answer:?}"
    );
    let state = world.state().await;
    assert_eq!(
        state.bindings.len(),
        2,
        "Ann's and Bob's only: {:?}",
        state.bindings
    );
    assert_eq!(bound_to(&world, world.code(4)).await, None);
}

/// A code the settlement read in date, whose date passes while its bind
/// waits on the row: the trigger refuses the bind, and the whole
/// settlement rolls back.
#[sqlx::test(migrations = "../../migrations")]
async fn a_code_that_expires_while_its_bind_waits_is_refused_by_the_trigger(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler_on(
        crate::fixture::dead_redis().await,
        SettlementOptions {
            failure_policy: engine::settlement::options::FailurePolicy::DbOnly,
            ..SettlementOptions::default()
        },
    );
    let mut admin = world.pool.begin().await.expect("begin");
    sqlx::query("UPDATE auth_codes SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(world.code(0))
        .execute(&mut *admin)
        .await
        .expect("the date, uncommitted");
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let settling = {
        let (settler, request) = (settler.clone(), request.clone());
        tokio::spawn(async move { settler.settle(&request).await })
    };
    wait_until_blocked(&world.pool).await;
    admin.commit().await.expect("the date commits");
    let answer = settling.await.expect("task");
    assert!(
        matches!(answer, Err(SettlementError::CodeExpired)),
        "{answer:?}"
    );
    let (_, binds, _) = probe.counts();
    assert_eq!(binds, 1, "the transaction tried the bind");
    world.assert_untouched("the bind the trigger refused").await;
}

/// The rule holds for any writer, not only the settlement: a plain
/// `UPDATE` cannot bind a code past its date (its own or its batch's),
/// not even on the audited unbind path; an undated code, a code dated
/// later, and a code whose own later date overrides its batch's bind.
#[sqlx::test(migrations = "../../migrations")]
async fn no_writer_binds_a_code_past_its_date(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let learners = [
        world.learner("l0").await,
        world.learner("l1").await,
        world.learner("l2").await,
        world.learner("l3").await,
        world.learner("l4").await,
    ];
    let own = |n: usize, when: &'static str| {
        let code = world.code(n);
        let world = &world;
        async move {
            sqlx::query(&format!(
                "UPDATE auth_codes SET expires_at = {when} WHERE id = $1"
            ))
            .bind(code)
            .execute(&world.pool)
            .await
            .expect("dating a code");
        }
    };
    own(0, "now() - interval '1 minute'").await;
    own(1, "now() + interval '1 minute'").await;
    assert_eq!(
        bind_by_hand(&world, world.code(0), learners[0], false).await,
        expired(),
        "past its own date"
    );
    assert_eq!(
        bind_by_hand(&world, world.code(0), learners[0], true).await,
        expired(),
        "the unbind path binds nothing new"
    );
    assert_eq!(bound_to(&world, world.code(0)).await, None);
    assert_eq!(
        bind_by_hand(&world, world.code(1), learners[1], false).await,
        None,
        "dated later"
    );
    assert_eq!(
        bind_by_hand(&world, world.code(2), learners[2], false).await,
        None,
        "undated"
    );

    date_the_batch(&world, "now() - interval '1 minute'").await;
    own(4, "now() + interval '1 minute'").await;
    assert_eq!(
        bind_by_hand(&world, world.code(3), learners[3], false).await,
        expired(),
        "past its batch's date"
    );
    assert_eq!(bound_to(&world, world.code(3)).await, None);
    assert_eq!(
        bind_by_hand(&world, world.code(4), learners[4], false).await,
        None,
        "its own later date overrides the batch's"
    );
    assert_eq!(bound_to(&world, world.code(4)).await, Some(learners[4].0));
}

/// Only the audited path inserts a code already bound (revoke and
/// replace carries a binding made in time): anywhere else, an inserted
/// bound code past its date is refused, and one in date is not.
#[sqlx::test(migrations = "../../migrations")]
async fn only_the_audited_path_inserts_a_bound_code_past_its_date(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob, cy) = (
        world.learner("ann").await,
        world.learner("bob").await,
        world.learner("cy").await,
    );
    assert_eq!(
        insert_bound(
            &world,
            world.code(0),
            ann,
            "now() - interval '1 minute'",
            false
        )
        .await,
        expired()
    );
    assert_eq!(
        insert_bound(
            &world,
            world.code(0),
            ann,
            "now() + interval '1 minute'",
            false
        )
        .await,
        None,
        "in date"
    );
    assert_eq!(
        insert_bound(&world, world.code(0), bob, "NULL", false).await,
        None,
        "undated"
    );
    assert_eq!(
        insert_bound(
            &world,
            world.code(0),
            cy,
            "now() - interval '1 minute'",
            true
        )
        .await,
        None,
        "the audited path carries a binding made in time"
    );

    // And through the engine: a learner bound in time, whose code's date
    // has passed since, gets a replacement already bound.
    let dan = world.learner("dan").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    world
        .settle(
            &settler,
            &world.request(dan, world.resources[0], Some(world.code(1)), "r1"),
        )
        .await
        .expect("bound in time");
    sql(
        &world,
        "UPDATE auth_codes SET expires_at = now() - interval '1 minute' WHERE id = $1",
        world.code(1),
    )
    .await;
    let reissued = engine::leaks::revoke_and_replace(
        &world.pool,
        &world.keyring,
        world.tenant,
        world.admin,
        world.code(1),
        "its text leaked",
    )
    .await
    .expect("replaced");
    let new = reissued.id;
    assert_eq!(reissued.principal, dan);
    assert_eq!(bound_to(&world, new).await, Some(dan.0));
    assert_eq!(bound_to(&world, world.code(1)).await, None);
}

/// A code bound in time serves its learner after its date: expiry is
/// about codes lying unused, never about taking access away.
#[sqlx::test(migrations = "../../migrations")]
async fn a_code_bound_in_time_serves_its_learner_past_its_date(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound in time");
    sql(
        &world,
        "UPDATE auth_codes SET expires_at = now() - interval '1 minute' WHERE id = $1",
        world.code(0),
    )
    .await;
    date_the_batch(&world, "now() - interval '1 minute'").await;
    let grant = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r2"),
        )
        .await
        .expect("a returning learner past the date");
    assert!(grant.counted && !grant.bound_now, "{grant:?}");
    assert_eq!(world.state().await.bindings, vec![(world.code(0), ann.0)]);
}

/// A bound code changes hands only on the audited unbind path: a plain
/// `UPDATE` that moves or clears it is refused, one that leaves it as it
/// is (or binds an unbound code) is not.
#[sqlx::test(migrations = "../../migrations")]
async fn a_bound_code_changes_hands_only_on_the_audited_path(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    assert_eq!(
        bind_by_hand(&world, world.code(0), ann, false).await,
        None,
        "binding an unbound code is the settlement's, not the guard's"
    );
    let moved = bind_by_hand(&world, world.code(0), bob, false).await;
    assert_eq!(
        moved.as_ref().map(|(code, _)| code.as_str()),
        Some("23000"),
        "moving a binding by hand: {moved:?}"
    );
    let cleared = sqlx::query(
        "UPDATE auth_codes SET bound_principal = NULL, first_used_at = NULL WHERE id = $1",
    )
    .bind(world.code(0))
    .execute(&world.pool)
    .await
    .expect_err("clearing a binding by hand");
    assert_eq!(
        cleared
            .as_database_error()
            .and_then(|e| e.code())
            .as_deref(),
        Some("23000"),
        "{cleared}"
    );
    assert_eq!(bound_to(&world, world.code(0)).await, Some(ann.0));
    // Writing the same learner again changes no hands.
    sqlx::query("UPDATE auth_codes SET bound_principal = bound_principal WHERE id = $1")
        .bind(world.code(0))
        .execute(&world.pool)
        .await
        .expect("an update that leaves the binding as it is");
    // The audited path moves it.
    assert_eq!(bind_by_hand(&world, world.code(0), bob, true).await, None);
    assert_eq!(bound_to(&world, world.code(0)).await, Some(bob.0));
}
