//! Where mail goes: an SMTP server (lettre, with STARTTLS or implicit TLS
//! and authentication from `mail.smtp_url`), or, in development when no
//! server is configured, the dev mailbox: a table the `/dev/mailbox` page
//! shows. Production refuses to start without an SMTP server
//! (`config::validate`), so the dev mailbox never takes a real mail.

use std::time::Duration;

use anyhow::Context as _;
use engine::{db::PgPool, delivery::Attempted};
use lettre::{
    AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor,
    message::{Mailbox, MultiPart, header},
    transport::smtp::{
        AsyncSmtpTransportBuilder,
        client::{Certificate, Tls, TlsParameters},
    },
};
use rustls::pki_types::{CertificateDer, pem::PemObject as _};
use secrecy::ExposeSecret as _;
use uuid::Uuid;

use super::MailSettings;
use super::templates::Rendered;

/// The development sender, when `mail.from` is empty.
const DEV_FROM: &str = "AdmitOne <no-reply@admitone.test>";

/// Where mail goes.
#[derive(Clone)]
pub enum Transport {
    Smtp {
        smtp: AsyncSmtpTransport<Tokio1Executor>,
        /// Bound on one whole conversation (lettre bounds the connect
        /// only: a server that accepts and then stalls would hold the
        /// relay for good).
        timeout: Duration,
    },
    /// Development only: the `dev_mailbox` table.
    DevMailbox(PgPool),
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Smtp { .. } => "Transport::Smtp",
            Self::DevMailbox(_) => "Transport::DevMailbox",
        })
    }
}

/// The SMTP transport `settings` describe, if they name a server (one
/// connection per mail: no pool).
pub fn smtp(settings: &MailSettings) -> anyhow::Result<Option<AsyncSmtpTransport<Tokio1Executor>>> {
    Ok(smtp_builder(settings)?.map(AsyncSmtpTransportBuilder::build))
}

/// What [`smtp`] builds: checks the settings (the URL, the CA file)
/// without starting anything, so configuration checks can run anywhere.
pub fn smtp_builder(settings: &MailSettings) -> anyhow::Result<Option<AsyncSmtpTransportBuilder>> {
    let Some(url) = &settings.smtp_url else {
        return Ok(None);
    };
    let url = url.expose_secret();
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
        .map_err(|e| anyhow::anyhow!("mail.smtp_url is not an SMTP URL: {e}"))?
        .timeout(Some(Duration::from_millis(settings.timeout_ms.max(1))));
    let url_tls = url_tls(url)?;
    if let Some(ca) = &settings.smtp_ca_file {
        // A relay with a certificate of a private CA: trust that CA (as
        // well as the bundled roots), for whichever TLS the URL asked for.
        let pem = std::fs::read(ca).with_context(|| format!("reading mail.smtp_ca_file {ca}"))?;
        // lettre takes a file without a certificate (empty, a key) as an
        // empty list: every mail would then fail, long after start.
        anyhow::ensure!(
            CertificateDer::pem_slice_iter(&pem).any(|c| c.is_ok()),
            "mail.smtp_ca_file {ca} holds no PEM certificate"
        );
        let certificate = Certificate::from_pem(&pem)
            .map_err(|e| anyhow::anyhow!("mail.smtp_ca_file {ca} is not a PEM certificate: {e}"))?;
        let host = lettre_url_host(url)?;
        let parameters = TlsParameters::builder(host)
            .add_root_certificate(certificate)
            .build_rustls()
            .map_err(|e| anyhow::anyhow!("TLS parameters for the SMTP server: {e}"))?;
        let tls = match url_tls {
            UrlTls::Implicit => Tls::Wrapper(parameters),
            UrlTls::StartTlsOpportunistic => Tls::Opportunistic(parameters),
            UrlTls::StartTlsRequired => Tls::Required(parameters),
            UrlTls::None => anyhow::bail!(
                "mail.smtp_ca_file is set but mail.smtp_url asks for no TLS: \
                 use smtps:// (implicit TLS) or ?tls=required (STARTTLS)"
            ),
        };
        builder = builder.tls(tls);
    }
    Ok(Some(builder))
}

/// The TLS an SMTP URL asks for, read as lettre reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UrlTls {
    /// `smtp://host` (plain: no `tls` parameter).
    None,
    /// `smtp://host?tls=required`.
    StartTlsRequired,
    /// `smtp://host?tls=opportunistic`.
    StartTlsOpportunistic,
    /// `smtps://host`.
    Implicit,
}

