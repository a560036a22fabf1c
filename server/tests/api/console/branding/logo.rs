//! Serving a tenant's logo: it is public, so its reads are limited per
//! client address (a browser that has it still gets its 304), and it is
//! served anyway when the limit's store cannot count.

use sqlx::PgPool;
use uuid::Uuid;

use super::{PNG, brand_acme};
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::course::{admin, error_of};

/// `GET {logo}` from `client` (an address the proxy vouches for), with an
/// `If-None-Match` when given.
async fn logo_from(
    app: &TestApp,
    logo: &str,
    client: &str,
    etag: Option<&str>,
) -> reqwest::Response {
    let mut request = app
        .client
        .get(format!("{}{logo}", app.address))
        .header("x-forwarded-for", client);
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    request.send().await.expect("request")
}

/// A logo is public, so its reads are limited per client address: past
/// the limit a client gets 429 with `Retry-After` (for a logo that exists
/// or not), while a browser that has it still gets its 304, which needs
/// no database, and another address is unaffected.
#[sqlx::test(migrations = "../migrations")]
async fn logo_reads_are_limited_per_client_address(pool: PgPool) {
    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.server.trusted_proxy_hops = 1;
    settings.throttle.logo_per_ip_per_minute = 3;
    let app = spawn_app_with(pool, settings).await;
    let acme = admin(&app).await;
    let logo = brand_acme(&app, &acme).await;
    let unknown = format!("/brand/logo/{}", Uuid::now_v7());

    let first = logo_from(&app, &logo, "203.0.113.7", None).await;
    assert_eq!(first.status(), 200);
    let etag = first.headers()["etag"].to_str().expect("ascii").to_owned();
    assert_eq!(
        logo_from(&app, &unknown, "203.0.113.7", None)
            .await
            .status(),
        404
    );
    assert_eq!(
        logo_from(&app, &logo, "203.0.113.7", None).await.status(),
        200
    );
    for path in [&logo, &unknown] {
        let refused = logo_from(&app, path, "203.0.113.7", None).await;
        assert!(refused.headers().contains_key("retry-after"), "{path}");
        assert_eq!(
            error_of(refused).await,
            (429, "rate_limited".into()),
            "{path}"
        );
    }
    let revalidated = logo_from(&app, &logo, "203.0.113.7", Some(&etag)).await;
    assert_eq!(revalidated.status(), 304, "a cached logo costs nothing");
    let other = logo_from(&app, &logo, "198.51.100.9", None).await;
    assert_eq!(other.status(), 200, "another address has its own limit");
    assert_eq!(other.bytes().await.expect("bytes").as_ref(), PNG);

    // An IPv6 client is counted by its /64: a new address in it is no new
    // limit.
    for address in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3"] {
        assert_eq!(
            logo_from(&app, &logo, address, None).await.status(),
            200,
            "{address}"
        );
    }
    let same_net = logo_from(&app, &logo, "2001:db8:1:2:ffff::9", None).await;
    assert_eq!(error_of(same_net).await, (429, "rate_limited".into()));
    let next_net = logo_from(&app, &logo, "2001:db8:1:3::1", None).await;
    assert_eq!(next_net.status(), 200, "the next /64 has its own limit");
}

/// The limit only guards PostgreSQL's load: when the throttle's store
/// fails, the logo is served anyway (a page or a mail without its logo is
/// broken), not a 503.
#[sqlx::test(migrations = "../migrations")]
async fn a_logo_is_served_when_its_throttle_cannot_count(pool: PgPool) {
    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.server.trusted_proxy_hops = 1;
    let app = spawn_app_with(pool, settings).await;
    let acme = admin(&app).await;
    let logo = brand_acme(&app, &acme).await;
    let key = app
        .redis
        .keys()
        .throttle(engine::coordination::ThrottleScope::LogoIp, "203.0.113.8");
    // This is the address's real counter: one read made it.
    assert_eq!(
        logo_from(&app, &logo, "203.0.113.8", None).await.status(),
        200
    );
    let counted: Option<i64> = redis::AsyncCommands::get(&mut app.redis.conn(), &key)
        .await
        .expect("get");
    assert_eq!(counted, Some(1), "the logo's read was counted under {key}");
    // Now it is not a counter: every count fails in Redis itself
    // (WRONGTYPE).
    let _: () = redis::AsyncCommands::del(&mut app.redis.conn(), &key)
        .await
        .expect("del");
    let _: () = redis::AsyncCommands::hset(&mut app.redis.conn(), &key, "not", "a counter")
        .await
        .expect("hset");
    let _: () = redis::AsyncCommands::expire(&mut app.redis.conn(), &key, 60)
        .await
        .expect("expire");
    let served = logo_from(&app, &logo, "203.0.113.8", None).await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.bytes().await.expect("bytes").as_ref(), PNG);
}
