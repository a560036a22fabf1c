//! Processes a test starts on its own: a private PostgreSQL or Redis it may
//! stop (never the shared ones), and the real server binary with every log
//! line captured; with the test database's URL and a free port for them.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use sqlx::PgPool;

use crate::support::app::{new_client, redis_url};

/// The URL of the test's own database (same server as `DATABASE_URL`).
pub fn database_url_of(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL is set for tests");
    let db = pool
        .connect_options()
        .get_database()
        .expect("database name")
        .to_owned();
    let (server, _) = base.rsplit_once('/').expect("URL with a database");
    format!("{server}/{db}")
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A private PostgreSQL (its own data directory and port), stopped and
/// removed on drop: for tests that stop PostgreSQL (never the shared one).
/// Uses the installed server binaries (scripts/ensure-tools.sh installs
/// them); as root, PostgreSQL runs as the `postgres` user, as it requires.
pub struct PrivatePostgres {
    bin: std::path::PathBuf,
    dir: std::path::PathBuf,
    pub port: u16,
    running: bool,
}

impl PrivatePostgres {
    fn as_postgres_user(program: &std::path::Path) -> Command {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout.starts_with(b"0\n"))
            .unwrap_or(false);
        if root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    pub fn start() -> Self {
        let mut versions: Vec<std::path::PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL server binaries (scripts/ensure-tools.sh installs them)")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .collect();
        versions.sort();
        let bin = versions.pop().expect("an installed initdb");
        let dir =
            std::env::temp_dir().join(format!("admitone-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("data dir");
        let _ = Command::new("chown")
            .args(["postgres:", dir.to_str().expect("utf-8")])
            .status();
        let run = |mut command: Command, what: &str| {
            let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let data = dir.join("data");
        let mut initdb = Self::as_postgres_user(&bin.join("initdb"));
        initdb.args([
            "-D",
            data.to_str().expect("utf-8"),
            "-U",
            "postgres",
            "--auth=trust",
        ]);
        run(initdb, "initdb");
        let port = free_port();
        let mut pg = Self {
            bin,
            dir,
            port,
            running: false,
        };
        let mut start = Self::as_postgres_user(&pg.bin.join("pg_ctl"));
        start.args([
            "-D",
            data.to_str().expect("utf-8"),
            "-w",
            "-l",
            pg.dir.join("server.log").to_str().expect("utf-8"),
            "-o",
            &format!(
                "-p {port} -c listen_addresses=127.0.0.1 -k {}",
                pg.dir.display()
            ),
            "start",
        ]);
        run(start, "pg_ctl start");
        pg.running = true;
        pg
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server at once (`immediate`: like a crash).
    pub fn stop(&mut self) {
        if self.running {
            let mut stop = Self::as_postgres_user(&self.bin.join("pg_ctl"));
            stop.args([
                "-D",
                self.dir.join("data").to_str().expect("utf-8"),
                "-m",
                "immediate",
                "-w",
                "stop",
            ]);
            let _ = stop.output();
            self.running = false;
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
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

/// The real server binary with every log line on (`RUST_LOG=trace`,
/// JSON), its output captured to a file; killed however the test ends.
pub struct LoggedServer {
    child: std::process::Child,
    log_path: std::path::PathBuf,
    pub address: String,
}

impl LoggedServer {
    pub async fn start(pool: &PgPool) -> Self {
        let port = free_port();
        let log_path =
            std::env::temp_dir().join(format!("admitone-log-{}.txt", uuid::Uuid::new_v4()));
        let log = std::fs::File::create(&log_path).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_server"))
            .arg("serve")
            .env("DATABASE_URL", database_url_of(pool))
            .env("REDIS_URL", redis_url())
            .env("APP_SERVER__PORT", port.to_string())
            .env(
                "APP_REDIS__KEY_PREFIX",
                format!("test:{}", uuid::Uuid::new_v4()),
            )
            .env(
                "APP_STORAGE__ROOT",
                std::env::temp_dir().join("admitone-test-storage"),
            )
            .env("APP_LOG__FORMAT", "json")
            .env("RUST_LOG", "trace")
            .stdout(log.try_clone().expect("clone"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the server");
        let server = Self {
            child,
            log_path,
            address: format!("http://127.0.0.1:{port}"),
        };
        let client = new_client();
        let deadline = Instant::now() + Duration::from_secs(30);
        while client
            .get(format!("{}/healthz", server.address))
            .send()
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server
    }

    /// Stops the server and returns everything it logged.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let logs = std::fs::read_to_string(&self.log_path).expect("read logs");
        let _ = std::fs::remove_file(&self.log_path);
        logs
    }
}

impl Drop for LoggedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
