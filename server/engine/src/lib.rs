//! AdmitOne's native domain.
//!
//! Everything that touches PostgreSQL or Redis lives here, behind typed
//! functions, so that the Leptos server functions in `app` and the axum
//! handlers in `server` stay thin adapters and the invariants of
//! `docs/design/overview.md` each have exactly one home:
//!
//! * [`db`]: the pool with its statement / transaction timeouts, migrations.
//! * [`coordination`]: the Redis handle and the one place Redis keys are built.
//! * [`accounts`] and [`tenants`]: verified principals (and their
//!   single-use links: verification, reset, change of address) and
//!   tenants.
//! * [`codes`]: code format, check symbol, HMAC keyring.
//! * [`shares`]: shares (a published course, its link and limits); the
//!   error of the four share modules.
//! * [`resources`]: a share's content, in order (the rows; bytes in [`storage`]).
//! * [`batches`]: access codes issued many at a time (idempotent), and a
//!   batch's unused codes revoked together.
//! * [`code_table`]: the code table: a share's codes page by page, their
//!   counts, a pasted code found.
//! * [`code_actions`]: the admin's actions on one code: revoke, its expiry
//!   date, replace, the audited unbind.
//! * [`read_models`]: what the admin console reads (figures, activity, audit log).
//! * [`audit`]: audit log and outbox rows, written inside the action's transaction.
//! * [`handover`]: a new batch's plain codes, shown once, downloaded once
//!   (one download at a time, under a Redis lease: `release.lua`, `renew.lua`).
//! * [`sessions`]: the tower-sessions store on Redis.
//! * [`tokens`]: tenant API tokens (stored as digests, shown once).
//! * [`throttle`]: fixed-window attempt limits (one Lua script).
//! * [`settlement`]: the three phases; **the settlement transaction** is in
//!   `settlement/transaction.rs`, the one wait for a busy code in
//!   [`settlement::patience`].
//! * [`storage`]: resource bytes on the local filesystem.
//! * [`mail`]: the mail outbox (rows written in the transaction of what
//!   they report), its relay's claims and records.
//! * [`delivery`]: what the webhook and mail relays share (leases, retries).
//! * [`suspension`]: a tenant suspending (and re-enabling) one of its learners.
//! * [`leaks`]: leak alerts (a bound code others keep trying: the owners
//!   are told once a day) and "revoke and replace".
//! * [`access_period`]: a learner's access period after binding, and
//!   admins extending it (one learner or everyone).
//! * [`team`]: a tenant's members and roles, invitations, the last-owner
//!   rule, tenant signup.
//! * [`webhooks`]: the outbox's events delivered to tenants' endpoints:
//!   the endpoint URL and address filter, the console's endpoints and
//!   deliveries, the relay's claims and signature.
//! * [`reservation`]: the Redis dual reservation (`reserve.lua`, `release.lua`).
//! * [`invariants`]: every invariant as an SQL check (suite and reconciler).
//! * [`health`]: what `/readyz` asks of the dependencies.
//! * [`outcome`]: each domain error's kind, stable code and field: what
//!   every adapter serves it as.

pub mod access_period;
pub mod accounts;
pub mod audit;
pub mod batches;
pub mod branding;
pub mod code_actions;
pub mod code_table;
pub mod codes;
pub mod coordination;
pub mod db;
pub mod delivery;
pub mod grants;
pub mod handover;
pub mod health;
pub mod idempotency;
pub mod imports;
pub mod invariants;
pub mod leaks;
pub mod mail;
pub mod metrics;
pub mod outcome;
pub mod progress;
pub mod read_models;
pub mod reservation;
pub mod resources;
pub mod sessions;
pub mod settlement;
pub mod shares;
pub mod storage;
pub mod suspension;
pub mod team;
pub mod tenants;
pub mod throttle;
pub mod tokens;
pub mod transfers;
pub mod webhooks;
pub mod zone;
