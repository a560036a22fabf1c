//! Codes addressed to one person, where it is decided: an addressed code
//! is first bound only to the account whose *verified* address it names
//! (`auth_codes_refuse_other_addressee` on `auth_codes`, whoever writes
//! the binding). Phase 1 (`validate`) refuses another account early, with
//! an answer that names neither the address nor anyone, and counts the
//! try towards the leak signal; inside the settlement's transaction the
//! trigger is what refuses, with nothing written.

use engine::{
    accounts::AccountId,
    settlement::{SettlementError, Validated, options::SettlementOptions},
};
use sqlx::PgPool;
use uuid::Uuid;

use crate::fixture::{Policy, State, World, unverified_account};

async fn email_of(world: &World, account: AccountId) -> String {
    sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
        .bind(account.0)
        .fetch_one(&world.pool)
        .await
        .expect("the address")
}

/// Addresses the world's code `n` to `address`.
async fn address(world: &World, n: usize, address: &str) {
    sqlx::query("UPDATE auth_codes SET addressed_to = $1 WHERE id = $2")
        .bind(address)
        .bind(world.code(n))
        .execute(&world.pool)
        .await
        .expect("addressing a code");
}

async fn typed(world: &World, learner: AccountId, n: usize) -> Result<Validated, SettlementError> {
    let code = engine::codes::TypedCode::from(world.codes[n].1.clone());
    engine::settlement::validate(&world.pool, &world.keyring, &world.share, learner, &code).await
}

async fn foreign_attempts(world: &World, n: usize) -> i32 {
    sqlx::query_scalar("SELECT foreign_attempts FROM auth_codes WHERE id = $1")
        .bind(world.code(n))
        .fetch_one(&world.pool)
        .await
        .expect("the code")
}

/// Binds by hand, as any writer could; the database's refusal, if any.
async fn bind_by_hand(world: &World, code: Uuid, learner: AccountId) -> Option<String> {
    let bound = sqlx::query(
        "UPDATE auth_codes SET bound_principal = $1, first_used_at = now() WHERE id = $2",
    )
    .bind(learner.0)
    .bind(code)
    .execute(&world.pool)
    .await;
    bound.err().map(|e| {
        let db = e.as_database_error().expect("a database error");
        format!(
            "{} {}",
            db.code().map(|c| c.into_owned()).unwrap_or_default(),
            db.message()
        )
    })
}

/// The addressee binds; another verified account is refused at both
/// doors with nothing written, and each try counts towards the leak
/// signal; the refusal is the same whether or not the code is unused.
#[sqlx::test(migrations = "../../migrations")]
async fn an_addressed_code_binds_only_to_its_addressee(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    address(&world, 0, &email_of(&world, ann).await).await;

    // Bob typed Ann's code: refused at phase 1, the leak signal counts it.
    let refused = typed(&world, bob, 0).await;
    assert!(
        matches!(refused, Err(SettlementError::CodeAddressedElsewhere)),
        "{refused:?}"
    );
    assert_eq!(foreign_attempts(&world, 0).await, 1);
    // The answer names neither the address nor its holder.
    let said = SettlementError::CodeAddressedElsewhere.to_string();
    assert!(!said.contains('@') && !said.contains("ann"), "{said}");

    // Past phase 1 (a pending code kept from before it was addressed, or
    // any other way in), the transaction refuses and writes nothing.
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(0)), "b1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeAddressedElsewhere)),
        "{answer:?}"
    );
    world.assert_untouched("another account's try").await;

    // Ann binds it, at phase 1 and in the transaction.
    assert_eq!(
        typed(&world, ann, 0).await.expect("the addressee"),
        Validated::Usable(world.code(0))
    );
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "a1"),
        )
        .await
        .expect("the addressee binds");
    let state = world.state().await;
    assert_eq!(state.bindings, vec![(world.code(0), ann.0)]);
    assert_eq!(state.events, State::events(1, 1));

    // Bound now: Bob is told it is taken, as for any bound code.
    assert!(matches!(
        typed(&world, bob, 0).await,
        Err(SettlementError::CodeBound)
    ));
    assert_eq!(foreign_attempts(&world, 0).await, 2);
    // An unaddressed code of the same batch binds to Bob as ever.
    world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(1)), "b2"),
        )
        .await
        .expect("an unaddressed code binds to anyone");
}

