//! Fixed-window attempt limits (sign-in, registration, and later code entry).
//!
//! One small primitive, reused everywhere an attacker could guess: count an
//! attempt atomically in Redis (`fixed_window.lua`) and refuse past a limit,
//! telling the caller how long to wait. Counting happens *before* the
//! expensive or revealing work, so concurrent bursts cannot slip past.

use std::{
    net::{IpAddr, Ipv6Addr},
    time::Duration,
};

use anyhow::Context as _;
use redis::Script;

use crate::coordination::Redis;

/// The throttle subject of a client address: an IPv4 address as itself (an
/// IPv4-mapped IPv6 address too, so a dual-stack listener counts the same
/// client once, and a NAT64 address as the IPv4 client it carries), an IPv6
/// address as its /64.
///
/// Why the /64: one subscriber (a home, a phone, a virtual machine) is
/// routinely given a whole /64 and may use any address in it; per-address
/// limits would hand them 2^64 fresh windows.
pub fn ip_subject(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped().or_else(|| nat64_client(v6)) {
            Some(v4) => v4.to_string(),
            None => {
                let [a, b, c, d, ..] = v6.segments();
                format!("{}/64", Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0))
            }
        },
    }
}

/// One address tried from one network: the subject of the per-network
/// sign-in window, so that wrong passwords from a stranger's network do
/// not lock the owner out of her own. An IPv4 client's network is its
/// address; an IPv6 client's is its site (the /48, [`site_subject`]),
/// not its /64: one site's 65,536 /64s would otherwise be as many
/// networks, enough to exhaust the per-email backstop alone. (No
/// collision: an email holds no whitespace.)
pub fn email_network_subject(email: &str, ip: IpAddr) -> String {
    let network = site_subject(ip).unwrap_or_else(|| ip_subject(ip));
    format!("{email} from {network}")
}

/// The IPv6 site an address belongs to (its /48, a site's usual
/// allocation), for a second, larger allowance beside its /64's: someone
/// with a whole /48 cannot walk its /64s to multiply a limit. `None` for an
/// IPv4 client (an IPv4-mapped or NAT64 address included).
pub fn site_subject(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(_) => None,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped().or_else(|| nat64_client(v6)) {
            Some(_) => None,
            None => {
                let [a, b, c, ..] = v6.segments();
                Some(format!("{}/48", Ipv6Addr::new(a, b, c, 0, 0, 0, 0, 0)))
            }
        },
    }
}

/// The IPv4 client a NAT64/SIIT translator stands for, for addresses in the
/// well-known prefix `64:ff9b::/96` (RFC 6052), which carries it in its
/// last 32 bits. (Network-specific prefixes, such as the local-use
/// `64:ff9b:1::/48`, place it where their operator chose: those count by
/// their /64 like any IPv6 address.)
fn nat64_client(v6: Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    match v6.segments() {
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => {
            let ([a, b], [c, d]) = (high.to_be_bytes(), low.to_be_bytes());
            Some(std::net::Ipv4Addr::new(a, b, c, d))
        }
        _ => None,
    }
}

/// A limit: at most `max` attempts per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub max: u32,
    pub window: Duration,
}

impl Limit {
    pub const fn new(max: u32, window_secs: u64) -> Self {
        Self {
            max,
            window: Duration::from_secs(window_secs),
        }
    }
}

