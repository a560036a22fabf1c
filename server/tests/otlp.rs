//! With the `otlp` feature and `log.otlp_endpoint` set, the server exports
//! its request spans to an OpenTelemetry collector over OTLP/HTTP.
//! (`make test` runs this with `--features otlp`; without the feature the
//! file is empty.)
#![cfg(feature = "otlp")]

use std::{
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, routing::post};

#[tokio::test]
async fn request_spans_reach_an_otlp_collector() {
    // A collector that records what it is sent.
    let received: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let collector = axum::Router::new()
        .route(
            "/v1/traces",
            post(
                |State(seen): State<Arc<Mutex<Vec<(String, usize)>>>>,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    let kind = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    seen.lock().expect("lock").push((kind, body.len()));
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
    let mut answered = 0;
    while received.lock().expect("lock").is_empty() && Instant::now() < deadline {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            answered += 1;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(answered > 0, "the server answered");
    let seen = received.lock().expect("lock");
    assert!(!seen.is_empty(), "no spans reached the collector");
    assert!(
        seen.iter()
            .all(|(kind, size)| kind == "application/x-protobuf" && *size > 0),
        "{seen:?}"
    );
}
