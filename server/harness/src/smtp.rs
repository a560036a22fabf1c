//! A real SMTP server for the tests: it speaks SMTP over TCP (EHLO, AUTH
//! PLAIN and LOGIN, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP,
//! QUIT) and keeps what arrived, parsed, for the test to read. The server
//! under test sends to it with lettre exactly as it would send to a
//! provider: nothing of the sender is mocked.
//!
//! A test can make the next DATA commands fail (a `451` the sender must
//! retry, a `550` it must give up on) and can require authentication.
//! The `smtp-sink` binary runs one for the Playwright journeys and serves
//! what arrived as JSON.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use base64::Engine as _;
use mail_parser::MimeHeaders as _;
use serde::Serialize;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader},
    net::{TcpListener, TcpStream},
    sync::Notify,
};

/// One mail that arrived.
#[derive(Debug, Clone, Serialize)]
pub struct Received {
    /// The envelope sender (`MAIL FROM`).
    pub from: String,
    /// The envelope recipients (`RCPT TO`).
    pub to: Vec<String>,
    /// The user an `AUTH` proved, if any.
    pub auth_user: Option<String>,
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

#[derive(Debug, Default)]
struct Inner {
    received: Mutex<Vec<Received>>,
    failing: Mutex<Option<Failing>>,
    /// Accept connections and never answer (a server that hangs).
    stalled: std::sync::atomic::AtomicBool,
    credentials: Option<(String, String)>,
    arrived: Notify,
}

/// A running SMTP server on a loopback port; it stops with the runtime.
#[derive(Debug, Clone)]
pub struct SmtpSink {
    port: u16,
    inner: Arc<Inner>,
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
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the SMTP sink");
        let port = listener.local_addr().expect("the sink's address").port();
        let inner = Arc::new(Inner {
            credentials,
            ..Inner::default()
        });
        let serving = inner.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                // Replies go out at once, as a real server's do (Nagle's
                // algorithm would hold each behind the client's delayed
                // ACK: ~40 ms a command, 200 ms a mail).
                let _ = stream.set_nodelay(true);
                let inner = serving.clone();
                tokio::spawn(async move {
                    let _ = converse(stream, &inner).await;
                });
            }
        });
        Self { port, inner }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `mail.smtp_url` that sends here (plain SMTP on loopback).
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The URL with credentials, for a sink started with
    /// [`start_with_auth`](Self::start_with_auth).
    pub fn url_with(&self, user: &str, password: &str) -> String {
        format!("smtp://{user}:{password}@127.0.0.1:{}", self.port)
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

/// One SMTP conversation.
async fn converse(stream: TcpStream, inner: &Inner) -> std::io::Result<()> {
    if inner.stalled.load(std::sync::atomic::Ordering::SeqCst) {
        // Hold the connection open, say nothing, until the client gives up.
        let mut sink = [0u8; 1024];
        let mut stream = stream;
        while tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? > 0 {}
        return Ok(());
    }
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 admitone-test-sink ESMTP\r\n").await?;
    let mut from: Option<String> = None;
    let mut to: Vec<String> = Vec::new();
    let mut auth_user: Option<String> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end();
        let upper = command.to_ascii_uppercase();
        let reply: String = if upper.starts_with("EHLO") {
            "250-admitone-test-sink\r\n250-AUTH PLAIN LOGIN\r\n250-8BITMIME\r\n250 SMTPUTF8".into()
        } else if upper.starts_with("HELO") {
            "250 admitone-test-sink".into()
        } else if upper.starts_with("AUTH PLAIN") {
            let initial = command
                .get("AUTH PLAIN".len()..)
                .unwrap_or("")
                .trim()
                .to_owned();
            let response = if initial.is_empty() {
                write.write_all(b"334 \r\n").await?;
                line.clear();
                lines.read_line(&mut line).await?;
                line.trim().to_owned()
            } else {
                initial
            };
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(response.as_bytes())
                .unwrap_or_default();
            let parts: Vec<String> = decoded
                .split(|b| *b == 0)
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            match parts.as_slice() {
                [_, user, password] => authenticate(inner, user, password, &mut auth_user),
                _ => "501 5.5.2 malformed AUTH PLAIN".into(),
            }
        } else if upper.starts_with("AUTH LOGIN") {
            let decode = |s: &str| {
                String::from_utf8_lossy(
                    &base64::engine::general_purpose::STANDARD
                        .decode(s.trim().as_bytes())
                        .unwrap_or_default(),
                )
                .into_owned()
            };
            write.write_all(b"334 VXNlcm5hbWU6\r\n").await?;
            line.clear();
            lines.read_line(&mut line).await?;
            let user = decode(&line);
            write.write_all(b"334 UGFzc3dvcmQ6\r\n").await?;
            line.clear();
            lines.read_line(&mut line).await?;
            let password = decode(&line);
            authenticate(inner, &user, &password, &mut auth_user)
        } else if upper.starts_with("MAIL FROM:") {
            if inner.credentials.is_some() && auth_user.is_none() {
                "530 5.7.0 authentication required".into()
            } else {
                from = Some(address(&command["MAIL FROM:".len()..]));
                to.clear();
                "250 2.1.0 ok".into()
            }
        } else if upper.starts_with("RCPT TO:") {
            if from.is_none() {
                "503 5.5.1 MAIL first".into()
            } else {
                to.push(address(&command["RCPT TO:".len()..]));
                "250 2.1.5 ok".into()
            }
        } else if upper == "DATA" {
            if to.is_empty() {
                "503 5.5.1 RCPT first".into()
            } else {
                write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
                let raw = read_data(&mut lines).await?;
                let failing = {
                    let mut failing = inner
                        .failing
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    match failing.as_mut() {
                        Some(f) if f.remaining > 0 => {
                            f.remaining -= 1;
                            Some(f.reply)
                        }
                        _ => None,
                    }
                };
                match failing {
                    Some(reply) => reply.into(),
                    None => {
                        let received = parse(
                            from.take().unwrap_or_default(),
                            std::mem::take(&mut to),
                            auth_user.clone(),
                            raw,
                        );
                        inner
                            .received
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push(received);
                        inner.arrived.notify_waiters();
                        "250 2.0.0 queued".into()
                    }
                }
            }
        } else if upper == "RSET" {
            from = None;
            to.clear();
            "250 2.0.0 ok".into()
        } else if upper == "NOOP" {
            "250 2.0.0 ok".into()
        } else if upper == "QUIT" {
            write.write_all(b"221 2.0.0 bye\r\n").await?;
            return Ok(());
        } else {
            "500 5.5.2 unknown command".into()
        };
        write.write_all(format!("{reply}\r\n").as_bytes()).await?;
    }
}

