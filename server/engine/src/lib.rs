//! AdmitOne's native domain.
//!
//! Everything that touches PostgreSQL or Redis lives here, behind typed
//! functions, so that the Leptos server functions in `app` and the axum
//! handlers in `server` stay thin adapters and the invariants of
//! `DESIGN.md` each have exactly one home:
//!
//! * [`db`]: the pool with its statement / transaction timeouts, migrations.
//! * [`coordination`]: the Redis handle and the one place Redis keys are built.
//! * [`accounts`] and [`tenants`]: verified principals and tenant roles.
//! * [`sessions`]: the tower-sessions store on Redis.
//! * [`throttle`]: fixed-window attempt limits (one Lua script).
//! * [`health`]: what `/readyz` asks of the dependencies.

pub mod accounts;
pub mod coordination;
pub mod db;
pub mod health;
pub mod sessions;
pub mod tenants;
pub mod throttle;
