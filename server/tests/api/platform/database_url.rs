//! The server refuses, at start-up, a database URL the driver would only
//! half honour: sqlx ignores `target_session_attrs` and host lists (with a
//! log line), so such a URL looks highly available and is not.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use sqlx::PgPool;

use crate::support::processes::{database_url_of, free_port};

/// Starts `server serve` with `database_url` and waits for it to exit;
/// one still running after 30 s has accepted the URL (it is killed).
fn serve_with(database_url: &str) -> Option<(std::process::ExitStatus, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("APP_SERVER__PORT", free_port().to_string())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait for the server") {
            let mut stderr = String::new();
            std::io::Read::read_to_string(
                child.stderr.as_mut().expect("piped stderr"),
                &mut stderr,
            )
            .expect("read stderr");
            return Some((status, stderr));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_url_with_parameters_the_driver_ignores_is_refused_at_start_up(pool: PgPool) {
    let base = database_url_of(&pool);
    for (url, named) in [
        (
            format!("{base}?target_session_attrs=read-write"),
            "target_session_attrs",
        ),
        (format!("{base}?connect_timeout=3"), "connect_timeout"),
        (with_a_second_host(&base), "2 hosts"),
    ] {
        let (status, stderr) = serve_with(&url)
            .unwrap_or_else(|| panic!("the server started with {named}: it must refuse"));
        assert!(!status.success(), "{named}: {status}");
        assert!(stderr.contains("database.url"), "{named}: {stderr}");
        assert!(stderr.contains(named), "{named}: {stderr}");
    }
    // The same URL without them is served: every test that starts the
    // binary (`support::processes::LoggedServer`) gives it this one.
}

/// `postgres://user@host:port/db` → `postgres://user@host:port,localhost:5432/db`.
fn with_a_second_host(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (authority, path) = rest.split_once('/').expect("a URL with a database");
    format!("{scheme}://{authority},localhost:5432/{path}")
}
