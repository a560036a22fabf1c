//! The relay over the TLS production uses, against a real SMTP server that
//! speaks it (`harness::smtp` with a CA made for the test): STARTTLS
//! (`smtp://…?tls=required`), implicit TLS (`smtps://`), a private CA
//! trusted through `mail.smtp_ca_file`, and the certificates that must be
//! refused (an unknown CA, another name) without losing the mail or ever
//! falling back to plain text.

use harness::smtp::{Security, SmtpSink, TestCa};
use secrecy::SecretString;
use server::config::Settings;
use sqlx::PgPool;

use crate::support::app::spawn_app_with;
use crate::support::mail::{MAIL_WAIT, mail_settings, register, wait_until};

const USER: &str = "relay-user";
const SECRET: &str = "relay-secret";

/// A sink that requires `AUTH` and secures its connections as asked.
async fn sink(security: Security) -> SmtpSink {
    SmtpSink::start_secured(0, Some((USER.to_owned(), SECRET.to_owned())), security).await
}

/// Settings that send to `sink` with its credentials, trusting `ca_file`.
fn settings(sink: &SmtpSink, ca_file: Option<String>) -> Settings {
    let mut settings = mail_settings(sink);
    settings.mail.smtp_url = Some(SecretString::from(sink.url_with(USER, SECRET)));
    settings.mail.smtp_ca_file = ca_file;
    settings
}

/// The first failed attempt's recorded reason, for the mail to `to`.
async fn first_failure(pool: &PgPool, to: &str) -> String {
    wait_until(
        pool,
        &format!(
            "SELECT last_error FROM mail_outbox \
             WHERE to_address = '{to}' AND attempts >= 1 AND sent_at IS NULL"
        ),
    )
    .await
}

#[sqlx::test(migrations = "../migrations")]
async fn starttls_with_a_private_ca_sends_and_signs_in_inside_tls(pool: PgPool) {
    let ca = TestCa::new();
    let sink = sink(Security::StartTls(ca.server_config(&["127.0.0.1"]))).await;
    assert!(sink.url().contains("?tls=required"), "{}", sink.url());
    let ca_file = ca.pem_file();
    let app = spawn_app_with(pool, settings(&sink, Some(ca_file.path()))).await;
    register(&app, "ada@example.com", "en").await;
    let mail = sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
    assert!(mail.over_tls, "the mail came over plain text");
    // The sink refuses AUTH before STARTTLS (530): a mail delivered signed
    // in was signed in inside TLS.
    assert_eq!(mail.auth_user.as_deref(), Some(USER));
    assert_eq!(sink.handshake_failures(), Vec::<String>::new());
}

#[sqlx::test(migrations = "../migrations")]
async fn implicit_tls_with_a_private_ca_sends_inside_tls(pool: PgPool) {
    let ca = TestCa::new();
    let sink = sink(Security::Implicit(ca.server_config(&["127.0.0.1"]))).await;
    assert!(sink.url().starts_with("smtps://"), "{}", sink.url());
    let ca_file = ca.pem_file();
    let app = spawn_app_with(pool, settings(&sink, Some(ca_file.path()))).await;
    register(&app, "ada@example.com", "en").await;
    let mail = sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
    assert!(mail.over_tls);
    assert_eq!(mail.auth_user.as_deref(), Some(USER));
}

/// A server whose certificate another CA signed (a man in the middle, or
/// the wrong CA file) gets nothing: the relay refuses the handshake, says
/// why in the outbox, and keeps the mail. With the right CA, it goes.
#[sqlx::test(migrations = "../migrations")]
async fn a_certificate_of_a_ca_not_trusted_is_refused_and_the_mail_kept(pool: PgPool) {
    for implicit in [false, true] {
        let theirs = TestCa::new();
        let config = theirs.server_config(&["127.0.0.1"]);
        let sink = sink(if implicit {
            Security::Implicit(config)
        } else {
            Security::StartTls(config)
        })
        .await;
        let ours = TestCa::new().pem_file();
        let app = spawn_app_with(pool.clone(), settings(&sink, Some(ours.path()))).await;
        let email = format!("ada-{implicit}@example.com");
        register(&app, &email, "en").await;
        assert_eq!(
            first_failure(&app.pool, &email).await,
            "the SMTP server's certificate was refused",
            "implicit TLS: {implicit}"
        );
        assert!(
            sink.received().is_empty(),
            "a mail went to an untrusted server"
        );
        // The client refused (its alert reached the server), not the server.
        let failures = sink.handshake_failures();
        assert!(
            failures.iter().any(|f| f.contains("UnknownCA")),
            "{failures:?}"
        );
        drop(app);

        // The operator fixes the CA file: the kept mail goes out.
        let right = theirs.pem_file();
        let app = spawn_app_with(pool.clone(), settings(&sink, Some(right.path()))).await;
        let mail = sink.wait_for(&email, "Finish", MAIL_WAIT).await;
        assert!(mail.over_tls);
        drop(app);
    }
}

