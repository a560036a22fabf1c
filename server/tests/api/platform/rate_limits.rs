//! How the rate limiter counts, shown on sign-in: a window ending within a
//! second still decides (refused for a whole second, never 0 s); behind a
//! proxy, the address the proxy appended is counted, never a forged one;
//! addresses in one IPv6 /64 (and an IPv4-mapped address and its IPv4
//! address) share a limit, the /64s of one /48 a larger one; and a hundred
//! requests at once pass exactly the allowance.

use std::time::Duration;

use engine::{
    coordination::ThrottleScope,
    throttle::{Decision, FixedWindow, Limit},
};
use redis::AsyncCommands as _;
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

/// A throttle counter that ends in 450 ms: Redis `TTL` says 0 there.
async fn counter_ending_soon(app: &TestApp, key: &str, count: u32) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(count)
        .arg("PX")
        .arg(450)
        .query_async(&mut app.redis.conn())
        .await
        .expect("SET PX");
}

/// Sets a counter ending soon and hits it. On a loaded machine the counter
/// may expire before the hit arrives (the hit then starts a new window,
/// count 1): that attempt proves nothing and is made again.
async fn hit_at_the_edge(
    app: &TestApp,
    throttle: &FixedWindow,
    key: &str,
    count: u32,
    limit: Limit,
) -> Decision {
    for _ in 0..5 {
        counter_ending_soon(app, key, count).await;
        let decision = throttle
            .hit(&app.redis, key, limit)
            .await
            .expect("the window's last 500 ms are no error");
        if decision != (Decision::Allowed { count: 1 }) {
            return decision;
        }
    }
    panic!("the counter expired before every one of 5 hits");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_throttle_window_ending_within_a_second_still_decides(pool: PgPool) {
    let app = spawn_app(pool).await;
    let throttle = FixedWindow::new();
    let limit = Limit::new(3, 60);

    // Within the limit at the window's edge: allowed, counted.
    let under = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "under@example.com");
    let decision = hit_at_the_edge(&app, &throttle, &under, 1, limit).await;
    assert_eq!(decision, Decision::Allowed { count: 2 });

    // Over the limit at the edge: refused for a whole second, never 0 s.
    let over = app
        .redis
        .keys()
        .throttle(ThrottleScope::SignInEmail, "over@example.com");
    let decision = hit_at_the_edge(&app, &throttle, &over, 3, limit).await;
    assert_eq!(
        decision,
        Decision::Refused {
            retry_after: Duration::from_secs(1)
        }
    );
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&over)
        .query_async(&mut app.redis.conn())
        .await
        .expect("PTTL");
    assert!(
        (-2..=450).contains(&pttl) && pttl != -1,
        "the window was not extended (or made endless): {pttl}"
    );

    // Through the sign-in form: 429 with Retry-After: 1, not 503. A 401
    // means the counter expired before the request (a new window): again.
    let key = app.redis.keys().throttle(
        ThrottleScope::SignInEmailNetwork,
        &engine::throttle::email_network_subject(
            "edge@example.com",
            std::net::Ipv4Addr::LOCALHOST.into(),
        ),
    );
    let mut refused = None;
    for _ in 0..5 {
        counter_ending_soon(&app, &key, 10).await;
        let response = app
            .post_form(
                "/api/auth/login",
                &[("email", "edge@example.com"), ("password", PASSWORD)],
            )
            .await;
        if response.status() != 401 {
            refused = Some(response);
            break;
        }
    }
    let response = refused.expect("the counter expired before every one of 5 requests");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "1");
}

/// A login attempt as it arrives through proxies: one `X-Forwarded-For`
/// line per entry of `forwarded_for`, in order.
async fn login_through_proxy(app: &TestApp, forwarded_for: &[&str]) -> reqwest::Response {
    let mut request = new_client()
        .post(format!("{}/api/auth/login", app.address))
        .form(&[("email", "nobody@example.com"), ("password", PASSWORD)]);
    for line in forwarded_for {
        request = request.header("x-forwarded-for", *line);
    }
    request.send().await.expect("request")
}

