//! The AdmitOne server: configuration, router, startup and the operator
//! subcommands. `main.rs` only parses the command line and calls in here, so
//! integration tests drive the very same code.
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`startup`] | the router and its layers, the session layer, `Application` |
//! | [`state`] | `ServerState`: what every handler extracts |
//! | [`routes`] | the adapters that are not pages: `routes/api` (the JSON API), `routes/console` (uploads, previews, CSV downloads), health, metrics, language, logo, dev mailbox |
//! | [`middleware`] | the request layers: panic, headers, server function errors, deadline, CSRF, session store outages |
//! | [`problem`] | `ApiError`: the JSON API's one error shape (RFC 9457) |
//! | [`caller`] | who calls a console endpoint (session or API token) and the check every one starts with |
//! | [`content`] | a resource's bytes as learners get them (`Range`, headers) |
//! | [`uploads`] | a file stored as a new resource |
//! | [`exports`] | every CSV a creator downloads |
//! | [`assets`] | `/pkg` served precompressed; `server precompress` |
//! | [`config`] | typed settings, loading, validation |
//! | [`mail`] | the mail relay, its transport and templates |
//! | [`relay`] | the webhook relay |
//! | [`rounds`] | the background loops (relays, refund sweeper) and how a stop lets their rounds finish |
//! | [`bootstrap`] | `create-tenant`, the demo seed |
//! | [`reconcile`] | `server reconcile`: every invariant checked in SQL |
//! | [`telemetry`] | logs, traces, the request's span |

// The router is one long type; its layers nest deeper than the default.
#![recursion_limit = "256"]

pub mod assets;
pub mod bootstrap;
pub mod caller;
pub mod config;
pub mod content;
pub mod exports;
pub mod mail;
pub mod middleware;
pub mod problem;
pub mod reconcile;
pub mod relay;
pub mod rounds;
pub mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod uploads;