/// The TLS `url` asks for, after refusing what lettre would silently
/// ignore (a parameter other than `tls`, such as `TLS=required`, which
/// lettre reads as plain SMTP) and a password that could cross the
/// network in clear: credentials go to a server that is not this machine
/// only over `smtps://` or `?tls=required` (with `tls=opportunistic`, a
/// man in the middle strips STARTTLS from the server's answer).
fn url_tls(url: &str) -> anyhow::Result<UrlTls> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| anyhow::anyhow!("mail.smtp_url is not a URL: {e}"))?;
    let mut tls = None;
    for (key, value) in parsed.query_pairs() {
        anyhow::ensure!(
            key == "tls",
            "mail.smtp_url has a parameter the mailer would ignore: {key:?} \
             (only tls=required or tls=opportunistic)"
        );
        // lettre takes the first; a second would make this check read
        // another than the mailer uses.
        anyhow::ensure!(tls.is_none(), "mail.smtp_url names tls= twice");
        tls = Some(value.into_owned());
    }
    let asked = match (parsed.scheme(), tls.as_deref()) {
        ("smtps", _) => UrlTls::Implicit,
        ("smtp", Some("required")) => UrlTls::StartTlsRequired,
        ("smtp", Some("opportunistic")) => UrlTls::StartTlsOpportunistic,
        _ => UrlTls::None,
    };
    let loopback = parsed.host_str().is_some_and(|host| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    let credentials = !parsed.username().is_empty() || parsed.password().is_some();
    anyhow::ensure!(
        !credentials || loopback || matches!(asked, UrlTls::Implicit | UrlTls::StartTlsRequired),
        "mail.smtp_url would send its password to another machine without \
         assured TLS: use smtps:// (implicit TLS) or ?tls=required (STARTTLS)"
    );
    Ok(asked)
}

/// The host of an SMTP URL (its TLS name).
fn lettre_url_host(url: &str) -> anyhow::Result<String> {
    let rest = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .context("mail.smtp_url has no scheme")?;
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or(v6)
    } else {
        host_port.split(':').next().unwrap_or(host_port)
    };
    anyhow::ensure!(!host.is_empty(), "mail.smtp_url has no host");
    Ok(host.to_owned())
}

/// The sender `settings` name (the development default when empty).
pub fn from_address(settings: &MailSettings) -> anyhow::Result<Mailbox> {
    let raw = if settings.from.trim().is_empty() {
        DEV_FROM
    } else {
        settings.from.trim()
    };
    raw.parse::<Mailbox>()
        .map_err(|e| anyhow::anyhow!("mail.from {raw:?} is not an address: {e}"))
}

impl Transport {
    /// SMTP when `mail.smtp_url` is set, else the dev mailbox (the relay
    /// runs only where that is allowed, see `Settings::dev_mailbox`).
    pub fn new(settings: &MailSettings, pool: PgPool) -> anyhow::Result<Self> {
        Ok(match smtp(settings)? {
            Some(smtp) => Self::Smtp {
                smtp,
                timeout: Duration::from_millis(settings.timeout_ms.max(1)),
            },
            None => Self::DevMailbox(pool),
        })
    }

    /// Sends one mail. Only coarse words are recorded of a failure (an
    /// operator reads them), never the text of a network error.
    pub async fn send(
        &self,
        mail_id: Uuid,
        from: &Mailbox,
        to: &str,
        rendered: &Rendered,
    ) -> Attempted {
        // A bare address, never a display form: `x<y@z>` is refused, not
        // mailed to `y@z`.
        let to = match to.parse::<lettre::Address>() {
            Ok(address) => Mailbox::new(None, address),
            Err(_) => {
                return Attempted::Permanent {
                    status: None,
                    error: "the recipient is not a valid address".to_owned(),
                };
            }
        };
        match self {
            Self::Smtp { smtp, timeout } => {
                let message = match message(mail_id, from, to, rendered) {
                    Ok(message) => message,
                    Err(error) => {
                        tracing::error!(error = format!("{error:#}"), %mail_id, "a mail could not be built");
                        return Attempted::Permanent {
                            status: None,
                            error: "the mail could not be built".to_owned(),
                        };
                    }
                };
                let sent = match tokio::time::timeout(*timeout, smtp.send(message)).await {
                    Ok(sent) => sent,
                    Err(_) => {
                        tracing::warn!(%mail_id, "mail not sent: the SMTP conversation timed out");
                        return Attempted::Failed {
                            status: None,
                            error: "the SMTP server timed out".to_owned(),
                        };
                    }
                };
                match sent {
                    Ok(response) => Attempted::Delivered {
                        status: u16::from(response.code()),
                    },
                    Err(error) => {
                        let status = error.status().map(u16::from);
                        tracing::warn!(error = %error, %mail_id, "mail not sent");
                        if let Some(words) = tls_failure(&error) {
                            return Attempted::Failed {
                                status,
                                error: words.to_owned(),
                            };
                        }
                        // Every refusal is tried again (with backoff) until
                        // the attempts run out: a reply code cannot tell a
                        // mailbox that does not exist (550 5.1.1) from a
                        // sender the relay refuses (550 5.7.1, a typo in
                        // mail.from), and the second must not lose mail.
                        Attempted::Failed {
                            status,
                            error: if error.is_permanent() {
                                "the SMTP server refused the mail"
                            } else if error.is_transient() {
                                "the SMTP server asked to try again later"
                            } else if error.is_timeout() {
                                "the SMTP server timed out"
                            } else {
                                "could not talk to the SMTP server"
                            }
                            .to_owned(),
                        }
                    }
                }
            }
            Self::DevMailbox(pool) => {
                let stored = engine::mail::deliver_to_dev_mailbox(
                    pool,
                    mail_id,
                    to.email.as_ref(),
                    &rendered.subject,
                    &rendered.text,
                    &rendered.html,
                )
                .await;
                match stored {
                    Ok(_) => Attempted::Delivered { status: 250 },
                    Err(error) => {
                        tracing::warn!(error = format!("{error:#}"), %mail_id, "dev mailbox unavailable");
                        Attempted::Failed {
                            status: None,
                            error: "the dev mailbox is unavailable".to_owned(),
                        }
                    }
                }
            }
        }
    }
}

