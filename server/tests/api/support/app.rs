//! The test server: `spawn_app` starts the real app on port 0, on its own
//! multi-thread runtime, against the test's database and a fresh Redis key
//! prefix; `TestApp` is what a test talks to it and checks it with (its
//! address, pool, Redis handle and a client that keeps cookies), with
//! accounts made directly in the domain and signed in over HTTP.

use std::time::Duration;

use engine::coordination::Redis;
use secrecy::SecretString;
use server::{config::Settings, startup::Application};
use sqlx::PgPool;

use crate::support::mail::link_key;

/// A running server and what a test needs to talk to it and check it.
///
/// The server runs as production runs it: on its own multi-thread Tokio
/// runtime (its own OS threads), with its own PostgreSQL pool built by the
/// same constructor as `serve` (production's statement, lock and
/// idle-in-transaction timeouts) and its own Redis connection. The test's
/// `pool` and `redis` live on the test's runtime and are for setting up and
/// checking state. Dropping the `TestApp` stops the server and waits for
/// its runtime to end, so no connection outlives the test's database.
pub struct TestApp {
    pub address: String,
    pub pool: PgPool,
    pub redis: Redis,
    /// Keeps cookies between requests, like a browser.
    pub client: reqwest::Client,
    pub _server: ServerThread,
}

impl TestApp {
    /// Sends the server its shutdown signal (as SIGTERM would) without
    /// waiting for it to stop; dropping the app still waits.
    pub fn begin_shutdown(&mut self) {
        if let Some(stop) = self._server.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The thread that owns a test server's runtime; stopped on drop.
pub struct ServerThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// For a task dump when a test fails (see [`dump_tasks`]).
    #[cfg_attr(
        not(tokio_taskdump),
        expect(dead_code, reason = "read by taskdump builds only")
    )]
    runtime: tokio::runtime::Handle,
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        #[cfg(tokio_taskdump)]
        if std::thread::panicking() {
            dump_tasks(&self.runtime);
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Prints where every task of a failed test's server is waiting: built
/// with `RUSTFLAGS="--cfg tokio_unstable --cfg tokio_taskdump"`, a request
/// that never gets an answer fails its test (the client's timeout) and the
/// dump shows the future that never woke up.
#[cfg(tokio_taskdump)]
fn dump_tasks(runtime: &tokio::runtime::Handle) {
    let runtime = runtime.clone();
    let dump = std::thread::spawn(move || {
        runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(20), runtime.dump()).await })
    })
    .join();
    match dump {
        Ok(Ok(dump)) => {
            for (i, task) in dump.tasks().iter().enumerate() {
                eprintln!("=== server task {i} ===\n{}", task.trace());
            }
        }
        _ => eprintln!("=== no task dump (timed out or panicked) ==="),
    }
}

/// A client that keeps its own cookies (one browser) and does not follow
/// redirects (tests look at them).
pub fn new_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        // A stuck request fails its test with a message instead of
        // hanging the whole run.
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client")
}

