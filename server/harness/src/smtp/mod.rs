//! A real SMTP server for the tests: it speaks SMTP over TCP (EHLO, AUTH
//! PLAIN and LOGIN, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP,
//! QUIT) and keeps what arrived, parsed, for the test to read. The server
//! under test sends to it with lettre exactly as it would send to a
//! provider: nothing of the sender is mocked.
//!
//! A test can make the next DATA commands fail (a `451` the sender must
//! retry, a `550` it must give up on) and can require authentication.
//! It speaks plain SMTP, or TLS as production's providers do ([`Security`]):
//! STARTTLS offered and required (port 587), or TLS from the first byte
//! (port 465), with a certificate of a CA made for the test run
//! ([`TestCa`]). The `smtp-sink` binary runs one for the Playwright
//! journeys and serves what arrived as JSON.

mod conversation;
mod tls;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use rustls::ServerConfig;
use serde::Serialize;
use tokio::{
    net::{TcpListener, TcpStream},
    sync::Notify,
};
use tokio_rustls::TlsAcceptor;

use conversation::{Ended, Phase, converse};
pub use tls::{PemFile, TestCa};

/// One mail that arrived.
#[derive(Debug, Clone, Serialize)]
pub struct Received {
    /// The envelope sender (`MAIL FROM`).
    pub from: String,
    /// The envelope recipients (`RCPT TO`).
    pub to: Vec<String>,
    /// The user an `AUTH` proved, if any.
    pub auth_user: Option<String>,
    /// Whether it arrived inside TLS (after STARTTLS, or implicit TLS).
    pub over_tls: bool,
    pub subject: String,
    pub message_id: String,
    /// The `text/plain` part.
    pub text: String,
    /// The `text/html` part.
    pub html: String,
    /// The `Content-Type` of the whole mail.
    pub content_type: String,
    /// The mail as sent (headers and body).
    #[serde(skip)]
    pub raw: Vec<u8>,
}

impl Received {
    /// The first `http(s)://` link in the text part that contains `path`.
    pub fn link(&self, path: &str) -> Option<String> {
        self.text
            .split_whitespace()
            .find(|w| (w.starts_with("http://") || w.starts_with("https://")) && w.contains(path))
            .map(str::to_owned)
    }
}

/// What the next DATA commands answer.
#[derive(Debug, Clone, Copy)]
struct Failing {
    remaining: u32,
    reply: &'static str,
}

/// How the sink secures its connections.
#[derive(Clone, Default)]
pub enum Security {
    /// Plain SMTP (a relay on the same host or network, port 25).
    #[default]
    Plain,
    /// STARTTLS offered and required before `AUTH` and `MAIL` (port 587).
    StartTls(Arc<ServerConfig>),
    /// TLS from the first byte (port 465).
    Implicit(Arc<ServerConfig>),
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain => "Plain",
            Self::StartTls(_) => "StartTls",
            Self::Implicit(_) => "Implicit",
        })
    }
}

#[derive(Debug, Default)]
struct Inner {
    received: Mutex<Vec<Received>>,
    failing: Mutex<Option<Failing>>,
    /// Accept connections and never answer (a server that hangs).
    stalled: std::sync::atomic::AtomicBool,
    credentials: Option<(String, String)>,
    security: Security,
    /// Why each TLS handshake that failed failed, in order.
    handshake_failures: Mutex<Vec<String>>,
    arrived: Notify,
}

