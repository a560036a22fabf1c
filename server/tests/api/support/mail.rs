//! Mail in tests: a test server whose mail goes to its own SMTP sink, how
//! long to wait for a mail, and the links mailed links are derived with.

use std::time::Duration;

use secrecy::SecretString;
use server::config::Settings;
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, redis_url, spawn_app_with, test_settings};

/// The key test servers derive mailed links with (from the development
/// session key every test server uses).
pub fn link_key() -> engine::accounts::links::LinkKey {
    engine::accounts::links::LinkKey::derive(&test_settings(&redis_url()).session_key())
}

/// Starts the app with its mail going to a real SMTP server of its own
/// (started here; read what arrived from it).
pub async fn spawn_app_with_mail(pool: PgPool) -> (TestApp, harness::smtp::SmtpSink) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    (app, sink)
}

/// Test settings that send mail to `sink`, with quick retries.
pub fn mail_settings(sink: &harness::smtp::SmtpSink) -> Settings {
    let mut settings = test_settings(&redis_url());
    settings.mail.smtp_url = Some(SecretString::from(sink.url()));
    settings.mail.from = "AdmitOne Tests <no-reply@admitone.test>".into();
    settings.mail.poll_interval_ms = 50;
    settings.mail.timeout_ms = 5_000;
    settings.mail.backoff_base_ms = 100;
    settings.mail.backoff_max_secs = 1;
    settings
}

/// How long a test waits for a mail to arrive.
pub const MAIL_WAIT: Duration = Duration::from_secs(20);

/// The `token` of a mailed link.
pub fn token_of(link: &str) -> String {
    link.split_once("token=")
        .map(|(_, t)| t.split('&').next().unwrap_or(t).to_owned())
        .unwrap_or_else(|| panic!("no token in {link}"))
}

/// Polls `query` (one text column, NULL while not there yet) until it has a value.
pub async fn wait_until(pool: &PgPool, query: &str) -> String {
    let deadline = tokio::time::Instant::now() + MAIL_WAIT;
    loop {
        if let Some(Some(value)) = sqlx::query_scalar::<_, Option<String>>(query)
            .fetch_optional(pool)
            .await
            .expect("poll")
        {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {query}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The password [`register`] signs up with.
pub const PASSWORD: &str = "correct horse battery";

/// Registers `email` through the page's server function, in `lang`: the
/// address is mailed a link to finish an account (or, if it has one, a
/// note to its owner). The mail is queued after the answer, in a task of
/// its own: an accepted registration returns once it is queued.
pub async fn register(app: &TestApp, email: &str, lang: &str) -> reqwest::Response {
    let queued = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM mail_outbox WHERE to_address = $1")
            .bind(email.trim().to_lowercase())
            .fetch_one(&app.pool)
            .await
            .expect("count the outbox")
    };
    let before = queued().await;
    let response = new_client()
        .post(format!("{}/api/auth/register", app.address))
        .header("accept-language", lang)
        .form(&[("email", email)])
        .send()
        .await
        .expect("register");
    if response.status().as_u16() < 400 {
        let deadline = tokio::time::Instant::now() + MAIL_WAIT;
        while queued().await == before {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no mail queued for {email}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    response
}

/// The secret of a signup link for `email` (an address without an
/// account), made as registration makes one, without reading a mail.
pub async fn signup_token(pool: &PgPool, email: &str) -> String {
    use engine::accounts::{Email, links::LinkPurpose, signup};
    use secrecy::ExposeSecret as _;
    let requested = signup::request(
        pool,
        &link_key(),
        &Email::parse(email).expect("email"),
        model::Lang::En,
        None,
    )
    .await
    .expect("a registration");
    assert_eq!(
        requested,
        signup::Requested::LinkSent,
        "{email} has no account"
    );
    let id: uuid::Uuid = sqlx::query_scalar(
        "SELECT id FROM signup_links WHERE email = $1 ORDER BY created_at DESC LIMIT 1",
    )
    .bind(email)
    .fetch_one(pool)
    .await
    .expect("the link");
    link_key()
        .token(LinkPurpose::SignUp, id)
        .expose_secret()
        .to_owned()
}

/// Finishes a registration with `token` as the link's form does, as
/// `client` (display name Ada, [`PASSWORD`]).
pub async fn finish_registration(
    app: &TestApp,
    client: &reqwest::Client,
    token: &str,
) -> reqwest::Response {
    client
        .post(format!("{}/api/auth/register/finish", app.address))
        .header("accept-language", "en")
        .form(&[
            ("token", token),
            ("display_name", "Ada"),
            ("password", PASSWORD),
            ("password_confirm", PASSWORD),
        ])
        .send()
        .await
        .expect("finish a registration")
}

/// Signs `client` up as `email`, an address without an account, the way a
/// person does minus the mailbox: a signup link, then its form. Signed in
/// afterwards, the address verified.
pub async fn sign_up(app: &TestApp, client: &reqwest::Client, email: &str) {
    let token = signup_token(&app.pool, email).await;
    let response = finish_registration(app, client, &token).await;
    assert!(
        response.status().is_success() || response.status().is_redirection(),
        "{}",
        response.status()
    );
}
