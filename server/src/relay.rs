//! The outbox relay: a background task in every instance that hands the
//! outbox's events to the tenants' webhook endpoints (the claiming, leasing
//! and retry bookkeeping live in `engine::webhooks`; this is the HTTP side).
//!
//! Each round fans new events out into deliveries, leases the due ones, and
//! sends them concurrently, each signed with its endpoint's secret. Several
//! instances can run it at once: rows are claimed with
//! `FOR UPDATE SKIP LOCKED`, and an attempt is recorded only while its lease
//! is still the caller's.

use std::time::Duration;

use anyhow::Context as _;
use engine::db::PgPool;
use engine::webhooks::{
    destination,
    relay::{self, Attempted, Due, Recorded, RetryPolicy},
};
use futures::StreamExt as _;

use serde::Deserialize;

/// The `[webhooks]` table of the configuration: the relay's own settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// Run the outbox relay in `serve` (every instance may: rows are
    /// claimed with `FOR UPDATE SKIP LOCKED`).
    pub relay: bool,
    /// Pause between relay rounds when there was nothing to do.
    pub poll_interval_ms: u64,
    /// How long one delivery may take before it counts as failed.
    pub timeout_ms: u64,
    /// Attempts before a delivery is dead-lettered.
    pub max_attempts: i32,
    /// First retry delay; doubled per attempt, with jitter, up to
    /// `backoff_max_secs`.
    pub backoff_base_ms: u64,
    pub backoff_max_secs: u64,
    /// Deliver to loopback, private and link-local addresses too. Off in
    /// production: a tenant's endpoint must not reach the internal network.
    pub allow_private_targets: bool,
    /// How long an endpoint that timed out `PAUSE_AFTER_TIMEOUTS` times in
    /// a row is paused (its deliveries wait); each further timeout doubles
    /// it, up to 64 times this.
    pub pause_ms: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            relay: true,
            poll_interval_ms: 1_000,
            timeout_ms: 5_000,
            max_attempts: 8,
            backoff_base_ms: 2_000,
            backoff_max_secs: 3_600,
            allow_private_targets: false,
            pause_ms: 60_000,
        }
    }
}

/// The most a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How many events one round fans out.
const BATCH: i64 = 64;
/// Deliveries one round leases and sends, all at once: every one of them
/// starts right away, so each lease outlives its request.
const CONCURRENCY: usize = 8;

/// One relay instance.
#[derive(Debug, Clone)]
pub struct Relay {
    pool: PgPool,
    client: reqwest::Client,
    policy: RetryPolicy,
    /// How long a leased delivery stays ours: the request timeout plus a
    /// margin, so a lease never ends while its request can still succeed.
    lease: Duration,
    /// Deliver to non-public addresses too (tests; never production).
    allow_private: bool,
    /// The first pause of an endpoint that keeps timing out.
    pause: Duration,
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub fanned_out: usize,
    pub delivered: usize,
    pub failed: usize,
    pub dead: usize,
}

impl Round {
    pub fn is_idle(&self) -> bool {
        *self == Self::default()
    }
}

/// How long a relay holds a delivery it leased: the request timeout twice
/// and a margin, so a lease never ends while its request can still
/// succeed. Repointing an endpoint leaves deliveries due within it alone
/// (`engine::webhooks::endpoints::update_endpoint`).
pub fn lease_of(settings: &WebhookSettings) -> Duration {
    Duration::from_millis(settings.timeout_ms.max(1)) * 2 + Duration::from_secs(5)
}

impl Relay {
    pub fn new(pool: PgPool, settings: &WebhookSettings) -> anyhow::Result<Self> {
        let client = delivery_client(settings)?;
        Ok(Self {
            pool,
            client,
            policy: RetryPolicy {
                max_attempts: settings.max_attempts.max(1),
                base: Duration::from_millis(settings.backoff_base_ms),
                max: Duration::from_secs(settings.backoff_max_secs),
            },
            lease: lease_of(settings),
            allow_private: settings.allow_private_targets,
            pause: Duration::from_millis(settings.pause_ms),
        })
    }

