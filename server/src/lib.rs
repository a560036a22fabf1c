//! The AdmitOne server: configuration, router, startup and the operator
//! subcommands. `main.rs` only parses the command line and calls in here, so
//! integration tests drive the very same code.

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
pub mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod uploads;
