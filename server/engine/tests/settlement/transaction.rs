//! The settlement transaction: each outcome with the exact state it leaves,
//! the all-or-nothing fault points, the start-overs on a unique violation
//! (made deterministic by holding the concurrent attempt's row in the
//! test's own transaction) and the bound on its time.

use std::time::Duration;

use engine::{
    settlement::{
        Counting, SettlementError,
        options::{FaultPoint, SettlementOptions},
    },
    shares::{self, ShareStatus, Unavailability},
};
use sqlx::PgPool;
use time::OffsetDateTime;

use crate::fixture::{Policy, State, World, wait_until_blocked};

fn options() -> SettlementOptions {
    SettlementOptions::default()
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_first_access_binds_debits_records_and_announces_once(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler(options());
    let before = OffsetDateTime::now_utc();
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let grant = world.settle(&settler, &request).await.expect("granted");
    assert_eq!(grant.code_id, world.code(0));
    assert!(
        grant.bound_now && grant.counted && !grant.replayed,
        "{grant:?}"
    );
    let ttl = time::Duration::try_from(options().grant_ttl).expect("ttl");
    assert!(
        grant.expires_at >= before + ttl && grant.expires_at <= OffsetDateTime::now_utc() + ttl,
        "the grant lasts grant_ttl from now: {grant:?}"
    );
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
    let (transactions, binds, start_overs) = probe.counts();
    assert_eq!((transactions, binds, start_overs), (1, 1, 0));
    assert_eq!(
        probe.reservations(),
        1,
        "one reservation for a first access"
    );
    // The reservation was released, not left to its TTL: neither of its
    // keys is there (asked by name, so a Redis Cluster answers too).
    let keys = world.redis.keys();
    let (tenant, share) = (world.share.tenant_id.0, world.share.id.0);
    let held: i64 = redis::cmd("EXISTS")
        .arg(keys.reservation_code(tenant, share, world.code(0)))
        .arg(keys.reservation_user(tenant, share, request.principal.0))
        .query_async(&mut world.redis.conn())
        .await
        .expect("EXISTS");
    assert_eq!(held, 0, "the reservation was released");
    // And no reservation key of any name (every primary, on a cluster).
    if let Some(left) = world
        .redis
        .scan(&keys.reservations_pattern())
        .await
        .expect("SCAN")
    {
        assert!(left.is_empty(), "released: {left:?}");
    }
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_returning_learner_skips_redis_and_reuses_a_live_grant(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler(options());
    let first = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("first");

    // The same resource again, a new attempt, no pending code: the live
    // grant is reused, nothing is counted, Redis is not asked.
    let again = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], None, "r2"),
        )
        .await
        .expect("again");
    assert_eq!(again.code_id, world.code(0));
    assert!(
        !again.bound_now && !again.counted && !again.replayed,
        "{again:?}"
    );
    assert_eq!(again.expires_at, first.expires_at, "the same grant");
    assert_eq!(
        probe.reservations(),
        1,
        "the returning learner skipped Redis"
    );

    // Another resource: a new access, counted, not a new binding.
    let other = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r3"),
        )
        .await
        .expect("other resource");
    assert!(
        other.counted && !other.bound_now && !other.replayed,
        "{other:?}"
    );
    assert_eq!(probe.reservations(), 1);
    assert_eq!(
        world.state().await,
        State {
            bindings: vec![(world.code(0), ann.0)],
            access_counts: vec![(world.code(0), 2)],
            records: 2,
            quota_used: 2,
            events: State::events(1, 2),
        }
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_returning_learner_is_served_while_redis_is_down(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(options());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("first");
    // Fail-closed, and Redis cannot answer: the returning learner never
    // needed it.
    let (without_redis, _) = world.settler_on(crate::fixture::dead_redis().await, options());
    let grant = without_redis
        .settle(&world.request(ann, world.resources[1], None, "r2"))
        .await
        .expect("served without Redis");
    assert!(grant.counted && !grant.bound_now, "{grant:?}");
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_retry_is_answered_from_the_first_attempt_while_it_holds(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let bob = world.learner("bob").await;
    let (settler, probe) = world.settler(SettlementOptions {
        grant_ttl: Duration::from_secs(5),
        ..options()
    });
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let first = world.settle(&settler, &request).await.expect("first");

    let retry = world.settle(&settler, &request).await.expect("retry");
    assert_eq!(retry.code_id, first.code_id);
    assert_eq!(retry.expires_at, first.expires_at);
    assert!(
        retry.replayed && retry.bound_now && retry.counted,
        "the first attempt's answer: {retry:?}"
    );
    // Another learner may use the same request id: it is theirs.
    let bobs = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(1)), "r1"),
        )
        .await
        .expect("bob's own attempt");
    assert!(bobs.bound_now && !bobs.replayed, "{bobs:?}");

    // The same id for another resource is a misuse, not a replay.
    let reused = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r1"),
        )
        .await;
    assert!(
        matches!(reused, Err(SettlementError::RequestIdReused)),
        "{reused:?}"
    );
    let (_, binds, _) = probe.counts();
    assert_eq!(binds, 2, "retries never bind again");

    // Once the grant has ended, the old id answers nothing.
    tokio::time::sleep(Duration::from_millis(5_100)).await;
    let late = world.settle(&settler, &request).await;
    assert!(
        matches!(late, Err(SettlementError::RequestIdReused)),
        "{late:?}"
    );
    let state = world.state().await;
    assert_eq!(state.records, 2, "one record per counted access");
    assert_eq!(
        state.access_counts,
        vec![(world.code(0), 1), (world.code(1), 1)]
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_retry_after_the_code_was_revoked_or_unbound_is_refused(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let (settler, _) = world.settler(options());
    let anns = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let bobs = world.request(bob, world.resources[0], Some(world.code(1)), "r1");
    world.settle(&settler, &anns).await.expect("ann");
    world.settle(&settler, &bobs).await.expect("bob");

    engine::code_actions::revoke_code(&world.pool, world.tenant, world.admin, world.code(0))
        .await
        .expect("revoke");
    let answer = world.settle(&settler, &anns).await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRevoked)),
        "{answer:?}"
    );

    engine::code_actions::unbind_code(
        &world.pool,
        world.tenant,
        world.admin,
        world.code(1),
        "moved to another account",
        false,
    )
    .await
    .expect("unbind");
    // Bob's retry, with the code he entered, which is no longer his (it is
    // unused again): the first answer no longer holds.
    let retry = world.settle(&settler, &bobs).await;
    assert!(
        matches!(retry, Err(SettlementError::CodeRequired)),
        "{retry:?}"
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn without_a_pending_code_nothing_is_asked_or_written(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler(options());
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], None, "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRequired)),
        "{answer:?}"
    );
    // One call of the settlement, which finds no binding and answers at
    // once: no bind attempted, no reservation, nothing written.
    assert_eq!(probe.counts(), (1, 0, 0));
    assert_eq!(probe.reservations(), 0);
    world.assert_untouched("no code, no settlement").await;
}