    /// One round: fan out, lease, deliver, record.
    pub async fn round(&self) -> anyhow::Result<Round> {
        let mut round = Round {
            fanned_out: relay::fan_out(&self.pool, BATCH).await?,
            ..Round::default()
        };
        let due = relay::claim_due(&self.pool, CONCURRENCY as i64, self.lease).await?;
        let outcomes: Vec<anyhow::Result<Recorded>> = futures::stream::iter(due)
            .map(|due| async move {
                let (outcome, timed_out) = self.send(&due).await;
                let noted = relay::note_answer(&self.pool, &due, timed_out, self.pause).await;
                if let Err(error) = noted {
                    // The pause is a courtesy to the others; the attempt
                    // is recorded regardless.
                    tracing::warn!(error = format!("{error:#}"), "noting an endpoint's answer");
                }
                relay::record(&self.pool, &due, &outcome, &self.policy).await
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for outcome in outcomes {
            match outcome? {
                Recorded::Delivered => {
                    round.delivered += 1;
                    engine::metrics::webhook_delivery("delivered");
                }
                Recorded::WillRetry => {
                    round.failed += 1;
                    engine::metrics::webhook_delivery("failed");
                }
                Recorded::Dead => {
                    round.dead += 1;
                    engine::metrics::webhook_delivery("dead");
                }
                Recorded::LeaseLost => {}
            }
        }
        Ok(round)
    }

    /// One signed POST, and whether the endpoint answered nothing in time.
    /// What goes wrong is recorded in coarse words only (the tenant reads
    /// it): never the text of a network error.
    async fn send(&self, due: &Due) -> (Attempted, bool) {
        if !self.allow_private && !literal_is_public(&due.url) {
            let refused = Attempted::Failed {
                status: None,
                error: "refused: the endpoint's address is not public".to_owned(),
            };
            return (refused, false);
        }
        let timestamp = time::OffsetDateTime::now_utc().unix_timestamp();
        let signature = relay::sign(&due.secret, timestamp, &due.body);
        let sent = self
            .client
            .post(&due.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(relay::SIGNATURE_HEADER, signature)
            .header(relay::EVENT_ID_HEADER, due.event_id.to_string())
            .header(relay::EVENT_TYPE_HEADER, &due.event_type)
            .body(due.body.clone())
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => {
                let status = response.status().as_u16();
                (Attempted::Delivered { status }, false)
            }
            Ok(response) => {
                let failed = Attempted::Failed {
                    status: Some(response.status().as_u16()),
                    error: format!("answered {}", response.status()),
                };
                (failed, false)
            }
            Err(error) => {
                let failed = Attempted::Failed {
                    status: None,
                    error: if error.is_timeout() {
                        "timed out"
                    } else if error.is_connect() {
                        "could not connect (or the address is not public)"
                    } else {
                        "the request failed"
                    }
                    .to_owned(),
                };
                (failed, error.is_timeout())
            }
        }
    }

    /// Runs rounds among the server's `rounds` until they stop.
    pub fn spawn(self, rounds: &mut crate::rounds::Rounds, idle: Duration) {
        rounds.spawn("webhook relay", idle, move || {
            let relay = self.clone();
            async move { relay.round().await.map(|round| !round.is_idle()) }
        })
    }
}

/// The HTTP client deliveries go out with.
pub fn delivery_client(settings: &WebhookSettings) -> anyhow::Result<reqwest::Client> {
    let timeout = Duration::from_millis(settings.timeout_ms.max(1));
    let mut client = reqwest::Client::builder()
        .timeout(timeout)
        // An address that does not take the connection at all costs no
        // more than this, whatever the request's timeout.
        .connect_timeout(timeout.min(CONNECT_TIMEOUT))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("AdmitOne-Webhooks/1")
        // Never through a proxy from the environment (`HTTP(S)_PROXY`): it
        // would see every tenant's payload and connect to addresses that
        // `PublicOnly` never checked.
        .no_proxy();
    if !settings.allow_private_targets {
        // Names resolve to public addresses only, checked at connect
        // time (no DNS rebinding); IP literals are checked in `send`.
        client = client.dns_resolver(std::sync::Arc::new(PublicOnly));
    }
    client.build().context("building the webhook HTTP client")
}

/// False when `url`'s host is an IP address that is not public (names are
/// checked by [`PublicOnly`] when they resolve).
fn literal_is_public(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => destination::is_public(ip),
        Err(_) => !host.eq_ignore_ascii_case("localhost"),
    }
}

/// A resolver that keeps public addresses only, so a name that points at
/// the internal network (or is re-pointed there later) is never connected
/// to.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let public: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| destination::is_public(addr.ip()))
                .collect();
            if public.is_empty() {
                return Err("no public address".into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::{io::Read as _, net::TcpListener, process::Command, time::Duration};

    use super::{WebhookSettings, delivery_client};

    /// Set by [`deliveries_never_go_through_a_proxy`] for its child.
    const CHILD: &str = "ADMITONE_RELAY_PROXY_CHILD";

    /// A proxy from the environment would see (and could redirect) every
    /// tenant's delivery, and would connect to addresses the resolver
    /// never checked. The proxy variables are read once per process, so
    /// the client is built in a child process that has them set.
    #[test]
    fn deliveries_never_go_through_a_proxy() {
        let proxy = TcpListener::bind("127.0.0.1:0").expect("bind");
        proxy.set_nonblocking(true).expect("nonblocking");
        let proxy_url = format!("http://{}", proxy.local_addr().expect("addr"));
        let exe = std::env::current_exe().expect("test binary");
        let output = Command::new(exe)
            .args([
                "relay::tests::delivery_in_a_child_process",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("HTTP_PROXY", &proxy_url)
            .env("HTTPS_PROXY", &proxy_url)
            .env("ALL_PROXY", &proxy_url)
            .env("http_proxy", &proxy_url)
            .env("https_proxy", &proxy_url)
            .env("all_proxy", &proxy_url)
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
            .expect("child");
        let log = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{log}");
        assert!(log.contains("delivery attempted"), "{log}");
        match proxy.accept() {
            Ok((mut stream, _)) => {
                let mut seen = [0u8; 256];
                let n = stream.read(&mut seen).unwrap_or(0);
                panic!(
                    "a delivery went to the proxy: {}",
                    String::from_utf8_lossy(&seen[..n])
                );
            }
            Err(error) => assert_eq!(error.kind(), std::io::ErrorKind::WouldBlock),
        }
    }

    /// The child's half of [`deliveries_never_go_through_a_proxy`] (does
    /// nothing in a normal run).
    #[tokio::test]
    async fn delivery_in_a_child_process() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        for private in [false, true] {
            let settings = WebhookSettings {
                timeout_ms: 2_000,
                allow_private_targets: private,
                ..WebhookSettings::default()
            };
            let client = delivery_client(&settings).expect("client");
            for url in [
                "http://webhook.invalid/hook",
                "https://webhook.invalid/hook",
            ] {
                // Fails without a proxy (the name does not resolve); a
                // proxy would have been asked for it.
                let _ = client.post(url).body("{}").send().await;
            }
        }
        // Let a (wrong) proxy connection be accepted by the parent's backlog.
        tokio::time::sleep(Duration::from_millis(100)).await;
        println!("delivery attempted");
    }
}