/// What an operator must fix when TLS is why a mail did not go (a
/// certificate refused, a handshake failed, no STARTTLS where the URL
/// requires it), or `None` when TLS is not the cause. Mailed like any
/// failure: retried, never dropped.
fn tls_failure(error: &lettre::transport::smtp::Error) -> Option<&'static str> {
    // lettre says so only in its message (a client error, no type of its own).
    if error.is_client() && error.to_string().contains("STARTTLS is not supported") {
        return Some("the SMTP server does not offer STARTTLS");
    }
    // A handshake error is a rustls error inside an io::Error (whose
    // `source()` skips it: look inside with `get_ref`).
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        let tls = current.downcast_ref::<rustls::Error>().or_else(|| {
            current
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(tls) = tls {
            return Some(match tls {
                rustls::Error::InvalidCertificate(_) => "the SMTP server's certificate was refused",
                _ => "the TLS handshake with the SMTP server failed",
            });
        }
        cause = current.source();
    }
    None
}

/// A `multipart/alternative` mail (plain text, then HTML). Its
/// `Message-ID` is the outbox row's, so a mail sent again after a crash
/// is recognisably the same mail.
fn message(
    mail_id: Uuid,
    from: &Mailbox,
    to: Mailbox,
    rendered: &Rendered,
) -> anyhow::Result<Message> {
    let domain = from.email.domain().to_owned();
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(rendered.subject.clone())
        .message_id(Some(format!("<{mail_id}@{domain}>")))
        .header(AutoSubmitted)
        .multipart(MultiPart::alternative_plain_html(
            rendered.text.clone(),
            rendered.html.clone(),
        ))
        .context("building a mail")
}

/// `Auto-Submitted: auto-generated` (RFC 3834): autoresponders do not
/// answer it.
#[derive(Debug, Clone, Copy)]
struct AutoSubmitted;

impl header::Header for AutoSubmitted {
    fn name() -> header::HeaderName {
        header::HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }

    fn display(&self) -> header::HeaderValue {
        header::HeaderValue::new(Self::name(), "auto-generated".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_name_is_the_urls_host() {
        for (url, host) in [
            (
                "smtp://mail.example.com:587?tls=required",
                "mail.example.com",
            ),
            (
                "smtps://user:p%40ss@mail.example.com:465",
                "mail.example.com",
            ),
            ("smtp://user:pass@[::1]:2525", "::1"),
            ("smtp://127.0.0.1", "127.0.0.1"),
            ("smtp://relay.example.com/ehlo-name", "relay.example.com"),
        ] {
            assert_eq!(lettre_url_host(url).expect(url), host);
        }
        assert!(lettre_url_host("smtp://").is_err());
        assert!(lettre_url_host("no scheme").is_err());
    }

    #[test]
    fn settings_describe_a_transport_or_say_what_is_wrong() {
        let mut settings = MailSettings::default();
        assert!(smtp_builder(&settings).expect("none").is_none());
        settings.smtp_url = Some("smtp://127.0.0.1:2525".to_owned().into());
        assert!(smtp_builder(&settings).expect("plain").is_some());
        settings.smtp_url = Some("smtp://mail.example.com?tls=required".to_owned().into());
        assert!(smtp_builder(&settings).expect("STARTTLS").is_some());
        settings.smtp_url = Some("http://mail.example.com".to_owned().into());
        assert!(smtp_builder(&settings).is_err());
        settings.smtp_url = Some("smtps://mail.example.com".to_owned().into());
        settings.smtp_ca_file = Some("/nonexistent/ca.pem".to_owned());
        let error = format!("{:#}", smtp_builder(&settings).expect_err("missing file"));
        assert!(error.contains("mail.smtp_ca_file"), "{error}");
    }

    #[test]
    fn urls_are_read_for_the_tls_they_ask_for() {
        for (url, tls) in [
            ("smtp://host:25", UrlTls::None),
            ("smtp://host:587?tls=required", UrlTls::StartTlsRequired),
            (
                "smtp://host:587?tls=opportunistic",
                UrlTls::StartTlsOpportunistic,
            ),
            ("smtps://host:465", UrlTls::Implicit),
            // The words in a password are not a parameter.
            ("smtp://u:tls=opportunistic@localhost:25", UrlTls::None),
        ] {
            assert_eq!(url_tls(url).expect(url), tls, "{url}");
        }
    }

    /// What lettre would ignore, and a password that could cross the
    /// network in clear, are refused; loopback may sign in over plain SMTP.
    #[test]
    fn a_url_that_could_leak_its_password_or_be_misread_is_refused() {
        for url in [
            "smtp://u:p@mail.example.com:587?tls=opportunistic",
            "smtp://u:p@mail.example.com:25",
            "smtp://u@mail.example.com:25",
            "smtp://u:p@mail.example.com:587?TLS=required",
            "smtp://mail.example.com:587?TLS=required",
            "smtp://mail.example.com:587?tls=required&timeout=5",
            "smtp://u:p@mail.example.com:587?tls=opportunistic&tls=required",
        ] {
            assert!(url_tls(url).is_err(), "{url}");
        }
        for url in [
            "smtp://u:p@127.0.0.1:2525",
            "smtp://u:p@[::1]:2525",
            "smtp://u:p@localhost:2525",
            "smtp://mail.example.com:25",
            "smtp://mail.example.com:587?tls=opportunistic",
            "smtp://u:p@mail.example.com:587?tls=required",
            "smtps://u:p@mail.example.com:465",
        ] {
            assert!(url_tls(url).is_ok(), "{url}");
        }
        let settings = MailSettings {
            smtp_url: Some(
                "smtp://u:p@mail.example.com:587?tls=opportunistic"
                    .to_owned()
                    .into(),
            ),
            ..MailSettings::default()
        };
        let error = format!("{:#}", smtp_builder(&settings).expect_err("opportunistic"));
        assert!(error.contains("password"), "{error}");
    }

    /// A file that holds no certificate is refused at start, not at the
    /// first mail.
    #[test]
    fn a_ca_file_without_a_certificate_is_refused() {
        let path = std::env::temp_dir().join(format!("admitone-empty-ca-{}.pem", Uuid::new_v4()));
        let mut settings = MailSettings {
            smtp_url: Some("smtps://mail.example.com:465".to_owned().into()),
            smtp_ca_file: Some(path.display().to_string()),
            ..MailSettings::default()
        };
        for content in [
            "",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ] {
            std::fs::write(&path, content).expect("write");
            let error = format!("{:#}", smtp_builder(&settings).expect_err("no certificate"));
            assert!(error.contains("no PEM certificate"), "{error}");
        }
        let _ = std::fs::remove_file(&path);
        // Control: a file with a certificate is taken.
        let ca = harness::smtp::TestCa::new().pem_file();
        settings.smtp_ca_file = Some(ca.path());
        assert!(smtp_builder(&settings).expect("a certificate").is_some());
    }

    /// A CA file says the operator expects TLS; a plain URL says none. The
    /// server refuses to guess which was meant.
    #[test]
    fn a_ca_file_with_a_url_that_asks_for_no_tls_is_refused() {
        let ca = harness::smtp::TestCa::new().pem_file();
        let mut settings = MailSettings {
            smtp_ca_file: Some(ca.path()),
            ..MailSettings::default()
        };
        for url in [
            "smtps://mail.example.com:465",
            "smtp://mail.example.com:587?tls=required",
            "smtp://mail.example.com:587?tls=opportunistic",
        ] {
            settings.smtp_url = Some(url.to_owned().into());
            assert!(smtp_builder(&settings).expect(url).is_some(), "{url}");
        }
        settings.smtp_url = Some("smtp://u:tls=required@localhost:25".to_owned().into());
        let error = format!("{:#}", smtp_builder(&settings).expect_err("plain URL"));
        assert!(error.contains("asks for no TLS"), "{error}");
    }

    #[test]
    fn the_sender_is_an_address() {
        let mut settings = MailSettings::default();
        assert_eq!(
            from_address(&settings)
                .expect("dev default")
                .email
                .to_string(),
            "no-reply@admitone.test"
        );
        settings.from = "Acme Courses <courses@acme.example>".into();
        assert_eq!(
            from_address(&settings).expect("parses").email.to_string(),
            "courses@acme.example"
        );
        settings.from = "not an address".into();
        assert!(from_address(&settings).is_err());
    }
}
