//! Building and running the HTTP server.
//!
//! [`Application::build`] wires configuration into a router bound to a
//! listener (port 0 in tests), so the binary and the integration tests run
//! exactly the same stack.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context as _;
use axum::{Router, routing::get};
use engine::coordination::Redis;
use engine::db::PgPool;
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes as _, generate_route_list};
use secrecy::ExposeSecret as _;
use service::Services;
use sha2::{Digest as _, Sha512};
use tokio::net::TcpListener;
use tower_http::{
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    trace::TraceLayer,
};
use tower_sessions::{
    Expiry, SessionManagerLayer,
    cookie::{Key, SameSite},
};

use crate::{
    config::Settings, middleware::csrf, routes, state::ServerState, telemetry::RequestSpan,
};

/// The name cargo-leptos gives the wasm/js/css bundle (`Cargo.toml`
/// `[[workspace.metadata.leptos]] name`).
pub const BUNDLE_NAME: &str = "admitone";

/// How often each instance looks for refunded orders whose grace ended
/// (a bound code outlives its grace by at most this).
const REFUND_SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Orders one sweep finishes before it looks again at once.
const REFUND_SWEEP_BATCH: usize = 100;
/// How often each instance deletes the mail throttle's windows past
/// their hour.
const MAIL_WINDOWS_EVERY: Duration = Duration::from_secs(60);

/// A built server, listening but not yet serving.
pub struct Application {
    listener: TcpListener,
    router: Router,
    port: u16,
    grace: Duration,
    drain: Duration,
    draining: Arc<std::sync::atomic::AtomicBool>,
    /// The background loops, stopped after the last request.
    rounds: crate::rounds::Rounds,
    /// The longest a round under way may take to finish at a stop: the
    /// longest lease.
    round_limit: Duration,
}