#[sqlx::test(migrations = "../../migrations")]
async fn the_learner_limit_stops_the_next_access_and_keeps_the_binding(pool: PgPool) {
    let world = World::new(
        pool,
        Policy {
            per_learner_limit: Some(2),
            ..Policy::default()
        },
    )
    .await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(options());
    for (n, resource) in world.resources[..2].iter().enumerate() {
        let pending = (n == 0).then(|| world.code(0));
        world
            .settle(
                &settler,
                &world.request(ann, *resource, pending, &format!("r{n}")),
            )
            .await
            .expect("within the limit");
    }
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[2], None, "r9"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::LearnerLimitReached)),
        "{answer:?}"
    );
    // A live grant is still served: reopening is not a new access.
    let reopened = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r10"),
        )
        .await
        .expect("live grant");
    assert!(!reopened.counted, "{reopened:?}");
    assert_eq!(
        world.state().await,
        State {
            bindings: vec![(world.code(0), ann.0)],
            access_counts: vec![(world.code(0), 2)],
            records: 2,
            quota_used: 2,
            events: State::events(1, 2),
        }
    );
}

/// A code is never bound without the access it was bound for: one whose
/// count already stands at the limit while unbound (the audited unbind
/// sets it back to zero; a hand repair might not) is refused at the
/// limit, and its fresh binding is undone with the rest.
#[sqlx::test(migrations = "../../migrations")]
async fn a_fresh_binding_that_cannot_count_is_undone(pool: PgPool) {
    let world = World::new(
        pool,
        Policy {
            per_learner_limit: Some(2),
            ..Policy::default()
        },
    )
    .await;
    let ann = world.learner("ann").await;
    sqlx::query("UPDATE auth_codes SET access_count = 2 WHERE id = $1")
        .bind(world.code(0))
        .execute(&world.pool)
        .await
        .expect("a count left at the limit");
    let (settler, probe) = world.settler(options());
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::LearnerLimitReached)),
        "{answer:?}"
    );
    assert_eq!(probe.counts().1, 1, "the bind was tried");
    assert_eq!(
        world.state().await,
        State {
            access_counts: vec![(world.code(0), 2)],
            ..State::default()
        },
        "no binding, no record, no debit, no event"
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn the_share_quota_refuses_the_next_learner_and_undoes_their_binding(pool: PgPool) {
    let world = World::new(
        pool,
        Policy {
            per_learner_limit: None,
            quota: Some(1),
        },
    )
    .await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let (settler, _) = world.settler(options());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("the one access");
    // Bob's request still carries the share as it was read before the
    // quota ran out: the transaction reads the counter itself.
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(1)), "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::QuotaExhausted)),
        "{answer:?}"
    );
    assert_eq!(
        world.state().await,
        State {
            bindings: vec![(world.code(0), ann.0)],
            access_counts: vec![(world.code(0), 1)],
            records: 1,
            quota_used: 1,
            events: State::events(1, 1),
        },
        "bob's binding and debit were rolled back with the refusal"
    );
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_disabled_account_binds_nothing(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    engine::accounts::disable(&world.pool, ann)
        .await
        .expect("disable");
    let (settler, _) = world.settler(options());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    // Disabling ends every session (a new epoch)...
    let answer = world.settle(&settler, &request).await;
    assert!(
        matches!(answer, Err(SettlementError::SessionEnded)),
        "{answer:?}"
    );
    // ...and even at the account's current epoch, nothing is bound.
    let current = engine::settlement::SettlementRequest {
        session_epoch: 1,
        ..request
    };
    let answer = world.settle(&settler, &current).await;
    assert!(
        matches!(answer, Err(SettlementError::AccountDisabled)),
        "{answer:?}"
    );
    world.assert_untouched("a disabled account").await;
}