fn behind_one_proxy(sign_in_per_ip: u32) -> server::config::Settings {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.server.trusted_proxy_hops = 1;
    settings.throttle.sign_in_per_ip = sign_in_per_ip;
    settings
}

#[sqlx::test(migrations = "../migrations")]
async fn behind_one_proxy_the_proxy_appended_address_is_throttled(pool: PgPool) {
    let app = spawn_app_with(pool, behind_one_proxy(2)).await;
    // The client forges a first line (a new address each time); the proxy
    // appends its own line with the address it saw.
    for attempt in 0..3 {
        let forged = format!("198.51.100.{attempt}");
        let response = login_through_proxy(&app, &[&forged, "203.0.113.7"]).await;
        let expected = if attempt < 2 { 401 } else { 429 };
        assert_eq!(response.status(), expected, "attempt {attempt}");
    }
    let keys = app.redis.keys();
    let counted: Option<i64> = app
        .redis
        .conn()
        .get(keys.throttle(ThrottleScope::SignInIp, "203.0.113.7"))
        .await
        .expect("get");
    assert_eq!(counted, Some(3), "counted against the proxy-seen address");
    let forged: bool = app
        .redis
        .conn()
        .exists(keys.throttle(ThrottleScope::SignInIp, "198.51.100.0"))
        .await
        .expect("exists");
    assert!(!forged, "a forged address is never counted");
}

/// The answers to one login attempt from each address, in turn.
async fn statuses(app: &TestApp, addresses: &[&str]) -> Vec<u16> {
    let mut statuses = Vec::new();
    for address in addresses {
        statuses.push(
            login_through_proxy(app, &[*address])
                .await
                .status()
                .as_u16(),
        );
    }
    statuses
}

#[sqlx::test(migrations = "../migrations")]
async fn addresses_in_one_ipv6_64_share_a_limit(pool: PgPool) {
    let app = spawn_app_with(pool, behind_one_proxy(2)).await;
    assert_eq!(
        statuses(
            &app,
            &[
                "2001:db8:aa:bb::1",
                "2001:db8:aa:bb:1234:5678:9abc:def0",
                "2001:db8:aa:bb::ffff",
            ]
        )
        .await,
        [401, 401, 429],
        "one /64 is one subscriber"
    );
    assert_eq!(
        statuses(&app, &["2001:db8:aa:cc::1"]).await,
        [401],
        "the next /64 is someone else"
    );
    assert_eq!(
        statuses(&app, &["::ffff:192.0.2.9", "192.0.2.9", "192.0.2.9"]).await,
        [401, 401, 429],
        "an IPv4-mapped address is its IPv4 address"
    );
}

/// Someone with a whole IPv6 /48 (a site's usual allocation) cannot walk
/// its 65,536 /64s to multiply a per-address limit: the /48 has an
/// allowance of its own, sixteen /64s' worth.
#[sqlx::test(migrations = "../migrations")]
async fn the_64s_of_one_ipv6_48_share_a_larger_limit(pool: PgPool) {
    let mut settings = behind_one_proxy(2);
    // Only the address limits are under test.
    settings.throttle.sign_in_per_email = 1_000;
    let app = spawn_app_with(pool, settings).await;
    // One /64 past its own limit: what its window refused is not counted
    // against the /48 (else one /64 could spend its whole site's share).
    assert_eq!(
        statuses(&app, &["2001:db8:aa:ffff::1"; 5]).await,
        [401, 401, 429, 429, 429]
    );
    let walked: Vec<String> = (0..31).map(|n| format!("2001:db8:aa:{n:x}::1")).collect();
    let walked: Vec<&str> = walked.iter().map(String::as_str).collect();
    let answers = statuses(&app, &walked).await;
    assert_eq!(
        answers[..30],
        [401; 30],
        "each /64 within the /48's allowance (32, two spent): {answers:?}"
    );
    assert_eq!(answers[30], 429, "past sixteen /64s' worth: {answers:?}");
    assert_eq!(
        statuses(&app, &["2001:db8:ab:1::1"]).await,
        [401],
        "the next /48 is someone else"
    );
}