fn authenticate(
    inner: &Inner,
    user: &str,
    password: &str,
    auth_user: &mut Option<String>,
) -> String {
    match &inner.credentials {
        Some((u, p)) if u == user && p == password => {
            *auth_user = Some(user.to_owned());
            "235 2.7.0 authenticated".into()
        }
        Some(_) => "535 5.7.8 bad credentials".into(),
        None => {
            *auth_user = Some(user.to_owned());
            "235 2.7.0 authenticated".into()
        }
    }
}

/// The address inside `<…>` (parameters after it ignored).
fn address(raw: &str) -> String {
    let raw = raw.trim();
    match (raw.find('<'), raw.find('>')) {
        (Some(start), Some(end)) if start < end => raw[start + 1..end].to_owned(),
        _ => raw.split_whitespace().next().unwrap_or("").to_owned(),
    }
}

/// The DATA section up to the lone `.` line, dot-unstuffed.
async fn read_data<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut R) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if lines.read_until(b'\n', &mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == b".\r\n" || line == b".\n" {
            return Ok(raw);
        }
        let body = if line.starts_with(b"..") {
            &line[1..]
        } else {
            &line[..]
        };
        raw.extend_from_slice(body);
    }
}

fn parse(from: String, to: Vec<String>, auth_user: Option<String>, raw: Vec<u8>) -> Received {
    let parsed = mail_parser::MessageParser::default().parse(&raw);
    let (subject, message_id, text, html, content_type) = match &parsed {
        Some(m) => (
            m.subject().unwrap_or_default().to_owned(),
            m.message_id().unwrap_or_default().to_owned(),
            m.body_text(0).map(|t| t.into_owned()).unwrap_or_default(),
            m.body_html(0).map(|t| t.into_owned()).unwrap_or_default(),
            m.content_type()
                .map(|c| match c.subtype() {
                    Some(sub) => format!("{}/{sub}", c.ctype()),
                    None => c.ctype().to_owned(),
                })
                .unwrap_or_default(),
        ),
        None => Default::default(),
    };
    Received {
        from,
        to,
        auth_user,
        subject,
        message_id,
        text,
        html,
        content_type,
        raw,
    }
}

#[cfg(test)]
mod tests {
    use super::address;

    #[test]
    fn envelope_addresses_are_read_inside_angle_brackets() {
        assert_eq!(address(" <a@b.test> SIZE=10"), "a@b.test");
        assert_eq!(address("a@b.test"), "a@b.test");
        assert_eq!(address("<>"), "");
    }
}
