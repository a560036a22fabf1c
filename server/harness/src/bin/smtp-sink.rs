//! `smtp-sink`: the SMTP server of the Playwright journeys. It takes mail
//! on `--smtp-port` (plain SMTP, any sender) like the integration tests'
//! sink (`harness::smtp`), and serves what arrived on `--http-port`:
//!
//! * `GET /messages` (`?to=address` to filter): every mail as JSON (from,
//!   to, subject, message_id, text, html), oldest first.
//!
//! Started by `scripts/e2e-server.sh` beside the server under test, which
//! sends to it (`APP_MAIL__SMTP_URL`); stopped with it.

use std::collections::HashMap;

use axum::{Json, Router, extract::Query, routing::get};
use clap::Parser;
use harness::smtp::SmtpSink;

#[derive(Parser)]
#[command(about = "A test SMTP server that shows what arrived as JSON")]
struct Args {
    #[arg(long)]
    smtp_port: u16,
    #[arg(long)]
    http_port: u16,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let sink = SmtpSink::start_on(args.smtp_port, None).await;
    let app = Router::new().route(
        "/messages",
        get(move |Query(query): Query<HashMap<String, String>>| {
            let sink = sink.clone();
            async move {
                Json(match query.get("to") {
                    Some(to) => sink.received_by(to),
                    None => sink.received(),
                })
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.http_port)).await?;
    println!(
        "smtp-sink: SMTP on {}, HTTP on {}",
        args.smtp_port, args.http_port
    );
    axum::serve(listener, app).await?;
    Ok(())
}
