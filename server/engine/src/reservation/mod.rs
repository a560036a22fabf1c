//! The Redis dual reservation in front of first-access settlement.
//!
//! Two things must never happen at once: two accounts binding one code, and
//! one account binding two codes of a share. PostgreSQL forbids both in the
//! end; this reservation turns away the losers of such a race *before* they
//! open a transaction, so a stampede on a hot code costs Redis round trips,
//! not PostgreSQL locks. The scripts (`reserve.lua`, `release.lua`) take both
//! keys at once, in one cluster slot, owned by the attempt's request id.
//!
//! If Redis cannot answer, the caller's failure policy decides (refuse with
//! 503, or settle in PostgreSQL alone); a failed call is never taken for a
//! reservation.

use std::time::Duration;

use anyhow::Context as _;
use redis::Script;
use tracing::Instrument as _;

use crate::coordination::{Redis, script};

/// What `reserve.lua` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    Reserved,
    CodeHeld,
    UserBusy,
}

#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    /// Redis did not answer, or answered something the script never returns.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The two keys of one reservation.
#[derive(Debug, Clone)]
pub struct ReservationKeys {
    pub code: String,
    pub user: String,
}

/// Typed wrappers of the two scripts.
#[derive(Clone, Debug)]
pub struct Reserver {
    reserve: Script,
    release: Script,
}

impl Default for Reserver {
    fn default() -> Self {
        Self::new()
    }
}

impl Reserver {
    pub fn new() -> Self {
        Self {
            reserve: script("reservation/reserve.lua", include_str!("reserve.lua")),
            release: script("reservation/release.lua", include_str!("release.lua")),
        }
    }

    /// Takes both keys for `owner` (the request id) for `ttl`.
    pub async fn reserve(
        &self,
        redis: &Redis,
        keys: &ReservationKeys,
        owner: &str,
        ttl: Duration,
    ) -> Result<Reservation, ReservationError> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let started = std::time::Instant::now();
        let answer = async {
            let reply: redis::Value = self
                .reserve
                .key(&keys.code)
                .key(&keys.user)
                .arg(owner)
                .arg(ttl_ms)
                .invoke_async(&mut redis.conn())
                .await
                .context("running reserve.lua")?;
            parse_reserve(&reply)
        }
        .instrument(tracing::debug_span!("reserve.lua"))
        .await;
        crate::metrics::reservation(
            answer.as_ref().map(|r| *r).map_err(|_| ()),
            started.elapsed(),
        );
        Ok(answer?)
    }

    /// Deletes whichever of the keys `owner` still holds; returns how many.
    pub async fn release(
        &self,
        redis: &Redis,
        keys: &ReservationKeys,
        owner: &str,
    ) -> Result<u8, ReservationError> {
        let reply: redis::Value = self
            .release
            .key(&keys.code)
            .key(&keys.user)
            .arg(owner)
            .invoke_async(&mut redis.conn())
            .await
            .context("running release.lua")?;
        Ok(parse_release(&reply)?)
    }
}

/// Reservation keys that outlive what `reserve.lua` allows: no expiry at
/// all, or more time to live than `bound` (the configured reservation
/// TTL). Neither can come from the script; either would block a code or a
/// learner for good. `None` where Redis cannot be scanned (never today:
/// a cluster is scanned primary by primary).
pub async fn stale(redis: &Redis, bound: Duration) -> anyhow::Result<Option<Vec<String>>> {
    let Some(keys) = redis.scan(&redis.keys().reservations_pattern()).await? else {
        return Ok(None);
    };
    let bound_ms = i64::try_from(bound.as_millis()).unwrap_or(i64::MAX);
    let mut stale = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut redis.conn())
            .await
            .context("PTTL of a reservation")?;
        if is_stale(ttl, bound_ms) {
            stale.push(key);
        }
    }
    Ok(Some(stale))
}

/// Whether a key with this `PTTL` reply outlives what `reserve.lua`
/// allows: no expiry (-1), or more left than the bound. A key taken this
/// very millisecond has exactly the bound left, and is live; -2 (gone
/// meanwhile) is fine.
fn is_stale(pttl_ms: i64, bound_ms: i64) -> bool {
    pttl_ms == -1 || pttl_ms > bound_ms
}

/// Removes stale reservation keys (see [`stale`]), each only if it is
/// still stale when `remove_stale.lua` looks (a key re-taken meanwhile
/// stays). Safe: a reservation only turns losers away early; PostgreSQL
/// still decides every binding.
pub async fn remove(redis: &Redis, keys: &[String], bound: Duration) -> anyhow::Result<u64> {
    let remove_stale = script(
        "reservation/remove_stale.lua",
        include_str!("remove_stale.lua"),
    );
    let bound_ms = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX);
    let mut removed = 0;
    // One key per call: in a cluster, keys of different slots cannot share one.
    for key in keys {
        removed += remove_stale
            .key(key)
            .arg(bound_ms)
            .invoke_async::<u64>(&mut redis.conn())
            .await
            .context("running remove_stale.lua")?;
    }
    Ok(removed)
}