/// The right address, not verified yet: told to verify (the pending code
/// stays, as for any code), even where the tenant lets unverified
/// accounts bind; once verified, it binds.
#[sqlx::test(migrations = "../../migrations")]
async fn an_unverified_addressee_is_told_to_verify(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    sqlx::query("UPDATE tenants SET require_verified_email = false WHERE id = $1")
        .bind(world.tenant.0)
        .execute(&world.pool)
        .await
        .expect("waiving verification");
    let (settler, _) = world.settler(SettlementOptions::default());
    let cy = unverified_account(&world.pool, "cy").await;
    address(&world, 0, &email_of(&world, cy).await).await;

    assert_eq!(
        typed(&world, cy, 0)
            .await
            .expect("phase 1 keeps it pending"),
        Validated::Usable(world.code(0))
    );
    let answer = world
        .settle(
            &settler,
            &world.request(cy, world.resources[0], Some(world.code(0)), "c1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::EmailNotVerified)),
        "{answer:?}"
    );
    world.assert_untouched("an unverified addressee").await;
    assert_eq!(foreign_attempts(&world, 0).await, 0, "not someone else");

    sqlx::query("UPDATE accounts SET email_verified_at = now() WHERE id = $1")
        .bind(cy.0)
        .execute(&world.pool)
        .await
        .expect("verifying");
    world
        .settle(
            &settler,
            &world.request(cy, world.resources[0], Some(world.code(0)), "c2"),
        )
        .await
        .expect("verified, the addressee binds");
}

/// Inserts a copy of code `n`, addressed to `address` and already bound
/// to `learner` (on the audited unbind path when `unbind_path`, as revoke
/// and replace inserts); the database's refusal, if any.
async fn insert_bound(
    world: &World,
    n: usize,
    address: &str,
    learner: AccountId,
    unbind_path: bool,
) -> Option<String> {
    let mut tx = world.pool.begin().await.expect("begin");
    if unbind_path {
        sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
            .execute(&mut *tx)
            .await
            .expect("the unbind path");
    }
    let inserted = sqlx::query(
        "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint,
                                 bound_principal, first_used_at, addressed_to)
         SELECT tenant_id, gen_random_uuid(), share_id, batch_id,
                sha256(convert_to(gen_random_uuid()::text, 'UTF8')), key_version, 'COPY',
                $1, now(), $2
           FROM auth_codes WHERE id = $3",
    )
    .bind(learner.0)
    .bind(address)
    .bind(world.code(n))
    .execute(&mut *tx)
    .await;
    match inserted {
        Ok(_) => {
            tx.commit().await.expect("commit");
            None
        }
        Err(e) => Some(
            e.as_database_error()
                .map(|db| db.message().to_owned())
                .unwrap_or_default(),
        ),
    }
}

/// The rule holds for any writer, not only the settlement: a plain
/// `UPDATE` binding another account, or an unverified addressee, is
/// refused by the database, and so is a code inserted already bound to
/// another account, even on the audited unbind path; an address is
/// stored case-folded only.
#[sqlx::test(migrations = "../../migrations")]
async fn the_database_refuses_any_other_first_binding(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let dee = unverified_account(&world.pool, "dee").await;
    address(&world, 0, &email_of(&world, ann).await).await;
    address(&world, 1, &email_of(&world, dee).await).await;

    assert_eq!(
        bind_by_hand(&world, world.code(0), bob).await.as_deref(),
        Some("AOREF code_addressed_elsewhere")
    );
    assert_eq!(
        bind_by_hand(&world, world.code(1), dee).await.as_deref(),
        Some("AOREF email_not_verified")
    );
    assert_eq!(bind_by_hand(&world, world.code(0), ann).await, None);
    assert_eq!(
        world.state().await.bindings,
        vec![(world.code(0), ann.0)],
        "only the addressee's binding stands"
    );

    // Inserted already bound: the addressee's, on any path; nobody
    // else's, on none.
    let ann_email = email_of(&world, ann).await;
    for unbind_path in [false, true] {
        assert_eq!(
            insert_bound(&world, 3, &ann_email, bob, unbind_path)
                .await
                .as_deref(),
            Some("code_addressed_elsewhere"),
            "unbind path: {unbind_path}"
        );
    }
    assert_eq!(
        insert_bound(&world, 4, &email_of(&world, dee).await, dee, true)
            .await
            .as_deref(),
        Some("email_not_verified")
    );
    // Ann holds code 0 of this share already; Bob, verified, holds none:
    // a copy addressed to Bob and bound to him goes in.
    let bob_email = email_of(&world, bob).await;
    assert_eq!(insert_bound(&world, 5, &bob_email, bob, true).await, None);
    assert_eq!(world.state().await.bindings.len(), 2);

    // Clearing the address and binding in one statement is refused: the
    // address checked is the one the code had.
    let cleared = sqlx::query(
        "UPDATE auth_codes SET bound_principal = $1, first_used_at = now(), addressed_to = NULL
         WHERE id = $2",
    )
    .bind(bob.0)
    .bind(world.code(1))
    .execute(&world.pool)
    .await;
    assert!(
        cleared
            .as_ref()
            .is_err_and(|e| e.to_string().contains("code_addressed_elsewhere")),
        "{cleared:?}"
    );

    let shouting =
        sqlx::query("UPDATE auth_codes SET addressed_to = 'Ann@Example.com' WHERE id = $1")
            .bind(world.code(2))
            .execute(&world.pool)
            .await;
    assert!(shouting.is_err(), "an address is stored case-folded");
}

/// A lost unused addressed code's replacement is addressed as it was: it
/// stays its addressee's.
#[sqlx::test(migrations = "../../migrations")]
async fn a_replacement_keeps_the_address(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let ann_email = email_of(&world, ann).await;
    address(&world, 0, &ann_email).await;
    let replacement = engine::code_actions::replace_code(
        &world.pool,
        &world.keyring,
        world.tenant,
        world.admin,
        world.code(0),
    )
    .await
    .expect("replaced");
    let addressed: Option<String> =
        sqlx::query_scalar("SELECT addressed_to FROM auth_codes WHERE id = $1")
            .bind(replacement.id)
            .fetch_one(&world.pool)
            .await
            .expect("the replacement");
    assert_eq!(addressed.as_deref(), Some(ann_email.as_str()));
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(replacement.id), "b1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeAddressedElsewhere)),
        "{answer:?}"
    );
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(replacement.id), "a1"),
        )
        .await
        .expect("the addressee binds the replacement");
}