/// The settlement checks the session itself (an opening reads nothing
/// else): after "sign out everywhere" the old session's epoch binds
/// nothing, and the account's new epoch is the one that settles.
#[sqlx::test(migrations = "../../migrations")]
async fn a_session_the_account_moved_past_binds_nothing(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let epoch = engine::accounts::revoke_all_sessions(&world.pool, ann)
        .await
        .expect("sign out everywhere");
    assert_eq!(epoch, 1);
    let (settler, _) = world.settler(options());
    let stale = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let answer = world.settle(&settler, &stale).await;
    assert!(
        matches!(answer, Err(SettlementError::SessionEnded)),
        "{answer:?}"
    );
    world
        .assert_untouched("a session signed out everywhere")
        .await;
    let fresh = engine::settlement::SettlementRequest {
        session_epoch: epoch,
        ..stale
    };
    let grant = world
        .settle(&settler, &fresh)
        .await
        .expect("the new session binds");
    assert!(grant.bound_now);
}

/// A retry of a committed opening is answered from its record only while
/// the session still holds: signed out everywhere, it is refused too.
#[sqlx::test(migrations = "../../migrations")]
async fn a_retry_after_sign_out_everywhere_is_refused(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(options());
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    world.settle(&settler, &request).await.expect("bound");
    let replay = world.settle(&settler, &request).await.expect("a replay");
    assert!(replay.replayed);
    engine::accounts::revoke_all_sessions(&world.pool, ann)
        .await
        .expect("sign out everywhere");
    let answer = world.settle(&settler, &request).await;
    assert!(
        matches!(answer, Err(SettlementError::SessionEnded)),
        "{answer:?}"
    );
    let state = world.state().await;
    assert_eq!(state.bindings, vec![(world.code(0), ann.0)]);
    assert_eq!(state.records, 1);
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_revoked_binding_ends_access(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(options());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");
    engine::code_actions::revoke_code(&world.pool, world.tenant, world.admin, world.code(0))
        .await
        .expect("revoke");
    // Even with another usable code pending: the revoked binding decides.
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], Some(world.code(1)), "r2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRevoked)),
        "{answer:?}"
    );
    let state = world.state().await;
    assert_eq!(state.bindings, vec![(world.code(0), ann.0)]);
    assert_eq!(state.records, 1);
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_pending_code_lost_meanwhile_is_refused_for_its_reason(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let (settler, _) = world.settler(options());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("ann binds code 0");

    // Bob validated code 0 before Ann bound it: it is hers now.
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(0)), "b1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeBound)),
        "{answer:?}"
    );
    // Code 0 is revoked too now: that is the reason Bob hears, whoever
    // holds it.
    engine::code_actions::revoke_code(&world.pool, world.tenant, world.admin, world.code(0))
        .await
        .expect("revoke code 0");
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(0)), "b0"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRevoked)),
        "{answer:?}"
    );
    // Code 1 was revoked after Bob entered it.
    engine::code_actions::revoke_code(&world.pool, world.tenant, world.admin, world.code(1))
        .await
        .expect("revoke");
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(world.code(1)), "b2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRevoked)),
        "{answer:?}"
    );
    // A pending code of another share is not this share's.
    let (_, _, other_codes) = world.other_share().await;
    let answer = world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], Some(other_codes[0].0), "b3"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::WrongShare)),
        "{answer:?}"
    );
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
async fn a_resource_removed_or_of_another_share_is_not_found(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(options());
    engine::resources::delete_resource(
        &world.pool,
        world.tenant,
        world.admin,
        world.share.id,
        world.resources[2],
        false,
    )
    .await
    .expect("remove");
    let (_, foreign, _) = world.other_share().await;
    for (n, resource) in [world.resources[2], foreign].into_iter().enumerate() {
        let answer = world
            .settle(
                &settler,
                &world.request(ann, resource, Some(world.code(0)), &format!("r{n}")),
            )
            .await;
        assert!(
            matches!(answer, Err(SettlementError::ResourceNotFound)),
            "{answer:?}"
        );
    }
    world.assert_untouched("no resource, no settlement").await;
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_share_paused_after_the_request_read_it_is_refused_inside_the_transaction(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler(options());
    // The request carries the share as read before the pause.
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    shares::set_status(
        &world.pool,
        world.tenant,
        world.admin,
        world.share.id,
        ShareStatus::Paused,
    )
    .await
    .expect("pause");
    let answer = world.settle(&settler, &request).await;
    assert!(
        matches!(
            answer,
            Err(SettlementError::ShareUnavailable(Unavailability::Paused))
        ),
        "{answer:?}"
    );
    assert_eq!(probe.counts().0, 1, "refused by the transaction's own read");
    world.assert_untouched("a paused share").await;

    // A request that already knows the share is paused never starts one.
    let mut known = request.clone();
    known.share.status = ShareStatus::Paused;
    let answer = world.settle(&settler, &known).await;
    assert!(
        matches!(answer, Err(SettlementError::ShareUnavailable(_))),
        "{answer:?}"
    );
    assert_eq!(probe.counts().0, 1, "no second transaction");
    assert_eq!(probe.reservations(), 1, "and no second reservation");

    // The same for its validity window, closed or moved to the future
    // after the request read it.
    shares::set_status(
        &world.pool,
        world.tenant,
        world.admin,
        world.share.id,
        ShareStatus::Active,
    )
    .await
    .expect("resume");
    for (window, expected) in [
        (
            "valid_until = now() - interval '1 minute'",
            Unavailability::Closed,
        ),
        (
            "valid_until = NULL, valid_from = now() + interval '1 hour'",
            Unavailability::NotOpenYet,
        ),
    ] {
        sqlx::query(&format!("UPDATE shares SET {window} WHERE id = $1"))
            .bind(world.share.id.0)
            .execute(&world.pool)
            .await
            .expect("move the window");
        let answer = world.settle(&settler, &request).await;
        assert!(
            matches!(answer, Err(SettlementError::ShareUnavailable(reason)) if reason == expected),
            "{window}: {answer:?}"
        );
    }
    world.assert_untouched("outside the window").await;
}

#[sqlx::test(migrations = "../../migrations")]
async fn a_fault_before_commit_leaves_nothing_and_after_commit_the_retry_replays(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    for point in [
        FaultPoint::AfterBind,
        FaultPoint::AfterLearnerDebit,
        FaultPoint::AfterRecord,
        FaultPoint::AfterShareDebit,
    ] {
        let (faulty, _) = world.settler(SettlementOptions {
            fault: Some(point),
            ..options()
        });
        let answer = world
            .settle(
                &faulty,
                &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
            )
            .await;
        assert!(
            matches!(answer, Err(SettlementError::Unexpected(_))),
            "{point:?}: {answer:?}"
        );
        world.assert_untouched(&format!("{point:?}")).await;
    }

    let (dies, _) = world.settler(SettlementOptions {
        fault: Some(FaultPoint::AfterCommit),
        ..options()
    });
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let answer = world.settle(&dies, &request).await;
    assert!(
        matches!(answer, Err(SettlementError::Unexpected(_))),
        "{answer:?}"
    );
    let committed = State {
        bindings: vec![(world.code(0), ann.0)],
        access_counts: vec![(world.code(0), 1)],
        records: 1,
        quota_used: 1,
        events: State::events(1, 1),
    };
    assert_eq!(world.state().await, committed, "the work was done");
    let (healthy, _) = world.settler(options());
    let retry = world.settle(&healthy, &request).await.expect("retry");
    assert!(retry.replayed && retry.bound_now, "{retry:?}");
    assert_eq!(world.state().await, committed, "and done once");
}

/// A concurrent attempt of the same learner binds another code first: the
/// test holds that binding uncommitted in its own transaction, so the
/// settlement's bind waits on the unique index, then fails on it, starts
/// over and finds the learner's binding.
#[sqlx::test(migrations = "../../migrations")]
async fn losing_the_one_code_per_learner_race_starts_over_and_finds_the_winner(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    // The reservation fails (db-only), so PostgreSQL alone decides.
    let (settler, probe) = world.settler_on(
        crate::fixture::dead_redis().await,
        SettlementOptions {
            failure_policy: engine::settlement::options::FailurePolicy::DbOnly,
            ..options()
        },
    );

    let mut winner = world.pool.begin().await.expect("begin");
    sqlx::query("UPDATE auth_codes SET bound_principal = $1, first_used_at = now() WHERE id = $2")
        .bind(ann.0)
        .bind(world.code(0))
        .execute(&mut *winner)
        .await
        .expect("the concurrent binding");
    let request = world.request(ann, world.resources[0], Some(world.code(1)), "r1");
    let settling = {
        let (settler, request) = (settler.clone(), request.clone());
        tokio::spawn(async move { settler.settle(&request).await })
    };
    wait_until_blocked(&world.pool).await;
    winner.commit().await.expect("the winner commits");

    let grant = settling.await.expect("task").expect("granted");
    assert_eq!(grant.code_id, world.code(0), "the winner's code");
    assert!(!grant.bound_now && grant.counted, "{grant:?}");
    let (transactions, binds, start_overs) = probe.counts();
    assert_eq!(
        (transactions, binds, start_overs),
        (2, 1, 1),
        "one bind lost on the unique index, one start-over"
    );
    let state = world.state().await;
    assert_eq!(state.bindings, vec![(world.code(0), ann.0)], "one code");
    assert_eq!(state.access_counts, vec![(world.code(0), 1)]);
    assert_eq!(state.records, 1);
}

/// Two attempts of one learner at one code: the other binds it first (the
/// test's transaction), this one's compare-and-set waits on the row, then
/// finds the code taken, by this learner: access, without a second bind.
#[sqlx::test(migrations = "../../migrations")]
async fn losing_the_compare_and_set_to_ones_own_attempt_is_access(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler_on(
        crate::fixture::dead_redis().await,
        SettlementOptions {
            failure_policy: engine::settlement::options::FailurePolicy::DbOnly,
            ..options()
        },
    );
    let mut other = world.pool.begin().await.expect("begin");
    sqlx::query("UPDATE auth_codes SET bound_principal = $1, first_used_at = now() WHERE id = $2")
        .bind(ann.0)
        .bind(world.code(0))
        .execute(&mut *other)
        .await
        .expect("the other attempt binds");
    let request = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    let settling = {
        let (settler, request) = (settler.clone(), request.clone());
        tokio::spawn(async move { settler.settle(&request).await })
    };
    wait_until_blocked(&world.pool).await;
    other.commit().await.expect("the other attempt commits");

    let grant = settling.await.expect("task").expect("granted");
    assert_eq!(grant.code_id, world.code(0));
    assert!(!grant.bound_now && grant.counted, "{grant:?}");
    assert_eq!(probe.counts(), (1, 1, 0), "one attempt, no start-over");
    let state = world.state().await;
    assert_eq!(state.bindings, vec![(world.code(0), ann.0)]);
    assert_eq!(state.access_counts, vec![(world.code(0), 1)]);
    assert_eq!(state.events, State::events(0, 1), "no second code.bound");
}

/// A concurrent attempt with the same request id, for another resource,
/// records first: the settlement's insert fails on the request id's unique
/// index, it starts over, and the replay check refuses the reuse. (The
/// test's transaction holds that record uncommitted; its foreign key holds
/// the code row, so the settlement waits at its binding lock and inserts
/// after the twin committed.)
#[sqlx::test(migrations = "../../migrations")]
async fn losing_the_same_request_id_race_starts_over_and_refuses_the_reuse(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, probe) = world.settler(options());
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("bound");

    let mut twin = world.pool.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO access_records
             (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'r2', false, now() + interval '1 hour')",
    )
    .bind(world.tenant.0)
    .bind(uuid::Uuid::now_v7())
    .bind(world.share.id.0)
    .bind(world.code(0))
    .bind(ann.0)
    .bind(world.resources[1])
    .execute(&mut *twin)
    .await
    .expect("the twin's record");
    let request = world.request(ann, world.resources[2], None, "r2");
    let settling = {
        let (settler, request) = (settler.clone(), request.clone());
        tokio::spawn(async move { settler.settle(&request).await })
    };
    wait_until_blocked(&world.pool).await;
    twin.commit().await.expect("the twin commits");

    let answer = settling.await.expect("task");
    assert!(
        matches!(answer, Err(SettlementError::RequestIdReused)),
        "{answer:?}"
    );
    let (transactions, _, start_overs) = probe.counts();
    assert_eq!((transactions, start_overs), (3, 1), "one start-over");
    let state = world.state().await;
    assert_eq!(
        state.access_counts,
        vec![(world.code(0), 1)],
        "the loser's debit was rolled back"
    );
    assert_eq!(state.records, 2, "the first access and the twin's");
}

