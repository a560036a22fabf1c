//! The pages' error ([`AppError`]) served as JSON. The console's
//! plain-HTTP routes (`routes::console`) share the pages' session helpers
//! (flash messages), whose errors are `AppError`s; this is how such an
//! error reaches a client of those routes. Each variant keeps its status
//! (its kind's), its code and field: the adapter test in
//! `routes::api::error` checks the JSON API, the pages and this mapping
//! agree for every domain error.

use app::error::AppError;
use engine::outcome::{ErrorKind, INVALID_INPUT};

use crate::problem::ApiError;

impl From<AppError> for ApiError {
    fn from(error: AppError) -> Self {
        let message = error.to_string();
        let kind = error.kind();
        match error {
            AppError::Invalid { field, .. } => {
                let e = Self::new(kind, INVALID_INPUT, message);
                match field {
                    Some(f) => e.field(&f),
                    None => e,
                }
            }
            AppError::Unauthenticated => Self::new(kind, "unauthenticated", message),
            AppError::InvalidCredentials => Self::new(kind, "invalid_credentials", message),
            AppError::AccountDisabled => Self::new(kind, "account_disabled", message),
            AppError::Forbidden => Self::new(kind, "forbidden", message),
            AppError::NotFound => Self::not_found(),
            AppError::RateLimited {
                limit,
                retry_after_secs,
                ..
            } => Self {
                rate_limit: Some(limit),
                ..Self::new(kind, "rate_limited", message).retry(retry_after_secs)
            },
            AppError::Unavailable { retry_after_secs } => {
                Self::new(kind, "unavailable", message).retry(retry_after_secs)
            }
            AppError::Refused { reason, field, .. } => {
                let e = Self::new(kind, reason, message);
                match field {
                    Some(f) => e.field(&f),
                    None => e,
                }
            }
            AppError::TryAgain {
                retry_after_secs, ..
            } => {
                let code = if kind == ErrorKind::Busy {
                    "busy_retry"
                } else {
                    "unavailable"
                };
                Self::new(kind, code, message).retry(retry_after_secs)
            }
            AppError::Internal { .. } => Self::new(kind, "internal", message),
        }
    }
}
