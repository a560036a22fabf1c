//! The dev mailbox: where mail goes in development when no SMTP server is
//! configured (`make run`), so that registering, "forgot password" and
//! invitations can be tried without a mail server. `/dev/mailbox` lists
//! what arrived, newest first, with each mail's text and its links;
//! `/dev/mailbox/{id}` shows one mail's HTML part.
//!
//! The routes exist only in development without `mail.smtp_url`, on a
//! loopback server (`Settings::dev_mailbox`), and answer only requests
//! from this machine that no proxy relayed; production refuses to start
//! without an SMTP server, so there they are never mounted (404).

use std::net::SocketAddr;

use axum::{
    extract::{ConnectInfo, Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use uuid::Uuid;

use crate::mail::templates::escape;
use crate::state::ServerState;

/// How many mails the page lists.
const SHOWN: i64 = 100;

/// Whether the request comes straight from this machine: a loopback peer,
/// not relayed by a proxy (a tunnel or a reverse proxy in front of a
/// loopback server would otherwise show the mailbox to anyone).
fn from_this_machine(peer: &SocketAddr, headers: &axum::http::HeaderMap) -> bool {
    peer.ip().is_loopback()
        && !headers.contains_key("x-forwarded-for")
        && !headers.contains_key("forwarded")
}

/// The list: newest first, each with its text part (links clickable).
pub async fn list(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
) -> Response {
    if !from_this_machine(&peer, &headers) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let rows = engine::mail::dev_mailbox(&state.services.pool, SHOWN).await;
    let rows = match rows {
        Ok(rows) => rows,
        Err(error) => {
            tracing::warn!(error = format!("{error:#}"), "reading the dev mailbox");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "the dev mailbox is unavailable",
            )
                .into_response();
        }
    };
    let mut page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Dev mailbox · AdmitOne</title><link rel=\"stylesheet\" href=\"{}\"></head>\
         <body><main class=\"container\"><h1>Dev mailbox</h1>\
         <p class=\"muted\">Development only: mail AdmitOne sent while no SMTP server is configured \
         (<code>mail.smtp_url</code>). Newest first; reload to see new mail.</p>",
        escape(&state.stylesheet.0)
    );
    if rows.is_empty() {
        page.push_str("<p>No mail yet.</p>");
    }
    for row in rows {
        page.push_str(&format!(
            "<article class=\"card mail\" data-to=\"{to}\"><h2>{subject}</h2>\
             <p class=\"muted\">To {to} · {when} · <a href=\"/dev/mailbox/{id}\">HTML version</a></p>\
             <pre class=\"mail-text\">{text}</pre></article>",
            to = escape(&row.to),
            subject = escape(&row.subject),
            when = row.delivered_at,
            id = row.id,
            text = linkify(&row.text),
        ));
    }
    page.push_str("</main></body></html>");
    Html(page).into_response()
}

/// One mail's HTML part, sandboxed: its inline styles apply, nothing runs.
pub async fn show(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !from_this_machine(&peer, &headers) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let Ok(id) = id.parse::<Uuid>() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let html = engine::mail::dev_mail_html(&state.services.pool, id).await;
    match html {
        Ok(Some(html)) => {
            let mut response = Html(html).into_response();
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'none'; style-src 'unsafe-inline'; sandbox allow-popups allow-top-navigation-by-user-activation",
                ),
            );
            response
        }
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(error) => {
            tracing::warn!(error = format!("{error:#}"), "reading the dev mailbox");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    }
}

/// Escapes `text` and makes its `http(s)://` links clickable.
fn linkify(text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim();
        if (trimmed.starts_with("https://") || trimmed.starts_with("http://"))
            && !trimmed.contains(char::is_whitespace)
        {
            let url = escape(trimmed);
            out.push_str(&format!("<a href=\"{url}\">{url}</a>"));
        } else {
            out.push_str(&escape(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::linkify;

    #[test]
    fn only_this_machine_unrelayed_reads_the_mailbox() {
        let local: std::net::SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let remote: std::net::SocketAddr = "203.0.113.9:5000".parse().expect("addr");
        let plain = axum::http::HeaderMap::new();
        let mut relayed = axum::http::HeaderMap::new();
        relayed.insert("x-forwarded-for", "203.0.113.9".parse().expect("value"));
        assert!(super::from_this_machine(&local, &plain));
        assert!(!super::from_this_machine(&remote, &plain));
        assert!(!super::from_this_machine(&local, &relayed));
    }

    #[test]
    fn links_are_clickable_and_everything_is_escaped() {
        assert_eq!(
            linkify("Open:\nhttps://x.test/a?token=1&b=2\n<b>"),
            "Open:\n<a href=\"https://x.test/a?token=1&amp;b=2\">https://x.test/a?token=1&amp;b=2</a>\n&lt;b&gt;"
        );
        assert_eq!(linkify("javascript:alert(1)"), "javascript:alert(1)");
    }
}
