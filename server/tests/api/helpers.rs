//! The harness every integration test uses.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use engine::coordination::Redis;
use secrecy::SecretString;
use server::{config::Settings, startup::Application};
use sqlx::PgPool;

/// A running server and what a test needs to talk to it and check it.
pub struct TestApp {
    pub address: String,
    /// Keeps cookies between requests, like a browser.
    pub client: reqwest::Client,
}

impl TestApp {
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{}", self.address, path))
            .send()
            .await
            .expect("request failed")
    }
}

/// The Redis URL of the machine's server (CI and developer machines run
/// one; `make test` exports `REDIS_URL`).
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Settings for a test server: port 0, a fresh Redis key prefix.
pub fn test_settings(redis_url: &str) -> Settings {
    let mut settings = Settings::default();
    settings.server.port = 0;
    settings.server.shutdown_grace_secs = 1;
    settings.redis.url = SecretString::from(redis_url.to_owned());
    settings.redis.key_prefix = format!("test:{}", uuid::Uuid::new_v4());
    settings
}

/// Starts the app on `pool` (from `#[sqlx::test]`) with the machine's Redis.
pub async fn spawn_app(pool: PgPool) -> TestApp {
    spawn_app_with(pool, test_settings(&redis_url())).await
}

/// Starts the app with the given settings.
pub async fn spawn_app_with(pool: PgPool, settings: Settings) -> TestApp {
    init_test_logs();
    let redis = Redis::connect(&settings.redis_options())
        .await
        .expect("Redis handle");
    let app = Application::build_with(settings, pool, redis)
        .await
        .expect("build app");
    let address = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until(std::future::pending()));
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    TestApp { address, client }
}

/// `TEST_LOG=1 cargo test …` shows the server's logs.
fn init_test_logs() {
    if std::env::var_os("TEST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("info,sqlx=warn")
            .with_test_writer()
            .try_init();
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A private `redis-server` on a loopback port, killed on drop: for tests
/// that stop Redis (they must never stop the shared one).
pub struct PrivateRedis {
    child: Option<Child>,
    pub port: u16,
}

impl PrivateRedis {
    pub fn start() -> Self {
        let port = free_port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/ensure-tools.sh installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "private redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child: Some(child),
            port,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL) and waits until it is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}
