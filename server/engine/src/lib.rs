//! AdmitOne's native domain.
//!
//! Everything that touches PostgreSQL or Redis lives here, behind typed
//! functions, so that the Leptos server functions in `app`, the axum
//! handlers in `server` and the use cases in `service` stay thin, and each
//! invariant of `docs/design/overview.md` has exactly one home. PostgreSQL
//! decides; Redis only coordinates.
//!
//! **The rule of one code, one person**
//! * [`settlement`]: the three phases; **the settlement transaction** is
//!   the PL/pgSQL function in `settlement/settle_access.sql`, called by
//!   `settlement/transaction.rs`; the one wait for a busy code is
//!   [`settlement::patience`].
//! * [`reservation`]: the Redis dual reservation that turns a race's
//!   losers away early (`reserve.lua`, `release.lua`).
//! * [`grants`]: the live grant a resource's bytes are served under (one
//!   read, never a write).
//! * [`access_period`]: a learner's access period after binding, and
//!   admins extending it.
//! * [`invariants`]: every invariant as an SQL check (the suites and the
//!   reconciler).
//!
//! **Courses and their codes**
//! * [`shares`]: a published course, its link, status and limits.
//! * [`resources`]: a share's content, in order (the rows; bytes in
//!   [`storage`]: the local filesystem or an S3 bucket).
//! * [`codes`]: the code's format, check symbol and HMAC keyring.
//! * [`batches`]: codes issued many at a time (idempotent), a batch's
//!   unused codes revoked together.
//! * [`imports`]: codes another system sold, brought in as a batch.
//! * [`mailings`]: a mailable batch's codes mailed to a list, one each.
//! * [`orders`]: a shop's sale turned into codes once (addressed to the
//!   buyer, mailed), however often the shop repeats it.
//! * [`refunds`]: what a refund or chargeback does to an order's codes
//!   (each share's policy: revoke, after a grace for bound ones, or flag).
//! * [`sales`]: a share's orders as the console lists them, with their
//!   codes' states and refunds.
//! * [`shops`]: a tenant's Stripe, Lemon Squeezy, Shopify or Gumroad,
//!   whose signed webhooks place and refund orders.
//! * [`code_table`]: a share's codes page by page, their counts, a pasted
//!   code found.
//! * [`code_actions`]: what an admin does to one code: revoke, its expiry
//!   date, replace, the audited unbind.
//! * [`handover`]: new plain codes, shown once, downloaded once (under a
//!   Redis lease: `release.lua`, `renew.lua`).
//! * [`leaks`]: a bound code others keep trying (the owners are told) and
//!   revoke-and-replace.
//! * [`transfers`]: a learner moving their code to another account: ask,
//!   confirm, an admin's approval on the unbind path.
//! * [`suspension`]: a tenant suspending (and re-enabling) a learner.
//! * [`read_models`]: what the console reads (figures, activity, lists,
//!   the audit log).
//! * [`progress`]: how far a long operation (issuing, importing) has got.
//!
//! **People and tenants**
//! * [`accounts`]: principals, passwords, single-use links (verification,
//!   reset, change of address).
//! * [`tenants`]: tenants, roles and settings; [`team`]: members,
//!   invitations, the last-owner rule; [`zone`]: a tenant's time zone.
//! * [`branding`]: what learners see of a tenant (name, accent, logo).
//! * [`sessions`]: the tower-sessions store on Redis.
//! * [`tokens`]: API tokens (digests, shown once).
//! * [`idempotency`]: `Idempotency-Key` for the JSON API's creates.
//! * [`throttle`]: fixed-window attempt limits (one Lua script).
//!
//! **Events out**
//! * [`audit`]: audit log and outbox rows, written inside the action's
//!   transaction.
//! * [`mail`]: the mail outbox and its relay's claims and records.
//! * [`webhooks`]: the outbox's events delivered to tenants' endpoints.
//! * [`delivery`]: what the two relays share (leases, retries).
//!
//! **Plumbing**
//! * [`db`]: the pool and its timeouts, migrations.
//! * [`coordination`]: the Redis handle; `coordination/keys.rs` is the one
//!   place a Redis key is spelled.
//! * [`health`]: what `/readyz` asks of the dependencies.
//! * [`metrics`]: every metric, named and labelled in one place.
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
pub mod mailings;
pub mod metrics;
pub mod orders;
pub mod outcome;
pub mod progress;
pub mod read_models;
pub mod refunds;
pub mod reservation;
pub mod resources;
pub mod sales;
pub mod sessions;
pub mod settlement;
pub mod shares;
pub mod shops;
pub mod storage;
pub mod suspension;
pub mod team;
pub mod tenants;
pub mod throttle;
pub mod tokens;
pub mod transfers;
pub mod webhooks;
pub mod zone;