impl TestApp {
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.get_as(&self.client, path).await
    }

    pub async fn get_as(&self, client: &reqwest::Client, path: &str) -> reqwest::Response {
        client
            .get(format!("{}{}", self.address, path))
            .send()
            .await
            .expect("request failed")
    }

    /// A page, as a browser asks for it (`Accept: text/html`).
    pub async fn get_page_as(&self, client: &reqwest::Client, path: &str) -> reqwest::Response {
        client
            .get(format!("{}{}", self.address, path))
            .header("accept", "text/html,application/xhtml+xml")
            .send()
            .await
            .expect("request failed")
    }

    /// A form POST (what server functions take), as a given client.
    pub async fn post_form_as(
        &self,
        client: &reqwest::Client,
        path: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        client
            .post(format!("{}{}", self.address, path))
            .form(form)
            .send()
            .await
            .expect("request failed")
    }

    pub async fn post_form(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.post_form_as(&self.client, path, form).await
    }

    /// Creates an account directly in the domain (fast setup) as the
    /// operator does: its address verified (a code binds only to a verified
    /// account, by default), no mail sent.
    pub async fn create_account(&self, email: &str, password: &str) -> engine::accounts::AccountId {
        use engine::accounts::{DisplayName, Email, ExistingPassword, Password, ensure_account};
        let (account, created) = ensure_account(
            &self.pool,
            &Email::parse(email).expect("email"),
            &DisplayName::parse("Test User").expect("name"),
            &Password::parse(SecretString::from(password.to_owned())).expect("password"),
            ExistingPassword::Keep,
        )
        .await
        .expect("account");
        assert!(created, "{email} is new");
        account
    }

    /// Creates an account as registration made them before it started
    /// from the address: its address not verified (and its verification
    /// mail queued, as "send again" queues it). Registration makes no such
    /// account any more, but the accounts it made remain.
    pub async fn create_unverified_account(
        &self,
        email: &str,
        password: &str,
    ) -> engine::accounts::AccountId {
        let account = unverified_account(&self.pool, email, password).await;
        let resent = engine::accounts::verification::resend(
            &self.pool,
            &link_key(),
            account,
            model::Lang::En,
        )
        .await
        .expect("a verification mail");
        assert_eq!(resent, engine::accounts::verification::Resent::Sent);
        account
    }

    /// Signs `client` in through the HTTP API; panics unless it worked.
    pub async fn login_as(&self, client: &reqwest::Client, email: &str, password: &str) {
        let response = self
            .post_form_as(
                client,
                "/api/auth/login",
                &[("email", email), ("password", password)],
            )
            .await;
        assert!(
            response.status().is_success() || response.status().is_redirection(),
            "login failed: {} {}",
            response.status(),
            response.text().await.unwrap_or_default()
        );
    }

    /// Who `client` is signed in as (`None`: nobody).
    pub async fn whoami_as(&self, client: &reqwest::Client) -> Option<String> {
        let response = self.get_as(client, "/api/auth/whoami").await;
        assert_eq!(response.status(), 200, "whoami");
        let body: serde_json::Value = response.json().await.expect("json");
        body.get("email")
            .and_then(|e| e.as_str())
            .map(str::to_owned)
    }
}

/// An account whose address was never proved, as registration made them
/// before it started from the address (named "Someone"); no mail.
pub async fn unverified_account(
    pool: &PgPool,
    email: &str,
    password: &str,
) -> engine::accounts::AccountId {
    use engine::accounts::{DisplayName, Email, ExistingPassword, Password, ensure_account};
    let (account, created) = ensure_account(
        pool,
        &Email::parse(email).expect("email"),
        &DisplayName::parse("Someone").expect("name"),
        &Password::parse(SecretString::from(password.to_owned())).expect("password"),
        ExistingPassword::Keep,
    )
    .await
    .expect("account");
    assert!(created, "{email} is new");
    sqlx::query("UPDATE accounts SET email_verified_at = NULL WHERE id = $1")
        .bind(account.0)
        .execute(pool)
        .await
        .expect("unverify");
    account
}

