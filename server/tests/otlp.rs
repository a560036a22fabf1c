//! With the `otlp` feature and `log.otlp_endpoint` set, the server exports
//! its request spans to an OpenTelemetry collector over OTLP/HTTP: the
//! collector here decodes what arrives (the OTLP protobuf, read field by
//! field below) and finds the span of a request it made, with its
//! attributes. (`make test` runs this with `--features otlp`; without the
//! feature the file is empty.)
#![cfg(feature = "otlp")]

use std::{
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, routing::post};

/// What the collector was sent: each export's content type and body.
type Exports = Arc<Mutex<Vec<(String, Bytes)>>>;

#[tokio::test]
async fn request_spans_reach_an_otlp_collector() {
    // A collector that records what it is sent.
    let received: Exports = Arc::default();
    let collector = axum::Router::new()
        .route(
            "/v1/traces",
            post(
                |State(seen): State<Exports>, headers: HeaderMap, body: Bytes| async move {
                    let kind = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    seen.lock().expect("lock").push((kind, body));
                    ""
                },
            ),
        )
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, collector).await });

    // The real server, on a free port of its choosing is not observable
    // from here: pick one.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        probe.local_addr().expect("addr").port()
    };
    let mut server = Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("serve")
        .env("APP_SERVER__PORT", port.to_string())
        .env("APP_LOG__OTLP_ENDPOINT", &endpoint)
        .env("APP_SETTLEMENT__RECONCILE_INTERVAL_SECS", "0")
        .env("APP_WEBHOOKS__RELAY", "false")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the server");
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    // The request ids the server answered with; one of their spans must
    // arrive.
    let mut ids: Vec<String> = Vec::new();
    let found = loop {
        if let Ok(response) = client.get(format!("{base}/healthz")).send().await
            && let Some(id) = response
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
        {
            ids.push(id.to_owned());
        }
        let spans: Vec<ExportedSpan> = received
            .lock()
            .expect("lock")
            .iter()
            .flat_map(|(_, body)| spans_of(body))
            .collect();
        if let Some(span) = spans.into_iter().find(|s| {
            s.name == "request"
                && s.attribute("request_id")
                    .is_some_and(|id| ids.contains(&id))
        }) {
            break Some(span);
        }
        if Instant::now() > deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let _ = server.kill();
    let _ = server.wait();
    assert!(!ids.is_empty(), "the server answered with request ids");
    let seen = received.lock().expect("lock");
    assert!(
        seen.iter()
            .all(|(kind, body)| kind == "application/x-protobuf" && !body.is_empty()),
        "{:?}",
        seen.iter().map(|(k, b)| (k, b.len())).collect::<Vec<_>>()
    );
    let span = found.unwrap_or_else(|| {
        panic!(
            "no request span with one of {ids:?} reached the collector; spans: {:?}",
            seen.iter()
                .flat_map(|(_, b)| spans_of(b))
                .collect::<Vec<_>>()
        )
    });
    assert_eq!(span.attribute("method").as_deref(), Some("GET"), "{span:?}");
    assert_eq!(
        span.attribute("path").as_deref(),
        Some("/healthz"),
        "{span:?}"
    );
    assert_eq!(
        span.service.as_deref(),
        Some("admitone"),
        "the resource names the service: {span:?}"
    );
}

/// A span as the collector decoded it.
#[derive(Debug)]
struct ExportedSpan {
    /// The resource's `service.name`.
    service: Option<String>,
    name: String,
    /// String attributes.
    attributes: Vec<(String, String)>,
}

impl ExportedSpan {
    fn attribute(&self, key: &str) -> Option<String> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}

/// The spans of one `ExportTraceServiceRequest` (opentelemetry-proto's
/// `trace/v1` and `collector/trace/v1`): resource_spans = 1 {resource = 1
/// {attributes = 1}, scope_spans = 2 {spans = 2 {name = 5, attributes =
/// 9}}}; KeyValue {key = 1, value = 2 {string_value = 1}}.
fn spans_of(request: &[u8]) -> Vec<ExportedSpan> {
    let mut spans = Vec::new();
    for resource_spans in fields(request, 1) {
        let service = fields(resource_spans, 1)
            .into_iter()
            .flat_map(|resource| fields(resource, 1))
            .map(key_value)
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v);
        for scope_spans in fields(resource_spans, 2) {
            for span in fields(scope_spans, 2) {
                spans.push(ExportedSpan {
                    service: service.clone(),
                    name: fields(span, 5)
                        .first()
                        .map(|n| String::from_utf8_lossy(n).into_owned())
                        .unwrap_or_default(),
                    attributes: fields(span, 9).into_iter().map(key_value).collect(),
                });
            }
        }
    }
    spans
}

/// A `KeyValue` whose value is a string (other kinds read as empty).
fn key_value(kv: &[u8]) -> (String, String) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let key = fields(kv, 1).first().map(|k| text(k)).unwrap_or_default();
    let value = fields(kv, 2)
        .first()
        .and_then(|any| fields(any, 1).first().map(|v| text(v)))
        .unwrap_or_default();
    (key, value)
}

/// The length-delimited fields numbered `number` of one protobuf message
/// (other fields skipped by their wire type).
fn fields(message: &[u8], number: u64) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let Some(key) = varint(message, &mut at) else {
            break;
        };
        match key & 7 {
            0 => {
                varint(message, &mut at);
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let Some(length) = varint(message, &mut at) else {
                    break;
                };
                let end = at.saturating_add(usize::try_from(length).unwrap_or(usize::MAX));
                let Some(value) = message.get(at..end) else {
                    break;
                };
                if key >> 3 == number {
                    out.push(value);
                }
                at = end;
            }
            _ => break,
        }
    }
    out
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}
