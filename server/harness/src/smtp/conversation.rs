//! One SMTP conversation, over plain TCP or inside TLS: the commands the
//! sink understands, STARTTLS offered and required where the sink was
//! started with it (as a submission server on port 587 requires it), and
//! what arrived parsed for the test to read.

use base64::Engine as _;
use mail_parser::MimeHeaders as _;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

use super::{Inner, Received};

/// Where a conversation stands with TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Plain SMTP, and the sink offers nothing else.
    Plain,
    /// Plain so far; STARTTLS is offered and required before AUTH or MAIL.
    BeforeStartTls,
    /// Inside TLS after STARTTLS: no new greeting (the client speaks first).
    AfterStartTls,
    /// Inside TLS from the first byte.
    Implicit,
}

impl Phase {
    fn over_tls(self) -> bool {
        matches!(self, Self::AfterStartTls | Self::Implicit)
    }
}

/// What a conversation ended with.
pub(super) enum Ended<S> {
    /// The client quit or hung up.
    Closed,
    /// The client asked for STARTTLS and was told to go ahead: the
    /// connection, for the TLS handshake.
    StartTls(S),
}

/// One SMTP conversation over `stream`, in `phase`.
pub(super) async fn converse<S>(stream: S, inner: &Inner, phase: Phase) -> std::io::Result<Ended<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(stream);
    if phase != Phase::AfterStartTls {
        say(&mut lines, b"220 admitone-test-sink ESMTP\r\n").await?;
    }
    let mut from: Option<String> = None;
    let mut to: Vec<String> = Vec::new();
    let mut auth_user: Option<String> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(Ended::Closed);
        }
        let command = line.trim_end();
        let upper = command.to_ascii_uppercase();
        let tls_first = phase == Phase::BeforeStartTls;
        let reply: String = if upper.starts_with("EHLO") {
            // As a submission server: AUTH only inside TLS when TLS is offered.
            if tls_first {
                "250-admitone-test-sink\r\n250-STARTTLS\r\n250-8BITMIME\r\n250 SMTPUTF8".into()
            } else {
                "250-admitone-test-sink\r\n250-AUTH PLAIN LOGIN\r\n250-8BITMIME\r\n250 SMTPUTF8"
                    .into()
            }
        } else if upper == "STARTTLS" {
            if !tls_first {
                "503 5.5.1 TLS is not offered here".into()
            } else {
                say(&mut lines, b"220 2.0.0 ready to start TLS\r\n").await?;
                // Anything the client sent after STARTTLS before the
                // handshake would be read as if it came over TLS (the
                // STARTTLS injection of CVE-2011-0411): refuse it.
                if !lines.buffer().is_empty() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "commands pipelined after STARTTLS",
                    ));
                }
                return Ok(Ended::StartTls(lines.into_inner()));
            }
        } else if tls_first && (upper.starts_with("AUTH") || upper.starts_with("MAIL FROM:")) {
            "530 5.7.0 Must issue a STARTTLS command first".into()
        } else if upper.starts_with("HELO") {
            "250 admitone-test-sink".into()
        } else if upper.starts_with("AUTH PLAIN") {
            let initial = command
                .get("AUTH PLAIN".len()..)
                .unwrap_or("")
                .trim()
                .to_owned();
            let response = if initial.is_empty() {
                say(&mut lines, b"334 \r\n").await?;
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
            say(&mut lines, b"334 VXNlcm5hbWU6\r\n").await?;
            line.clear();
            lines.read_line(&mut line).await?;
            let user = decode(&line);
            say(&mut lines, b"334 UGFzc3dvcmQ6\r\n").await?;
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
                say(&mut lines, b"354 end with <CRLF>.<CRLF>\r\n").await?;
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
                            phase.over_tls(),
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
            say(&mut lines, b"221 2.0.0 bye\r\n").await?;
            return Ok(Ended::Closed);
        } else {
            "500 5.5.2 unknown command".into()
        };
        say(&mut lines, format!("{reply}\r\n").as_bytes()).await?;
    }
}

/// Writes one reply and flushes it (inside TLS, a reply left in the
/// session's buffer would never reach the client).
async fn say<W: AsyncWrite + Unpin>(out: &mut W, reply: &[u8]) -> std::io::Result<()> {
    out.write_all(reply).await?;
    out.flush().await
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

fn parse(
    from: String,
    to: Vec<String>,
    auth_user: Option<String>,
    over_tls: bool,
    raw: Vec<u8>,
) -> Received {
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
        over_tls,
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