/// The Redis URL of the machine's server (CI and developer machines run
/// one; `make test` exports `REDIS_URL`).
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Settings for a test server: port 0, a fresh Redis key prefix. With
/// `REDIS_CLUSTER_NODES` set (`make test` does, for the suite's second
/// run), every test server on the machine's Redis uses that Redis Cluster
/// instead.
pub fn test_settings(redis_url: &str) -> Settings {
    let mut settings = Settings::default();
    settings.server.port = 0;
    settings.server.shutdown_grace_secs = 1;
    settings.redis.url = SecretString::from(redis_url.to_owned());
    // A test that brought a Redis of its own (to stop it, say) keeps it.
    if let Ok(nodes) = std::env::var("REDIS_CLUSTER_NODES")
        && !nodes.is_empty()
        && redis_url == self::redis_url()
    {
        settings.redis.url = SecretString::from(nodes);
        settings.redis.cluster = true;
    }
    settings.redis.key_prefix = format!("test:{}", uuid::Uuid::new_v4());
    // Each test server has its own pool (production's constructor and
    // timeouts); small, so that tests running in parallel stay well under
    // PostgreSQL's connection limit.
    settings.database.max_connections = 10;
    // Tests check behaviour, not latency: a loaded CI machine must not turn
    // a slow Redis answer into a 503 (failures are injected explicitly).
    settings.redis.response_timeout_ms = 5_000;
    // Mail goes to the dev mailbox unless a test sends it to its SMTP sink
    // (`spawn_app_with_mail`); the relay looks often, so mail arrives fast.
    settings.mail.poll_interval_ms = 100;
    // Uploads go to the system's temporary directory, never into the repo.
    settings.storage.root = std::env::temp_dir()
        .join("admitone-test-storage")
        .to_string_lossy()
        .into_owned();
    settings
}

/// Starts the app on `pool` (from `#[sqlx::test]`) with the machine's Redis.
pub async fn spawn_app(pool: PgPool) -> TestApp {
    spawn_app_with(pool, test_settings(&redis_url())).await
}

/// Starts the app with the given settings.
pub async fn spawn_app_with(pool: PgPool, settings: Settings) -> TestApp {
    let settlement = settings.settlement_options();
    spawn_app_with_settlement(pool, settings, settlement).await
}

/// Starts the app with explicit settlement options (fault injection).
pub async fn spawn_app_with_settlement(
    pool: PgPool,
    mut settings: Settings,
    settlement: engine::settlement::options::SettlementOptions,
) -> TestApp {
    init_test_logs();
    if settings.storage.root == server::config::Settings::default().storage.root {
        settings.storage.root = std::env::temp_dir()
            .join(format!("admitone-test-storage-{}", uuid::Uuid::new_v4()))
            .display()
            .to_string();
    }
    // The test's own handle, on the test's runtime (setup and checks).
    let redis = Redis::connect(&settings.redis_options())
        .await
        .expect("Redis handle");
    if settings.redis.cluster {
        // The cluster run must really be one (see `test_settings`).
        assert!(format!("{redis:?}").contains("cluster"), "{redis:?}");
    }
    let connect = (*pool.connect_options()).clone();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("test-server".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("test-server-worker")
                .enable_all()
                .build()
                .expect("the test server's runtime");
            let _ = handle_tx.send(runtime.handle().clone());
            runtime.block_on(async move {
                // The same pool constructor and settings as `serve`.
                let pool = engine::db::pool_with_timeouts(connect, &settings.db_options());
                let redis = Redis::connect(&settings.redis_options())
                    .await
                    .expect("the server's Redis handle");
                let app = Application::build_with_settlement(settings, pool, redis, settlement)
                    .await
                    .expect("build app");
                let _ = ready_tx.send(app.port());
                let stopped = async {
                    let _ = stop_rx.await;
                };
                if let Err(error) = app.run_until(stopped).await {
                    eprintln!("test server ended with an error: {error:#}");
                }
            });
            // Whatever is still running (slow handlers, background loops)
            // gets a moment, then its connections are dropped with it.
            runtime.shutdown_timeout(Duration::from_secs(2));
        })
        .expect("spawn the test server's thread");
    let port = ready_rx.await.expect("the test server started");
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        pool,
        redis,
        client: new_client(),
        _server: ServerThread {
            stop: Some(stop_tx),
            thread: Some(thread),
            runtime: handle_rx.recv().expect("the test server's runtime handle"),
        },
    }
}

/// `TEST_LOG=1 cargo test …` shows the server's logs (`RUST_LOG` chooses
/// which, default `info,sqlx=warn`).
fn init_test_logs() {
    if std::env::var_os("TEST_LOG").is_some() {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    }
}
