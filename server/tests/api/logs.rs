//! Secrets never reach the logs or responses.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use sqlx::PgPool;
use tracing_subscriber::fmt::MakeWriter;

use crate::helpers::spawn_app;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn passwords_never_appear_in_logs_or_responses(pool: PgPool) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    // `#[sqlx::test]` runs on a current-thread runtime, so the server's tasks
    // log on this thread, into this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);

    let app = spawn_app(pool).await;
    let first = "Fz9-first-Secret-Passw0rd";
    let wrong = "Qx7-wrong-Secret-Passw0rd";
    let second = "Kp3-second-Secret-Passw0rd";
    let mut bodies = Vec::new();
    for (path, form) in [
        (
            "/api/auth/register",
            vec![
                ("email", "ada@example.com"),
                ("display_name", "Ada"),
                ("password", first),
                ("password_confirm", first),
            ],
        ),
        (
            "/api/auth/register",
            vec![
                ("email", "bad"),
                ("display_name", "Ada"),
                ("password", first),
                ("password_confirm", first),
            ],
        ),
        (
            "/api/auth/login",
            vec![("email", "ada@example.com"), ("password", wrong)],
        ),
        (
            "/api/auth/login",
            vec![("email", "ada@example.com"), ("password", first)],
        ),
        (
            "/api/auth/change-password",
            vec![
                ("current_password", wrong),
                ("new_password", second),
                ("new_password_confirm", second),
            ],
        ),
        (
            "/api/auth/change-password",
            vec![
                ("current_password", first),
                ("new_password", second),
                ("new_password_confirm", second),
            ],
        ),
    ] {
        let response = app.post_form(path, &form).await;
        bodies.push(response.text().await.expect("body"));
    }
    let logs = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
    assert!(
        logs.contains("/api/auth/login"),
        "the capture works: {logs}"
    );
    for secret in [first, wrong, second] {
        assert!(!logs.contains(secret), "a password reached the logs");
        for body in &bodies {
            assert!(
                !body.contains(secret),
                "a password reached a response: {body}"
            );
        }
    }
}
