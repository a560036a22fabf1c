//! Structured logs.
//!
//! One subscriber for the process, pretty for people or JSON for log
//! shippers. Each request gets a span carrying its `x-request-id`, so every
//! line logged while serving it can be found together, and names who
//! asked once the session says so (see [`carry_request_span`]).

use http::Request;
use tower_http::{request_id::RequestId, trace::MakeSpan};
use tracing::Span;
use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::config::sections::{LogFormat, LogSettings};

/// Keeps the trace exporter running; dropping it flushes what is queued.
#[derive(Debug, Default)]
pub struct Telemetry {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("flushing traces failed: {error}");
        }
    }
}

/// Installs the global subscriber (`RUST_LOG` overrides the configured
/// filter), with an OTLP trace exporter when `log.otlp_endpoint` is set.
/// Returns an error if a subscriber is already installed, or if an
/// endpoint is set in a build without the `otlp` feature.
pub fn init(settings: &LogSettings) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.filter))
        .map_err(|error| anyhow::anyhow!("invalid log filter: {error}"))?;
    let (otlp, telemetry) = otlp_layer(&settings.otlp_endpoint)?;
    let registry = tracing_subscriber::registry().with(otlp).with(filter);
    match settings.format {
        LogFormat::Json => registry
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true),
            )
            .try_init()?,
        LogFormat::Pretty => registry.with(fmt::layer().compact()).try_init()?,
    }
    Ok(telemetry)
}

type OtlpLayer =
    Option<Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>>;

#[cfg(feature = "otlp")]
fn otlp_layer(endpoint: &str) -> anyhow::Result<(OtlpLayer, Telemetry)> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    if endpoint.is_empty() {
        return Ok((None, Telemetry::default()));
    }
    let base = endpoint.trim_end_matches('/');
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/traces"))
        .build()
        .map_err(|error| anyhow::anyhow!("building the OTLP exporter: {error}"))?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("admitone")
                .build(),
        )
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("admitone"));
    Ok((
        Some(Box::new(layer)),
        Telemetry {
            provider: Some(provider),
        },
    ))
}

#[cfg(not(feature = "otlp"))]
fn otlp_layer(endpoint: &str) -> anyhow::Result<(OtlpLayer, Telemetry)> {
    anyhow::ensure!(
        endpoint.is_empty(),
        "log.otlp_endpoint is set, but this server was built without the `otlp` feature \
         (cargo build --release -p server --features otlp)"
    );
    Ok((None, Telemetry::default()))
}

/// Opens the span of one HTTP request.
#[derive(Clone, Copy, Debug)]
pub struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        let request_id = request
            .extensions()
            .get::<RequestId>()
            .and_then(|id| id.header_value().to_str().ok())
            .unwrap_or("-");
        // `principal` and `tenant` are filled in once the request is
        // authenticated (`service::session` records them through
        // `service::request_span`, see `carry_request_span`). Settlement
        // spans inside add the share.
        tracing::info_span!(
            "request",
            method = %request.method(),
            path = %request.uri().path(),
            request_id = %request_id,
            principal = tracing::field::Empty,
            tenant = tracing::field::Empty,
        )
    }
}

/// Directly inside the trace layer, where the current span is the
/// request's: the rest of the request runs with it as its request span
/// ([`service::request_span`]), so that what the use cases record (who
/// asked, for which tenant) lands on it, however many spans other layers
/// open in between.
pub async fn carry_request_span(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    service::request_span::within(Span::current(), next.run(request)).await
}

/// Leptos' executor for the server: Tokio's, with each spawned task in the
/// span it was spawned from and serving the request it was spawned for. A
/// page renders its resources in tasks of their own; without this, what
/// they log would belong to no request, and who they found signed in
/// would never reach the request's span.
struct InRequestExecutor;

impl any_spawner::CustomExecutor for InRequestExecutor {
    fn spawn(&self, fut: any_spawner::PinnedFuture<()>) {
        use tracing::Instrument as _;
        let fut = fut.instrument(Span::current());
        match service::request_span::current() {
            Some(request) => tokio::spawn(service::request_span::within(request, fut)),
            None => tokio::spawn(fut),
        };
    }

    fn spawn_local(&self, fut: any_spawner::PinnedLocalFuture<()>) {
        use tracing::Instrument as _;
        let fut = fut.instrument(Span::current());
        match service::request_span::current() {
            Some(request) => tokio::task::spawn_local(service::request_span::within(request, fut)),
            None => tokio::task::spawn_local(fut),
        };
    }

    fn poll_local(&self) {}
}

/// Installs [`InRequestExecutor`] as Leptos' executor, once per process and
/// before Leptos installs plain Tokio's. Calling it again does nothing.
pub fn init_executor() {
    // Once per process (several test apps share one): a later call would
    // only find this same executor installed.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Err(error) = any_spawner::Executor::init_custom_executor(InRequestExecutor) {
            // Something installed another executor first: pages still
            // render, but their tasks lose the request's span.
            tracing::warn!(%error, "Leptos' executor was already set: page tasks log outside their request");
        }
    });
}