impl Application {
    /// Connects (lazily) to PostgreSQL and Redis and binds the configured
    /// address.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = engine::db::connect_lazy(
            settings.database.url.expose_secret(),
            &settings.db_options(),
        )?;
        let redis = Redis::connect(&settings.redis_options()).await?;
        Self::build_with(settings, pool, redis).await
    }

    /// Like [`Application::build`] with given connections (tests pass a
    /// per-test database and key prefix).
    pub async fn build_with(
        settings: Settings,
        pool: PgPool,
        redis: Redis,
    ) -> anyhow::Result<Self> {
        let settlement = settings.settlement_options();
        Self::build_with_settlement(settings, pool, redis, settlement).await
    }

    /// Like [`Application::build_with`] with explicit settlement options
    /// (tests inject faults through them).
    pub async fn build_with_settlement(
        settings: Settings,
        pool: PgPool,
        redis: Redis,
        settlement: engine::settlement::options::SettlementOptions,
    ) -> anyhow::Result<Self> {
        // Installs the process's metrics recorder (once), if it is scraped.
        if settings.metrics.token.is_some() {
            let _ = routes::metrics::handle();
        }
        let addr = settings.listen_addr()?;
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr().context("reading the bound address")?;
        let hashes = crate::assets::Hashes::locate(settings.server.asset_hashes.as_deref())?;
        let pkg = std::path::Path::new(&settings.server.site_root).join("pkg");
        let checked = match &hashes {
            Some(hashes) => hashes.check(&pkg, BUNDLE_NAME),
            None => crate::assets::check_unhashed(&pkg, BUNDLE_NAME),
        };
        if let Err(error) = checked {
            // In production a binary beside another build's site is a
            // broken deploy; in development the site was most likely
            // rebuilt by the other profile, or not built yet.
            if settings.is_production() {
                return Err(error);
            }
            tracing::warn!(
                error = format!("{error:#}"),
                "the site is not this binary's build: pages will not hydrate until `cargo leptos build --split` runs again"
            );
        }
        let stylesheet = match &hashes {
            Some(hashes) => format!("/pkg/{}", hashes.stylesheet(BUNDLE_NAME)),
            None => format!("/pkg/{BUNDLE_NAME}.css"),
        };
        let leptos_options = LeptosOptions::builder()
            .output_name(BUNDLE_NAME)
            .site_root(settings.server.site_root.as_str())
            .site_pkg_dir("pkg")
            // Leptos joins this to the binary's directory; an absolute path
            // stays as it is.
            .hash_files(hashes.is_some())
            .hash_file(hashes.as_ref().map_or_else(
                || crate::assets::HASH_FILE.into(),
                |hashes| hashes.file.to_string_lossy().into(),
            ))
            .site_addr(local)
            .env(if settings.is_production() {
                Env::PROD
            } else {
                Env::DEV
            })
            .build();
        let grace = Duration::from_secs(settings.server.shutdown_grace_secs);
        // A round's sends run side by side, each within its timeout, and
        // its record may wait for a connection and its statement: the
        // lease bounds it all (past it the record would be refused).
        let round_limit =
            crate::mail::lease_of(&settings.mail).max(crate::relay::lease_of(&settings.webhooks));
        let drain = Duration::from_secs(
            settings
                .server
                .drain_secs
                .unwrap_or(if settings.is_production() { 5 } else { 0 }),
        );
        let draining = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let links = Arc::new(engine::accounts::links::LinkKey::derive(
            &settings.session_key(),
        ));
        let keyring = Arc::new(settings.keyring()?);
        // Without an SMTP server the relay writes to the dev mailbox, which
        // only a loopback development server has: elsewhere mail waits.
        let mail_goes_somewhere = settings.mail.smtp_url.is_some() || settings.dev_mailbox();
        if settings.mail.relay && !mail_goes_somewhere {
            tracing::warn!(
                host = %settings.server.host,
                "no SMTP server (mail.smtp_url) and no dev mailbox (a development server on \
                 loopback only): mail is queued and not sent until one is configured"
            );
        }
        let mut rounds = crate::rounds::Rounds::new();
        if settings.mail.relay && mail_goes_somewhere {
            crate::mail::MailRelay::new(
                pool.clone(),
                &settings.mail,
                links.clone(),
                keyring.clone(),
                &settings.public_origin(),
            )?
            .spawn(
                &mut rounds,
                Duration::from_millis(settings.mail.poll_interval_ms.max(10)),
            );
        }
        // Refunded orders' bound codes, once their grace ends (every
        // instance: they take different orders).
        let sweeping = pool.clone();
        rounds.spawn("refund sweeper", REFUND_SWEEP_EVERY, move || {
            let pool = sweeping.clone();
            async move {
                let swept = engine::refunds::revoke_due(&pool, None, REFUND_SWEEP_BATCH).await?;
                Ok(swept.tried == REFUND_SWEEP_BATCH)
            }
        });
        // The mail throttle's old windows (`engine::mail::limits`).
        let forgetting = pool.clone();
        rounds.spawn("mail windows", MAIL_WINDOWS_EVERY, move || {
            let pool = forgetting.clone();
            async move {
                engine::mail::limits::forget_windows(&pool).await?;
                Ok(false)
            }
        });
        let settler = engine::settlement::Settler::new(pool.clone(), redis.clone(), settlement);
        let reads = engine::db::reads(
            pool.clone(),
            settings.database.url.expose_secret(),
            &settings.db_options(),
        )?;
        let state = ServerState {
            leptos_options,
            stylesheet: app::Stylesheet(stylesheet.into()),
            services: Services {
                pool,
                reads,
                redis,
                throttle: engine::throttle::FixedWindow::new(),
                auth: settings.auth_policy(),
                keyring,
                links,
                settler,
                recent_shares: service::recent_shares::RecentShares::default(),
                grants: service::content::GrantCache::new(Duration::from_secs(
                    settings.settlement.grant_recheck_secs,
                )),
                storage: engine::storage::Storage::new(&settings.storage_config()?)?,
                max_upload_bytes: settings.storage.max_upload_bytes,
                tenant_quota_bytes: i64::try_from(settings.storage.tenant_quota_bytes)
                    .unwrap_or(i64::MAX),
                public_origin: Arc::from(settings.public_origin()),
            },
            settings: Arc::new(settings),
            draining: draining.clone(),
        };
        Ok(Self {
            listener,
            router: router(state, local.port()),
            port: local.port(),
            grace,
            drain,
            draining,
            rounds,
            round_limit,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The background loops this server stops, after its last request,
    /// without cutting a round off (`main` adds the webhook relay).
    pub fn rounds(&mut self) -> &mut crate::rounds::Rounds {
        &mut self.rounds
    }

    /// Serves until `shutdown` resolves; then `/readyz` answers 503 while
    /// the server keeps serving for `server.drain_secs` (a load balancer
    /// stops sending new requests), then it stops accepting and lets
    /// in-flight requests finish (bounded by `server.shutdown_grace_secs`);
    /// last, the background loops finish their rounds under way and stop
    /// ([`crate::rounds`], bounded by the longest lease).
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
        let (drain, draining) = (self.drain, self.draining.clone());
        let signal = async move {
            shutdown.await;
            draining.store(true, std::sync::atomic::Ordering::SeqCst);
            if !drain.is_zero() {
                tracing::info!(
                    drain_secs = drain.as_secs(),
                    "shutting down: /readyz answers 503, still serving"
                );
                tokio::time::sleep(drain).await;
            }
            tracing::info!("shutting down: draining in-flight requests");
            let _ = stopping_tx.send(());
        };
        let serve = axum::serve(
            self.listener,
            self.router
                .into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(signal);
        let grace = self.grace;
        let serve = async move { serve.await.context("serving HTTP") };
        tokio::pin!(serve);
        let served = tokio::select! {
            result = &mut serve => result,
            () = async {
                let _ = stopping_rx.await;
                tokio::time::sleep(grace).await;
            } => {
                tracing::warn!(grace_secs = grace.as_secs(), "grace period over, closing remaining connections");
                Ok(())
            }
        };
        // The last request has had its answer: the relays lease nothing
        // more and finish the rounds they began (mails sent are recorded
        // as sent, so the next server does not send them again).
        tracing::info!("shutting down: finishing the background rounds under way");
        self.rounds.stop(self.round_limit).await;
        served
    }
}

/// The whole router: health endpoints, Leptos pages and server functions,
/// static files, request ids and tracing.
pub fn router(state: ServerState, port: u16) -> Router {
    crate::telemetry::init_executor();
    let routes = page_routes();
    let services = state.services.clone();
    let leptos_options = state.leptos_options.clone();
    let stylesheet = state.stylesheet.clone();
    let context = move || {
        provide_context(services.clone());
        provide_context(stylesheet.clone());
    };
    let settings = &state.settings;
    let https = settings.server.public_url.starts_with("https://");
    let sessions = SessionManagerLayer::new(engine::sessions::RedisSessionStore::new(
        state.services.redis.clone(),
    ))
    // Over https a `__Host-` cookie: the browser takes it only from this
    // host, secure, for the whole site, so no subdomain can plant or read
    // it. (Renaming it signs everyone out once, on the first deploy.)
    .with_name(session_cookie_name(https))
    .with_path("/")
    .with_http_only(true)
    .with_same_site(SameSite::Lax)
    .with_secure(https)
    .with_expiry(Expiry::OnInactivity(time::Duration::minutes(
        i64::try_from(settings.sessions.idle_timeout_mins).unwrap_or(i64::MAX / 60),
    )))
    .with_signed(Key::from(&Sha512::digest(
        settings.session_key().expose_secret().as_bytes(),
    )));
    let security = crate::middleware::headers::Security { https };
    let request_timeout = std::time::Duration::from_secs(settings.server.request_timeout_secs);
    let hosts = crate::middleware::hosts::Hosts::new(
        &settings.public_origin(),
        &settings.server.allowed_hosts,
        port,
    );
    let same_origin = csrf::SameOrigin {
        origins: hosts.origins().into(),
    };
    let mut router = crate::assets::mount(
        Router::new(),
        &state.leptos_options.site_root,
        &state.leptos_options.site_pkg_dir,
    );
    // Development without an SMTP server, on loopback: the dev mailbox.
    if settings.dev_mailbox() {
        router = router
            .route("/dev/mailbox", get(crate::routes::dev_mailbox::list))
            .route("/dev/mailbox/{id}", get(crate::routes::dev_mailbox::show));
    }
    router
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        // Browsers ask for /favicon.ico whatever the page links; the icon is
        // the SVG in public/ (no page render for a missing icon).
        .route(
            "/favicon.ico",
            get(|| async {
                (
                    axum::http::StatusCode::MOVED_PERMANENTLY,
                    [(axum::http::header::LOCATION, "/favicon.svg")],
                )
            }),
        )
        .route("/lang/{tag}", get(routes::lang::switch))
        .route("/metrics", get(routes::metrics::scrape))
        .merge(routes::api::router())
        .route(
            "/admin/t/{tenant}/s/{share}/upload",
            // The storage layer enforces `storage.max_upload_bytes` while streaming.
            axum::routing::post(routes::console::upload_form)
                .layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/admin/t/{tenant}/logo",
            axum::routing::post(routes::console::logo_form).layer(
                axum::extract::DefaultBodyLimit::max(routes::console::MAX_LOGO_FORM_BYTES),
            ),
        )
        .route("/brand/logo/{logo}", get(routes::branding::logo))
        .route("/brand/v1/accent/{file}", get(routes::branding::accent_css))
        .route(
            "/admin/t/{tenant}/s/{share}/import",
            axum::routing::post(routes::console::import_form).layer(
                axum::extract::DefaultBodyLimit::max(engine::imports::MAX_REQUEST_BYTES),
            ),
        )
        .route(
            "/admin/t/{tenant}/s/{share}/batches/{batch}/mail/file",
            axum::routing::post(routes::console::mailing_file_form).layer(
                axum::extract::DefaultBodyLimit::max(routes::console::MAX_LIST_FILE_BYTES),
            ),
        )
        .route(
            "/admin/t/{tenant}/s/{share}/batches/{batch}/codes.csv",
            get(routes::console::codes_csv),
        )
        .route(
            "/admin/t/{tenant}/s/{share}/codes.csv",
            get(routes::console::code_table_csv),
        )
        .route(
            "/admin/t/{tenant}/s/{share}/records.csv",
            get(routes::console::records_csv),
        )
        .route(
            "/admin/t/{tenant}/s/{share}/learners.csv",
            get(routes::console::learners_csv),
        )
        .route(
            "/admin/t/{tenant}/s/{share}/r/{resource}/preview",
            get(routes::console::preview),
        )
        .leptos_routes_with_context(&state, routes, context.clone(), move || {
            app::shell(leptos_options.clone())
        })
        // What no route answers: a file of the site root, else the 404
        // page (see `site_files_or_not_found`).
        .fallback_service(site_files_or_not_found(&state, context))
        .with_state(state)
        // Inside the router (`route_layer`), so the matched route is known.
        .route_layer(axum::middleware::from_fn(routes::metrics::track))
        .layer(
            tower::ServiceBuilder::new()
                // Outermost too: a panic in a middleware below (sessions,
                // CSRF, headers) is still an answer; the innermost one
                // catches the handlers' with every header on.
                .layer(axum::middleware::from_fn(
                    crate::middleware::panic::catch_panic,
                ))
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(TraceLayer::new_for_http().make_span_with(RequestSpan))
                .layer(axum::middleware::from_fn(
                    crate::telemetry::carry_request_span,
                ))
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(axum::middleware::from_fn(
                    crate::middleware::headers::no_store,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    security,
                    crate::middleware::headers::security,
                ))
                // Around every layer that answers on its own (deadline,
                // CSRF, session store, panic): a server function's caller
                // gets an error it can read.
                .layer(axum::middleware::from_fn(
                    crate::middleware::server_fn_errors::server_fn_errors,
                ))
                // Inside the request's span, id and headers: a timed-out
                // answer is dressed and logged like any other.
                .layer(axum::middleware::from_fn_with_state(
                    request_timeout,
                    crate::middleware::deadline::deadline,
                ))
                // Only the server's own names, before any route or session.
                .layer(axum::middleware::from_fn_with_state(
                    hosts,
                    crate::middleware::hosts::known_host,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    same_origin,
                    csrf::same_origin,
                ))
                // Around the session layer: its save failures become 503.
                .layer(axum::middleware::from_fn(
                    crate::middleware::outage::session_store_failures,
                ))
                .layer(sessions)
                // Innermost: a panic is a 500 that every layer above still
                // dresses (request id, security headers) and logs.
                .layer(axum::middleware::from_fn(
                    crate::middleware::panic::catch_panic,
                ))
                // Leptos finds its context under an owner of this request
                // only (`middleware::owner`).
                .layer(axum::middleware::from_fn(
                    crate::middleware::owner::own_owner,
                )),
        )
}

/// What no route answers: a file of the site root (`public/`, copied there
/// by the build: the icon), else the "page not found" page (404).
///
/// leptos_axum's `file_and_error_handler` serves a file under an `Owner`
/// made with `Owner::new()`, and applies that owner's response options to
/// it: under a leftover page root (see `middleware::owner`) the icon took
/// the page's headers, its Content-Security-Policy among them, and the
/// page went out with the non-page policy (`default-src 'none'`): no
/// script ran, nothing hydrated. `middleware::owner` alone prevents that;
/// files are also served here by `ServeDir`, with no reactive owner at
/// all, so a GET or HEAD of a file never meets leptos. Other methods, and
/// whatever is not a file, go to leptos' handler as before (a POST to a
/// file's address is served the file by it, under the request's own
/// owner).
fn site_files_or_not_found(
    state: &ServerState,
    context: impl Fn() + Clone + Send + Sync + 'static,
) -> tower_http::services::ServeDir<
    impl tower::Service<
        axum::extract::Request,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future = impl Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static,
> {
    let not_found =
        leptos_axum::file_and_error_handler_with_context::<ServerState, _>(context, app::shell);
    tower_http::services::ServeDir::new(state.leptos_options.site_root.as_ref())
        .append_index_html_on_directories(false)
        // Any method on an unknown address reads the 404 page, as before.
        .call_fallback_on_method_not_allowed(true)
        .fallback(axum::handler::Handler::with_state(not_found, state.clone()))
}

/// The session cookie's name: `__Host-admitone_session` over https (the
/// prefix binds it to this host, secure and site-wide), `admitone_session`
/// over plain http (development), where a `__Host-` cookie would be
/// refused.
pub fn session_cookie_name(https: bool) -> &'static str {
    if https {
        "__Host-admitone_session"
    } else {
        "admitone_session"
    }
}

/// The pages' routes, generated once per process.
///
/// Leptos generates the list by rendering the app with resource loading
/// suppressed, and the suppression is a process-wide flag
/// (`leptos::server::SuppressResourceLoad`): while it is set, every
/// `Resource` created anywhere in the process waits forever. A page
/// rendered by a server that is already serving while another one builds
/// its router (tests run several in one process) never answered. Generated
/// once, before the first server in the process serves, no render can ever
/// overlap it. (Test: `pages_always_answer_while_many_render_at_once`.)
fn page_routes() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> =
        std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(app::App)).clone()
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