/// The bundled roots do not include a private CA: without
/// `mail.smtp_ca_file` its certificate is refused.
#[sqlx::test(migrations = "../migrations")]
async fn without_the_ca_file_a_private_ca_is_refused(pool: PgPool) {
    let ca = TestCa::new();
    let sink = sink(Security::StartTls(ca.server_config(&["127.0.0.1"]))).await;
    let app = spawn_app_with(pool, settings(&sink, None)).await;
    register(&app, "ada@example.com", "en").await;
    assert_eq!(
        first_failure(&app.pool, "ada@example.com").await,
        "the SMTP server's certificate was refused"
    );
    assert!(sink.received().is_empty());
    assert!(
        sink.handshake_failures()
            .iter()
            .any(|f| f.contains("UnknownCA")),
        "{:?}",
        sink.handshake_failures()
    );
}

/// A certificate the trusted CA signed for another host is refused too:
/// the name is checked, not only the signature.
#[sqlx::test(migrations = "../migrations")]
async fn a_certificate_for_another_name_is_refused(pool: PgPool) {
    let ca = TestCa::new();
    let sink = sink(Security::Implicit(
        ca.server_config(&["mail.elsewhere.test"]),
    ))
    .await;
    let ca_file = ca.pem_file();
    let app = spawn_app_with(pool, settings(&sink, Some(ca_file.path()))).await;
    register(&app, "ada@example.com", "en").await;
    assert_eq!(
        first_failure(&app.pool, "ada@example.com").await,
        "the SMTP server's certificate was refused"
    );
    assert!(sink.received().is_empty());
    assert!(
        sink.handshake_failures()
            .iter()
            .any(|f| f.contains("BadCertificate")),
        "{:?}",
        sink.handshake_failures()
    );
}

/// `?tls=required` means it: a server that offers no STARTTLS gets no
/// mail and no password, and the outbox says why.
#[sqlx::test(migrations = "../migrations")]
async fn a_tls_url_never_falls_back_to_plain_text(pool: PgPool) {
    let sink = sink(Security::Plain).await;
    let ca_file = TestCa::new().pem_file();
    let mut settings = settings(&sink, Some(ca_file.path()));
    settings.mail.smtp_url = Some(SecretString::from(format!(
        "{}?tls=required",
        sink.url_with(USER, SECRET)
    )));
    let app = spawn_app_with(pool, settings).await;
    register(&app, "ada@example.com", "en").await;
    assert_eq!(
        first_failure(&app.pool, "ada@example.com").await,
        "the SMTP server does not offer STARTTLS"
    );
    assert!(sink.received().is_empty());
}

/// `smtps://` to a server that speaks plain SMTP (the port-587 mistake):
/// no handshake, the outbox says so, nothing is sent in clear.
#[sqlx::test(migrations = "../migrations")]
async fn implicit_tls_to_a_plain_server_fails_its_handshake(pool: PgPool) {
    let sink = sink(Security::Plain).await;
    let ca_file = TestCa::new().pem_file();
    let mut settings = settings(&sink, Some(ca_file.path()));
    settings.mail.smtp_url = Some(SecretString::from(format!(
        "smtps://{USER}:{SECRET}@127.0.0.1:{}",
        sink.port()
    )));
    let app = spawn_app_with(pool, settings).await;
    register(&app, "ada@example.com", "en").await;
    assert_eq!(
        first_failure(&app.pool, "ada@example.com").await,
        "the TLS handshake with the SMTP server failed"
    );
    assert!(sink.received().is_empty());
}