fn parse_reserve(reply: &redis::Value) -> anyhow::Result<Reservation> {
    match reply {
        redis::Value::Int(0) => Ok(Reservation::Reserved),
        redis::Value::Int(1) => Ok(Reservation::CodeHeld),
        redis::Value::Int(2) => Ok(Reservation::UserBusy),
        other => anyhow::bail!("reserve.lua: unexpected reply {other:?}"),
    }
}

fn parse_release(reply: &redis::Value) -> anyhow::Result<u8> {
    match reply {
        redis::Value::Int(n @ 0..=2) => Ok(u8::try_from(*n).unwrap_or_else(|_| unreachable!())),
        other => anyhow::bail!("release.lua: unexpected reply {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    #[test]
    fn replies_are_parsed_strictly() {
        assert_eq!(
            parse_reserve(&Value::Int(0)).expect("ok"),
            Reservation::Reserved
        );
        assert_eq!(
            parse_reserve(&Value::Int(1)).expect("ok"),
            Reservation::CodeHeld
        );
        assert_eq!(
            parse_reserve(&Value::Int(2)).expect("ok"),
            Reservation::UserBusy
        );
        for bad in [
            Value::Int(3),
            Value::Int(-1),
            Value::Nil,
            Value::Okay,
            Value::SimpleString("0".into()),
        ] {
            assert!(parse_reserve(&bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_release(&Value::Int(2)).expect("ok"), 2);
        for bad in [Value::Int(3), Value::Nil, Value::Okay] {
            assert!(parse_release(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_key_is_stale_past_the_bound_or_without_expiry_and_live_up_to_it() {
        let bound = 4_000;
        assert!(is_stale(-1, bound), "no expiry");
        assert!(
            is_stale(bound + 1, bound),
            "more left than reserve.lua sets"
        );
        assert!(!is_stale(bound, bound), "taken this millisecond");
        assert!(!is_stale(1, bound));
        assert!(!is_stale(0, bound));
        assert!(!is_stale(-2, bound), "gone meanwhile");
    }

    // The scripts themselves, against the machine's Redis (`REDIS_URL`),
    // each test under its own key prefix.

    use crate::coordination::RedisOptions;
    use redis::AsyncCommands as _;

    const TTL: Duration = Duration::from_secs(30);

    async fn connect() -> Redis {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        Redis::connect(&RedisOptions {
            urls: vec![url],
            cluster: false,
            key_prefix: format!("test:{}", uuid::Uuid::new_v4()),
            response_timeout: Duration::from_secs(5),
        })
        .await
        .expect("Redis handle")
    }

    fn keys_of(redis: &Redis) -> ReservationKeys {
        let (tenant, share) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        ReservationKeys {
            code: redis
                .keys()
                .reservation_code(tenant, share, uuid::Uuid::new_v4()),
            user: redis
                .keys()
                .reservation_user(tenant, share, uuid::Uuid::new_v4()),
        }
    }

    async fn get(redis: &Redis, key: &str) -> Option<String> {
        redis.conn().get(key).await.expect("GET")
    }

    async fn pttl(redis: &Redis, key: &str) -> i64 {
        redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut redis.conn())
            .await
            .expect("PTTL")
    }

    async fn clean(redis: &Redis, keys: &ReservationKeys) {
        let _: i64 = redis
            .conn()
            .del(&[&keys.code, &keys.user])
            .await
            .expect("DEL");
    }

    #[tokio::test]
    async fn reserve_sets_both_keys_with_the_ttl_and_the_owner_retakes_its_own() {
        let redis = connect().await;
        let reserver = Reserver::new();
        let keys = keys_of(&redis);
        let answer = reserver
            .reserve(&redis, &keys, "owner-a", TTL)
            .await
            .expect("reserve");
        assert_eq!(answer, Reservation::Reserved);
        for key in [&keys.code, &keys.user] {
            assert_eq!(get(&redis, key).await.as_deref(), Some("owner-a"), "{key}");
            let ttl = pttl(&redis, key).await;
            assert!(
                ttl > 0 && ttl <= TTL.as_millis() as i64,
                "{key}: PTTL {ttl} must be set and within the configured {TTL:?}"
            );
        }

        // Let the TTL run down a little, then the same owner re-takes its
        // reservation: accepted, and the TTL is refreshed.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = pttl(&redis, &keys.code).await;
        let again = reserver
            .reserve(&redis, &keys, "owner-a", TTL)
            .await
            .expect("reserve again");
        assert_eq!(again, Reservation::Reserved, "the owner re-takes its own");
        for key in [&keys.code, &keys.user] {
            assert_eq!(get(&redis, key).await.as_deref(), Some("owner-a"), "{key}");
            let ttl = pttl(&redis, key).await;
            assert!(
                ttl > before && ttl <= TTL.as_millis() as i64,
                "{key}: PTTL {ttl} refreshed (was {before})"
            );
        }

        // Others are turned away, and nothing they tried is written.
        let learner_busy = ReservationKeys {
            code: keys.code.replace(":code:", ":code:x"),
            user: keys.user.clone(),
        };
        assert_eq!(
            reserver
                .reserve(&redis, &learner_busy, "owner-b", TTL)
                .await
                .expect("reserve"),
            Reservation::UserBusy
        );
        assert_eq!(
            get(&redis, &learner_busy.code).await,
            None,
            "no half reservation"
        );
        let code_held = ReservationKeys {
            code: keys.code.clone(),
            user: keys.user.replace(":user:", ":user:x"),
        };
        assert_eq!(
            reserver
                .reserve(&redis, &code_held, "owner-b", TTL)
                .await
                .expect("reserve"),
            Reservation::CodeHeld
        );
        assert_eq!(
            get(&redis, &code_held.user).await,
            None,
            "no half reservation"
        );
        assert_eq!(get(&redis, &keys.code).await.as_deref(), Some("owner-a"));
        clean(&redis, &keys).await;
    }

    #[tokio::test]
    async fn release_deletes_only_what_the_owner_still_holds() {
        let redis = connect().await;
        let reserver = Reserver::new();

        // Another owner's release leaves the reservation alone.
        let keys = keys_of(&redis);
        reserver
            .reserve(&redis, &keys, "owner-a", TTL)
            .await
            .expect("reserve");
        let released = reserver
            .release(&redis, &keys, "owner-b")
            .await
            .expect("release");
        assert_eq!(released, 0, "not owner-b's to release");
        for key in [&keys.code, &keys.user] {
            assert_eq!(get(&redis, key).await.as_deref(), Some("owner-a"), "{key}");
        }

        // The owner's release deletes both.
        let released = reserver
            .release(&redis, &keys, "owner-a")
            .await
            .expect("release");
        assert_eq!(released, 2);
        for key in [&keys.code, &keys.user] {
            assert_eq!(get(&redis, key).await, None, "{key} deleted");
        }
        // Nothing left to release.
        assert_eq!(
            reserver
                .release(&redis, &keys, "owner-a")
                .await
                .expect("release"),
            0
        );

        // A key that expired and was re-taken by another attempt stays.
        reserver
            .reserve(&redis, &keys, "owner-a", TTL)
            .await
            .expect("reserve");
        let _: () = redis.conn().set(&keys.code, "owner-c").await.expect("SET");
        let released = reserver
            .release(&redis, &keys, "owner-a")
            .await
            .expect("release");
        assert_eq!(released, 1, "only the learner's key was still owner-a's");
        assert_eq!(get(&redis, &keys.code).await.as_deref(), Some("owner-c"));
        assert_eq!(get(&redis, &keys.user).await, None);
        clean(&redis, &keys).await;
    }

    #[tokio::test]
    async fn remove_stale_keeps_a_live_reservation_and_removes_stale_ones() {
        let redis = connect().await;
        let reserver = Reserver::new();
        let live = keys_of(&redis);
        reserver
            .reserve(&redis, &live, "owner-a", TTL)
            .await
            .expect("reserve");
        // No expiry at all, and more time to live than the bound: stale.
        let stale = keys_of(&redis);
        let _: () = redis.conn().set(&stale.code, "lost").await.expect("SET");
        let _: () = redis
            .conn()
            .set_ex(&stale.user, "lost", 3_600)
            .await
            .expect("SET EX");

        let found = super::stale(&redis, TTL)
            .await
            .expect("stale")
            .expect("standalone");
        let mut found_sorted = found.clone();
        found_sorted.sort();
        let mut expected = vec![stale.code.clone(), stale.user.clone()];
        expected.sort();
        assert_eq!(found_sorted, expected, "only the stale keys are reported");

        // Asked to remove every key, remove_stale.lua still keeps the live ones.
        let all = vec![
            live.code.clone(),
            live.user.clone(),
            stale.code.clone(),
            stale.user.clone(),
        ];
        let removed = super::remove(&redis, &all, TTL).await.expect("remove");
        assert_eq!(removed, 2);
        for key in [&live.code, &live.user] {
            assert_eq!(
                get(&redis, key).await.as_deref(),
                Some("owner-a"),
                "{key} kept"
            );
        }
        for key in [&stale.code, &stale.user] {
            assert_eq!(get(&redis, key).await, None, "{key} removed");
        }
        clean(&redis, &live).await;
    }
}