/// A database error that is no race (here a trigger of the test's own
/// refusing the record) is unexpected: reported, never retried as a
/// start-over, and nothing stays.
#[sqlx::test(migrations = "../../migrations")]
async fn a_database_error_that_is_no_race_is_unexpected_and_not_retried(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    for statement in [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation'; END; $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON access_records
         FOR EACH ROW EXECUTE FUNCTION refuse()",
    ] {
        sqlx::query(statement)
            .execute(&world.pool)
            .await
            .expect("test trigger");
    }
    let (settler, probe) = world.settler(options());
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::Unexpected(_))),
        "{answer:?}"
    );
    // (A failed call reports no bind attempt: only its own outcome does.)
    let (transactions, _, start_overs) = probe.counts();
    assert_eq!(
        (transactions, start_overs),
        (1, 0),
        "one attempt, no start-over"
    );
    world.assert_untouched("rolled back").await;

    // The same for the bind itself.
    for statement in [
        "DROP TRIGGER refuse ON access_records",
        "CREATE TRIGGER refuse BEFORE UPDATE OF bound_principal ON auth_codes
         FOR EACH ROW EXECUTE FUNCTION refuse()",
    ] {
        sqlx::query(statement)
            .execute(&world.pool)
            .await
            .expect("test trigger");
    }
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r2"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::Unexpected(_))),
        "{answer:?}"
    );
    let (transactions, _, start_overs) = probe.counts();
    assert_eq!(
        (transactions, start_overs),
        (2, 0),
        "one more attempt, no start-over"
    );
    world.assert_untouched("rolled back").await;
}

