//! AdmitOne's use cases: what a person can do, whichever door they came in
//! by.
//!
//! Two adapters serve the same product: the Leptos server functions and
//! pages (`app`) and the JSON API (`server/src/routes/api`). Before this
//! crate each use case lived inside the UI crate and the API reached the
//! domain through it. Now both call the functions here, which parse,
//! throttle, read the session, call the engine, and answer with typed
//! outcomes ([`ServiceError`] and plain structs), never with text for a
//! person: each adapter renders an outcome in its own form (a localised
//! page, English JSON) through the one taxonomy (`engine::outcome`).
//!
//! | module | the use cases |
//! | --- | --- |
//! | [`state`] | [`Services`]: the handles every use case needs (pool, Redis, keyring, settler, storage, policy) |
//! | [`error`] | [`ServiceError`]: every outcome a use case can end in, with its kind, code and field |
//! | [`throttle`] | one attempt counted against a fixed-window limit |
//! | [`session`] | who is asking: sign-in state in the session, `member_of` (a tenant's member whose role allows a permission), the client's IP |
//! | [`accounts`] | register, sign in, change password; verify the address, forgot password and reset, change of address |
//! | [`team`] | a tenant's team: invite, accept, change a role, remove, leave; tenant signup; suspending a learner |
//! | [`issuing`] | issuing and replacing codes: park them for one viewing, or undo; imports |
//! | [`learner`] | a share's page, code entry (phases 1+2), opening a resource (phase 3), my courses |
//! | [`content`] | a resource's bytes under a live grant: the grant cache, the per-account limit |
//! | [`branding`] | a tenant's logo for anyone (limited per client address) |
//! | [`recent_shares`] | shares looked up by link name lately, for `POST …/open` (the settlement reads what can change) |
//! | [`transfers`] | a learner moves their code to another account: ask, withdraw, the receiving account's confirmation |
//! | [`request_span`] | the span of the request being served, carried by the task, so that what a use case learns (who asked) lands on it |
//!
//! Native only (the wasm never links it): it depends on the engine, which
//! holds the invariants; nothing here may bypass it.

pub mod accounts;
pub mod branding;
pub mod content;
pub mod error;
pub mod issuing;
pub mod learner;
pub mod recent_shares;
pub mod request_span;
pub mod session;
pub mod state;
pub mod team;
pub mod throttle;
pub mod transfers;

pub use error::ServiceError;
pub use state::{AuthPolicy, Services};