/// What one counted attempt learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed {
        count: u32,
    },
    /// Over the limit: retry after this long (the rest of the window,
    /// rounded up to whole seconds, at least one: a `Retry-After` of 0
    /// would invite an immediate retry into the same window).
    Refused {
        retry_after: Duration,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ThrottleError {
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The typed wrapper of `fixed_window.lua`.
#[derive(Clone, Debug)]
pub struct FixedWindow {
    script: Script,
}

impl Default for FixedWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl FixedWindow {
    pub fn new() -> Self {
        Self {
            script: crate::coordination::script(
                "throttle/fixed_window.lua",
                include_str!("fixed_window.lua"),
            ),
        }
    }

    /// Counts one attempt against `key` (from [`crate::coordination::Keys::throttle`]).
    pub async fn hit(
        &self,
        redis: &Redis,
        key: &str,
        limit: Limit,
    ) -> Result<Decision, ThrottleError> {
        let window = limit.window.as_secs().max(1);
        let reply: redis::Value = self
            .script
            .key(key)
            .arg(window)
            .invoke_async(&mut redis.conn())
            .await
            .context("running fixed_window.lua")?;
        let (count, pttl_ms) = parse_reply(&reply)?;
        Ok(if count > i64::from(limit.max) {
            Decision::Refused {
                retry_after: retry_after(pttl_ms),
            }
        } else {
            Decision::Allowed {
                count: u32::try_from(count).unwrap_or(u32::MAX),
            }
        })
    }
}

/// The rest of a window (`pttl_ms` milliseconds) in whole seconds, rounded
/// up, at least one.
fn retry_after(pttl_ms: i64) -> Duration {
    let ms = u64::try_from(pttl_ms).unwrap_or(0);
    Duration::from_secs(ms.div_ceil(1000).max(1))
}

/// The script returns exactly two integers, the count (>= 1) and the
/// milliseconds left in the window (>= 0: a window in its last millisecond
/// is still a window); anything else is an error, never a pass.
fn parse_reply(reply: &redis::Value) -> anyhow::Result<(i64, i64)> {
    match reply {
        redis::Value::Array(items) => match items.as_slice() {
            [redis::Value::Int(count), redis::Value::Int(pttl)] if *count >= 1 && *pttl >= 0 => {
                Ok((*count, *pttl))
            }
            _ => anyhow::bail!("fixed_window.lua: unexpected reply {reply:?}"),
        },
        _ => anyhow::bail!("fixed_window.lua: unexpected reply {reply:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    /// The test Redis, under a key prefix of this test's own.
    async fn redis() -> Redis {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        Redis::connect(&crate::coordination::RedisOptions {
            urls: vec![url],
            cluster: false,
            key_prefix: format!("test:{}", uuid::Uuid::new_v4()),
            response_timeout: Duration::from_secs(5),
        })
        .await
        .expect("Redis handle")
    }

    #[tokio::test]
    async fn a_window_allows_up_to_its_limit_then_refuses_until_it_ends() {
        let redis = redis().await;
        let throttle = FixedWindow::new();
        let limit = Limit {
            max: 2,
            window: Duration::from_secs(30),
        };
        let key = redis.keys().throttle(
            crate::coordination::ThrottleScope::SignInEmail,
            "ann@example.com",
        );
        for count in 1..=2 {
            assert_eq!(
                throttle.hit(&redis, &key, limit).await.expect("hit"),
                Decision::Allowed { count }
            );
        }
        for _ in 0..2 {
            match throttle.hit(&redis, &key, limit).await.expect("hit") {
                Decision::Refused { retry_after } => assert!(
                    (Duration::from_secs(1)..=limit.window).contains(&retry_after),
                    "{retry_after:?}"
                ),
                allowed => panic!("past the limit: {allowed:?}"),
            }
        }
        // Another subject has its own window.
        let other = redis.keys().throttle(
            crate::coordination::ThrottleScope::SignInEmail,
            "bob@example.com",
        );
        assert_eq!(
            throttle.hit(&redis, &other, limit).await.expect("hit"),
            Decision::Allowed { count: 1 }
        );
    }

    /// The script's own reply, `(count, pttl)`, for a 30-second window.
    async fn hit_raw(throttle: &FixedWindow, redis: &Redis, key: &str) -> (i64, i64) {
        let reply: Value = throttle
            .script
            .key(key)
            .arg(30)
            .invoke_async(&mut redis.conn())
            .await
            .expect("fixed_window.lua");
        parse_reply(&reply).expect("its reply")
    }

    async fn pttl(redis: &Redis, key: &str) -> i64 {
        redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut redis.conn())
            .await
            .expect("PTTL")
    }

    /// The window starts at its first hit and later hits never move its
    /// end; a counter found without a TTL (written by anything else) gets
    /// the whole window, and the reply says exactly that.
    #[tokio::test]
    async fn a_window_is_never_extended_and_no_counter_outlives_one() {
        let redis = redis().await;
        let throttle = FixedWindow::new();
        let key = redis.keys().throttle(
            crate::coordination::ThrottleScope::SignInEmail,
            "ann@example.com",
        );
        let (count, left) = hit_raw(&throttle, &redis, &key).await;
        assert_eq!(count, 1);
        assert!((29_000..=30_000).contains(&left), "{left}");

        // 25 seconds pass (the end brought near by hand): a later hit
        // counts in the same window and leaves its end where it was.
        let _: () = redis::cmd("PEXPIRE")
            .arg(&key)
            .arg(5_000)
            .query_async(&mut redis.conn())
            .await
            .expect("PEXPIRE");
        let (count, left) = hit_raw(&throttle, &redis, &key).await;
        assert_eq!(count, 2);
        assert!((1..=5_000).contains(&left), "the window moved: {left}");
        assert!((1..=5_000).contains(&pttl(&redis, &key).await));

        // A counter without a TTL: the hit gives it the window.
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg(7)
            .query_async(&mut redis.conn())
            .await
            .expect("SET");
        assert_eq!(pttl(&redis, &key).await, -1, "no TTL yet");
        assert_eq!(hit_raw(&throttle, &redis, &key).await, (8, 30_000));
        let ttl = pttl(&redis, &key).await;
        assert!((29_000..=30_000).contains(&ttl), "{ttl}");
        let _: () = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut redis.conn())
            .await
            .expect("DEL");
    }

    #[test]
    fn replies_are_parsed_strictly() {
        assert_eq!(
            parse_reply(&Value::Array(vec![Value::Int(3), Value::Int(60_000)])).expect("valid"),
            (3, 60_000)
        );
        // The window's last moments (`TTL` would say 0 here) are valid.
        for pttl in [0, 1, 499] {
            assert_eq!(
                parse_reply(&Value::Array(vec![Value::Int(1), Value::Int(pttl)])).expect("valid"),
                (1, pttl)
            );
        }
        for bad in [
            Value::Nil,
            Value::Int(1),
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![Value::Int(0), Value::Int(60)]),
            Value::Array(vec![Value::Int(1), Value::Int(-1)]),
            Value::Array(vec![Value::Int(1), Value::Int(60), Value::Int(1)]),
            Value::Array(vec![Value::SimpleString("1".into()), Value::Int(60)]),
        ] {
            assert!(parse_reply(&bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        let subject = |s: &str| ip_subject(s.parse().expect("ip"));
        assert_eq!(subject("192.0.2.9"), "192.0.2.9");
        assert_eq!(subject("::ffff:192.0.2.9"), "192.0.2.9");
        assert_eq!(subject("2001:db8:aa:bb::1"), "2001:db8:aa:bb::/64");
        assert_eq!(
            subject("2001:db8:aa:bb:1234:5678:9abc:def0"),
            subject("2001:db8:aa:bb::1")
        );
        assert_ne!(subject("2001:db8:aa:cc::1"), subject("2001:db8:aa:bb::1"));
        assert_ne!(subject("192.0.2.9"), subject("192.0.2.10"));
        assert_eq!(subject("::1"), "::/64");
    }

    /// An IPv6-only deployment that takes IPv4 clients through a stateless
    /// translator (SIIT-DC, RFC 7755) sees every one of them inside
    /// `64:ff9b::/96`, one /64 for the whole IPv4 internet: keyed by the
    /// /64, one noisy client would lock out every IPv4 visitor. The
    /// embedded IPv4 is the client.
    #[test]
    fn nat64_addresses_count_as_the_ipv4_client_they_carry() {
        let subject = |s: &str| ip_subject(s.parse().expect("ip"));
        assert_eq!(subject("64:ff9b::c000:209"), "192.0.2.9");
        assert_eq!(subject("64:ff9b::192.0.2.9"), subject("192.0.2.9"));
        assert_ne!(
            subject("64:ff9b::192.0.2.9"),
            subject("64:ff9b::192.0.2.10")
        );
        // Near the prefixes, but not them: still by /64.
        assert_eq!(subject("64:ff9b:0:0:1::c000:209"), "64:ff9b::/64");
        assert_eq!(subject("64:ff9a::c000:209"), "64:ff9a::/64");
    }

    #[test]
    fn an_address_tried_from_one_network_is_one_subject() {
        let subject = |ip: &str| email_network_subject("ada@example.com", ip.parse().expect("ip"));
        assert_eq!(subject("2001:db8:aa:bb::1"), subject("2001:db8:aa:bb::2"));
        assert_eq!(
            subject("2001:db8:aa:bb::1"),
            subject("2001:db8:aa:cc::1"),
            "an IPv6 network is its /48"
        );
        assert_ne!(subject("2001:db8:aa:bb::1"), subject("2001:db8:ab:bb::1"));
        assert_eq!(subject("192.0.2.9"), subject("::ffff:192.0.2.9"));
        assert_ne!(subject("192.0.2.9"), subject("192.0.2.10"));
        assert_ne!(
            subject("192.0.2.9"),
            email_network_subject("bob@example.com", "192.0.2.9".parse().expect("ip"))
        );
    }

    #[test]
    fn ipv6_addresses_have_a_48_site_and_ipv4_clients_none() {
        let site = |s: &str| site_subject(s.parse().expect("ip"));
        assert_eq!(
            site("2001:db8:aa:bb::1").as_deref(),
            Some("2001:db8:aa::/48")
        );
        assert_eq!(site("2001:db8:aa:ffff::9"), site("2001:db8:aa:bb::1"));
        assert_ne!(site("2001:db8:ab:bb::1"), site("2001:db8:aa:bb::1"));
        // A /48 and a /64 of the same numbers are never one key.
        assert_ne!(
            site("2001:db8:aa::1").expect("v6"),
            ip_subject("2001:db8:aa::1".parse().expect("ip"))
        );
        for ipv4_client in ["192.0.2.9", "::ffff:192.0.2.9", "64:ff9b::192.0.2.9"] {
            assert_eq!(site(ipv4_client), None, "{ipv4_client}");
        }
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_never_zero() {
        for (pttl_ms, secs) in [
            (0, 1),
            (1, 1),
            (300, 1),
            (1_000, 1),
            (1_001, 2),
            (59_999, 60),
        ] {
            assert_eq!(
                retry_after(pttl_ms),
                Duration::from_secs(secs),
                "{pttl_ms} ms"
            );
        }
    }
}
