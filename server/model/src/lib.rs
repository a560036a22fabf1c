//! The vocabulary both sides of the wire share.
//!
//! The engine's errors say *what happened* (`SlugTaken`, `CodeBound`); this
//! crate says *what kind of thing* that is for whoever asked (a conflict, bad
//! input, a reason to wait and retry) and how each kind is served. Every
//! adapter (the pages' server functions, the JSON API) turns a domain error
//! into a response through [`ErrorKind`], so a page and the API can never
//! disagree on a status again; the table lives in one `match` below and in
//! `docs/ARCHITECTURE.md` ("Errors").
//!
//! The read models pages match on live here too, as types instead of
//! strings: a share's [`ShareStatus`], a resource's [`ResourceKind`], a
//! code's [`CodeState`], and [`Unavailability`], why a course is closed to
//! learners; each language translates the variant, never English text, and
//! a `match` on them is exhaustive, so a new variant cannot go untranslated.
//! The ids ([`TenantId`], [`AccountId`], [`ShareId`]) are newtypes so that a
//! share's id is never passed where a tenant's is expected. [`Role`] and
//! [`Permission`] are who may do what in a tenant (one table,
//! [`Role::allows`]), and [`Lang`] the languages pages and mails are
//! written in.
//!
//! With the `sqlx` feature (the engine's) the enums are read from and
//! written to their `text` columns directly (the migrations' `CHECK`s
//! spell the same words), and with `utoipa` they are enums in the OpenAPI
//! document. The wasm build enables neither.
//!
//! [`catalogue`] holds the messages of pages, mails and errors in every
//! language, checked at build time against each `.ftl` file.
//!
//! No I/O and no heavy dependencies: the wasm build links this too, because
//! the pages' error type carries a kind across the wire.

mod text_enum;

pub mod catalogue;
mod code;
mod ids;
mod lang;
mod path;
mod role;
mod share;
mod transfer;

pub use catalogue::{BrowserErrorMsg, ErrorMsg, Msg};
pub use code::{CodeState, InvalidCodeState};
pub use ids::{AccountId, ShareId, TenantId};
pub use lang::Lang;
pub use path::is_local_path;
pub use role::{InvalidRole, Permission, Role};
pub use share::{
    InvalidResourceKind, InvalidShareStatus, ResourceKind, ShareStatus, Unavailability,
};
pub use transfer::{InvalidTransferStatus, TransferStatus};

use http::StatusCode;
use serde::{Deserialize, Serialize};

/// What kind of outcome an error is, for the person or program that asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request is not what the endpoint reads (not JSON, a broken
    /// multipart body, a query that does not parse). Nothing changed.
    Malformed,
    /// The endpoint exists but does not take this HTTP method.
    MethodNotAllowed,
    /// The input does not parse or breaks a rule about its own shape; a
    /// field names the input when there is one. Nothing changed.
    Invalid,
    /// Nobody is signed in (or the credentials are wrong).
    Unauthenticated,
    /// Signed in, but this is not theirs to do or see, or a rule of the
    /// course says no (no code yet, the course is closed, the limit is used).
    Forbidden,
    /// No such thing (or not one the caller may know exists).
    NotFound,
    /// The request is well formed but clashes with the current state (the
    /// code is bound to someone else, the link name is taken).
    Conflict,
    /// It existed and is gone for good (a one-time download taken).
    Gone,
    /// An upload over its limit.
    TooLarge,
    /// Too many attempts; `Retry-After` says when to come back.
    RateLimited,
    /// Someone else holds what this needs right now; retrying in a moment
    /// succeeds or gives a final answer.
    Busy,
    /// A dependency cannot serve now (Redis down, PostgreSQL restarting).
    Unavailable,
    /// A fault on our side; the details are in the log under a reference.
    Internal,
}

impl ErrorKind {
    /// Every kind, for tables and tests.
    pub const ALL: [ErrorKind; 13] = [
        Self::Malformed,
        Self::MethodNotAllowed,
        Self::Invalid,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::NotFound,
        Self::Conflict,
        Self::Gone,
        Self::TooLarge,
        Self::RateLimited,
        Self::Busy,
        Self::Unavailable,
        Self::Internal,
    ];

    /// The HTTP status every adapter serves this kind with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::Malformed => StatusCode::BAD_REQUEST,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            // A busy code is a conflict that ends by itself: same status, and
            // `Retry-After` tells the caller to come back.
            Self::Conflict | Self::Busy => StatusCode::CONFLICT,
            Self::Gone => StatusCode::GONE,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Seconds to wait before retrying, where waiting is the whole remedy.
    /// (Rate limits carry their own, from the throttle window.)
    pub fn retry_after_secs(self) -> Option<u64> {
        match self {
            Self::Busy => Some(1),
            Self::Unavailable => Some(2),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_client_or_server_status() {
        for kind in ErrorKind::ALL {
            let status = kind.status();
            assert!(
                status.is_client_error() || status.is_server_error(),
                "{kind:?} → {status}"
            );
            // Only faults and outages are 5xx: bad input is never a 5xx.
            assert_eq!(
                status.is_server_error(),
                matches!(kind, ErrorKind::Unavailable | ErrorKind::Internal),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn only_waiting_kinds_carry_a_retry_after() {
        assert_eq!(ErrorKind::Busy.retry_after_secs(), Some(1));
        assert_eq!(ErrorKind::Unavailable.retry_after_secs(), Some(2));
        for kind in ErrorKind::ALL {
            if !matches!(kind, ErrorKind::Busy | ErrorKind::Unavailable) {
                assert_eq!(kind.retry_after_secs(), None, "{kind:?}");
            }
        }
    }
}