/// The answers to one login attempt from each address, all at once.
async fn statuses_at_once(app: &TestApp, addresses: &[String]) -> Vec<u16> {
    futures::future::join_all(addresses.iter().map(|address| async move {
        login_through_proxy(app, &[address.as_str()])
            .await
            .status()
            .as_u16()
    }))
    .await
}

/// The window is counted in one Lua call per request, so a hundred
/// requests at once pass exactly the allowance: on one address, and on
/// a /48's allowance when a hundred of its /64s come at once.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_sign_ins_at_once_pass_exactly_the_allowance(pool: PgPool) {
    let mut settings = behind_one_proxy(7);
    settings.throttle.sign_in_per_email = 1_000;
    let app = spawn_app_with(pool, settings).await;

    let one_address = vec!["203.0.113.50".to_owned(); 100];
    let answers = statuses_at_once(&app, &one_address).await;
    let passed = answers.iter().filter(|s| **s == 401).count();
    let refused = answers.iter().filter(|s| **s == 429).count();
    assert_eq!((passed, refused), (7, 93), "{answers:?}");
    let counted: Option<i64> = app
        .redis
        .conn()
        .get(
            app.redis
                .keys()
                .throttle(ThrottleScope::SignInIp, "203.0.113.50"),
        )
        .await
        .expect("get");
    assert_eq!(counted, Some(100), "every request counted once");

    // A hundred /64s of one /48, two each: the /48 allows 7 * 16 = 112
    // requests, the first seven per /64.
    let walked: Vec<String> = (0..100)
        .flat_map(|n| {
            [
                format!("2001:db8:bb:{n:x}::1"),
                format!("2001:db8:bb:{n:x}::2"),
            ]
        })
        .collect();
    let answers = statuses_at_once(&app, &walked).await;
    let passed = answers.iter().filter(|s| **s == 401).count();
    let refused = answers.iter().filter(|s| **s == 429).count();
    assert_eq!((passed, refused), (112, 88), "{answers:?}");
}

/// One sign-in attempt for `email` with `password`, through a proxy that
/// saw `address`: its status.
async fn sign_in_from(app: &TestApp, address: &str, email: &str, password: &str) -> u16 {
    new_client()
        .post(format!("{}/api/auth/login", app.address))
        .header("x-forwarded-for", address)
        .form(&[("email", email), ("password", password)])
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

/// Wrong passwords for someone's address, tried from a stranger's
/// network, use up that network's window for the address, not the
/// owner's: she still signs in from her own. Only many networks at once
/// (ten windows' worth) close the address to everyone for the window.
#[sqlx::test(migrations = "../migrations")]
async fn a_strangers_wrong_tries_do_not_lock_the_owner_out(pool: PgPool) {
    let mut settings = behind_one_proxy(1_000);
    settings.throttle.sign_in_per_email = 3;
    let app = spawn_app_with(pool, settings).await;
    app.create_account("ada@example.com", PASSWORD).await;

    for _ in 0..3 {
        assert_eq!(
            sign_in_from(&app, "198.51.100.7", "ada@example.com", "wrong password!").await,
            401
        );
    }
    assert_eq!(
        sign_in_from(&app, "198.51.100.7", "ada@example.com", PASSWORD).await,
        429,
        "the stranger's network is done with this address for the window"
    );
    assert_eq!(
        sign_in_from(&app, "203.0.113.9", "ada@example.com", PASSWORD).await,
        200,
        "the owner, from her own network, is not locked out"
    );

    // Across networks the address has ten windows' worth (30): four
    // counted so far (the stranger's three, the owner's one; a refusal
    // by a network's window is not counted again), 26 more from nine
    // further networks, and the next attempt, from anywhere, is refused.
    for attempt in 0..26 {
        let address = format!("192.0.2.{}", attempt / 3);
        assert_eq!(
            sign_in_from(&app, &address, "ada@example.com", "wrong password!").await,
            401,
            "attempt {attempt}"
        );
    }
    assert_eq!(
        sign_in_from(&app, "192.0.2.200", "ada@example.com", PASSWORD).await,
        429,
        "thirty attempts from anywhere close the window"
    );
}