/// A running SMTP server on a loopback port, on a thread of its own; it
/// stops when the last clone of it is dropped.
#[derive(Debug, Clone)]
pub struct SmtpSink {
    port: u16,
    inner: Arc<Inner>,
    /// Dropped with the last clone: the sink's thread then ends.
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl SmtpSink {
    /// Starts a sink that accepts anyone.
    pub async fn start() -> Self {
        Self::start_on(0, None).await
    }

    /// Starts a sink that takes mail only after `AUTH` with these
    /// credentials.
    pub async fn start_with_auth(user: &str, password: &str) -> Self {
        Self::start_on(0, Some((user.to_owned(), password.to_owned()))).await
    }

    /// Starts a sink on `port` (0: any free one).
    pub async fn start_on(port: u16, credentials: Option<(String, String)>) -> Self {
        Self::start_secured(port, credentials, Security::Plain).await
    }

    /// Starts a sink on `port` (0: any free one) that secures its
    /// connections as `security` says.
    pub async fn start_secured(
        port: u16,
        credentials: Option<(String, String)>,
        security: Security,
    ) -> Self {
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind the SMTP sink");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("the sink's address").port();
        let inner = Arc::new(Inner {
            credentials,
            security,
            ..Inner::default()
        });
        let serving = inner.clone();
        // Its own thread and runtime: the sink answers even while the
        // test's runtime is blocked (a test server being dropped waits for
        // its relay's round, which is talking to this sink). It stops when
        // the last handle to it is dropped.
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("smtp-sink".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the SMTP sink's runtime");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("the sink's listener");
                    let accepting = async {
                        while let Ok((stream, _)) = listener.accept().await {
                            // Replies go out at once, as a real server's do
                            // (Nagle's algorithm would hold each behind the
                            // client's delayed ACK: ~40 ms a command, 200 ms
                            // a mail).
                            let _ = stream.set_nodelay(true);
                            let inner = serving.clone();
                            tokio::spawn(async move {
                                let _ = serve(stream, &inner).await;
                            });
                        }
                    };
                    tokio::select! {
                        () = accepting => {}
                        _ = stopped => {}
                    }
                });
            })
            .expect("spawn the SMTP sink's thread");
        Self {
            port,
            inner,
            _stop: Arc::new(stop),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `mail.smtp_url` that sends here, on loopback, as the sink's
    /// [`Security`] asks: `smtp://` (plain), `smtp://…?tls=required`
    /// (STARTTLS) or `smtps://` (implicit TLS).
    pub fn url(&self) -> String {
        self.url_for("127.0.0.1")
    }

    /// [`url`](Self::url) with credentials, for a sink started with
    /// [`start_with_auth`](Self::start_with_auth).
    pub fn url_with(&self, user: &str, password: &str) -> String {
        self.url_for(&format!("{user}:{password}@127.0.0.1"))
    }

    fn url_for(&self, authority: &str) -> String {
        let port = self.port;
        match self.inner.security {
            Security::Plain => format!("smtp://{authority}:{port}"),
            Security::StartTls(_) => format!("smtp://{authority}:{port}?tls=required"),
            Security::Implicit(_) => format!("smtps://{authority}:{port}"),
        }
    }

    /// Why each failed TLS handshake failed, as the sink saw it (a client
    /// that refused the certificate sends an alert: `UnknownCA`,
    /// `BadCertificate`).
    pub fn handshake_failures(&self) -> Vec<String> {
        self.inner
            .handshake_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Everything that arrived so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.inner
            .received
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// What arrived for `address`.
    pub fn received_by(&self, address: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t.eq_ignore_ascii_case(address)))
            .collect()
    }

    /// The next `count` DATA commands answer `451` (try again later).
    pub fn fail_next_transient(&self, count: u32) {
        self.set_failing(count, "451 4.3.0 try again later");
    }

    /// The next `count` DATA commands answer `550` (refused for good).
    pub fn fail_next_permanent(&self, count: u32) {
        self.set_failing(count, "550 5.1.1 no such mailbox");
    }

    fn set_failing(&self, remaining: u32, reply: &'static str) {
        *self
            .inner
            .failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Failing { remaining, reply });
    }

    /// While on, new connections are accepted and never answered (no
    /// greeting): a server that hangs.
    pub fn stall(&self, on: bool) {
        self.inner
            .stalled
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Waits (at most `timeout`) until a mail for `address` whose subject
    /// contains `subject` has arrived, and returns it.
    pub async fn wait_for(&self, address: &str, subject: &str, timeout: Duration) -> Received {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.inner.arrived.notified();
            if let Some(mail) = self
                .received_by(address)
                .into_iter()
                .find(|m| m.subject.contains(subject))
            {
                return mail;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "no mail for {address} with {subject:?} within {timeout:?}; arrived: {:#?}",
                    self.received()
                        .iter()
                        .map(|m| (&m.to, &m.subject))
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    /// Waits until `count` mails arrived in all.
    pub async fn wait_for_count(&self, count: usize, timeout: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.inner.arrived.notified();
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "{} of {count} mails arrived within {timeout:?}",
                    received.len()
                );
            }
        }
    }
}

/// One connection: the TLS its [`Security`] asks for, then the
/// conversation.
async fn serve(stream: TcpStream, inner: &Inner) -> std::io::Result<()> {
    if inner.stalled.load(std::sync::atomic::Ordering::SeqCst) {
        // Hold the connection open, say nothing, until the client gives up.
        let mut sink = [0u8; 1024];
        let mut stream = stream;
        while tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? > 0 {}
        return Ok(());
    }
    match &inner.security {
        Security::Plain => {
            converse(stream, inner, Phase::Plain).await?;
        }
        Security::Implicit(config) => {
            let stream = handshake(config, stream, inner).await?;
            converse(stream, inner, Phase::Implicit).await?;
        }
        Security::StartTls(config) => {
            if let Ended::StartTls(stream) = converse(stream, inner, Phase::BeforeStartTls).await? {
                let stream = handshake(config, stream, inner).await?;
                converse(stream, inner, Phase::AfterStartTls).await?;
            }
        }
    }
    Ok(())
}

/// The server's half of a TLS handshake; a failure is kept for the test.
async fn handshake(
    config: &Arc<ServerConfig>,
    stream: TcpStream,
    inner: &Inner,
) -> std::io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
    match TlsAcceptor::from(config.clone()).accept(stream).await {
        Ok(stream) => Ok(stream),
        Err(error) => {
            inner
                .handshake_failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(error.to_string());
            inner.arrived.notify_waiters();
            Err(error)
        }
    }
}