/// The transaction is bounded: held up past `transaction_timeout` (here
/// by the test holding the share's row), it answers "unavailable" and
/// rolls back.
#[sqlx::test(migrations = "../../migrations")]
async fn a_transaction_held_up_past_its_bound_is_unavailable_and_rolled_back(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions {
        transaction_timeout: Duration::from_millis(300),
        reservation_ttl: Duration::from_millis(250),
        ..options()
    });
    let mut holder = world.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM shares WHERE id = $1 FOR UPDATE")
        .bind(world.share.id.0)
        .execute(&mut *holder)
        .await
        .expect("hold the share row");
    let answer = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::Unavailable)),
        "{answer:?}"
    );
    holder.rollback().await.expect("release");
    world.assert_untouched("the timed-out attempt").await;
}

/// A request that may only reach a live grant (from another site) is
/// served by one, and otherwise refused with nothing bound, counted or
/// debited, even with a pending code.
#[sqlx::test(migrations = "../../migrations")]
async fn a_live_grant_only_request_never_binds_counts_or_debits(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let (ann, bob) = (world.learner("ann").await, world.learner("bob").await);
    let (settler, probe) = world.settler(options());
    let live_only = |learner, resource, pending, id: &str| {
        let mut request = world.request(learner, resource, pending, id);
        request.counting = Counting::LiveGrantOnly;
        request
    };
    let answer = world
        .settle(
            &settler,
            &live_only(bob, world.resources[0], Some(world.code(1)), "b1"),
        )
        .await;
    assert!(
        matches!(answer, Err(SettlementError::OpenFromCoursePage)),
        "{answer:?}"
    );
    world
        .assert_untouched("a pending code is never bound")
        .await;
    assert_eq!(probe.reservations(), 0, "nor reserved");
    assert_eq!(
        probe.counts(),
        (1, 0, 0),
        "one call that refused before any bind"
    );
    // Without a pending code: enter one first, as ever.
    let answer = world
        .settle(&settler, &live_only(bob, world.resources[0], None, "b2"))
        .await;
    assert!(
        matches!(answer, Err(SettlementError::CodeRequired)),
        "{answer:?}"
    );

    let first = world
        .settle(
            &settler,
            &world.request(ann, world.resources[0], Some(world.code(0)), "r1"),
        )
        .await
        .expect("opened here");
    let after_first = world.state().await;
    let reused = world
        .settle(&settler, &live_only(ann, world.resources[0], None, "r2"))
        .await
        .expect("the live grant serves");
    assert!(!reused.counted && !reused.bound_now, "{reused:?}");
    assert_eq!(reused.expires_at, first.expires_at);
    let answer = world
        .settle(&settler, &live_only(ann, world.resources[1], None, "r3"))
        .await;
    assert!(
        matches!(answer, Err(SettlementError::OpenFromCoursePage)),
        "{answer:?}"
    );
    assert_eq!(world.state().await, after_first, "nothing counted");
}
