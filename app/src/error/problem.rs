//! Errors that arrive as problem documents (RFC 9457) rather than as an
//! [`AppError`]: an answer in the JSON API's shape read by a page
//! ([`ProblemBody`]), and an error the JSON API would answer translated
//! for the pages ([`Problem`], [`AppError::from_problem`]). Apart from
//! `AppError` itself because it is the one place the API's taxonomy is
//! read back into the pages' errors.

use serde::Deserialize;

use super::{AppError, ErrorKind};

/// What a problem document (RFC 9457, the JSON API's errors) says that a
/// page can use.
#[derive(Deserialize)]
pub(super) struct ProblemBody {
    status: u16,
    code: String,
    #[serde(default)]
    detail: String,
    #[serde(default)]
    field: Option<String>,
}

impl ProblemBody {
    /// A fault elsewhere (any 5xx) carries no reference of ours: it reads as
    /// a moment's outage, as does a status no kind has (a 408). A 409 is
    /// busy when its code says so. A problem without a `detail` says its
    /// code.
    pub(super) fn into_app_error(self) -> AppError {
        let kind = if self.status >= 500 {
            ErrorKind::Unavailable
        } else if self.status == 409 && self.code.contains("busy") {
            ErrorKind::Busy
        } else {
            ErrorKind::ALL
                .into_iter()
                .find(|kind| kind.status().as_u16() == self.status)
                .unwrap_or(ErrorKind::Unavailable)
        };
        let message = if self.detail.trim().is_empty() {
            self.code.clone()
        } else {
            self.detail
        };
        AppError::from_problem(Problem {
            kind,
            code: self.code,
            message,
            field: self.field,
            retry_after_secs: None,
            limit: None,
        })
    }
}

/// An error the JSON API would answer (`server::routes::api::error`): its
/// kind, stable code, English message and field, and what it says about
/// waiting.
#[derive(Debug, Clone)]
pub struct Problem {
    pub kind: ErrorKind,
    pub code: String,
    pub message: String,
    pub field: Option<String>,
    pub retry_after_secs: Option<u64>,
    /// A throttle's limit.
    pub limit: Option<u32>,
}

impl AppError {
    /// The error a page shows for `problem`: the same kind (a malformed
    /// request is invalid input), its code as a refusal's reason. A fault's
    /// reference is its code: the caller of this logs one of its own when
    /// it has one (`server::server_fn_errors`).
    pub fn from_problem(problem: Problem) -> Self {
        let Problem {
            kind,
            code,
            message,
            field,
            retry_after_secs,
            limit,
        } = problem;
        let retry_after_secs = retry_after_secs.or(kind.retry_after_secs()).unwrap_or(1);
        match kind {
            ErrorKind::Unavailable => Self::Unavailable { retry_after_secs },
            ErrorKind::Busy => Self::TryAgain {
                kind,
                message,
                retry_after_secs,
            },
            ErrorKind::RateLimited => Self::RateLimited {
                message,
                limit: limit.unwrap_or(0),
                retry_after_secs,
            },
            ErrorKind::Internal => Self::Internal { reference: code },
            ErrorKind::Unauthenticated => Self::Unauthenticated,
            ErrorKind::NotFound => Self::NotFound,
            ErrorKind::Invalid | ErrorKind::Malformed => Self::Invalid { field, message },
            ErrorKind::MethodNotAllowed
            | ErrorKind::Forbidden
            | ErrorKind::Conflict
            | ErrorKind::Gone
            | ErrorKind::TooLarge => Self::Refused {
                kind,
                reason: code,
                message,
                field,
            },
        }
    }
}
