//! The JSON API's one error shape: `{"error": "<stable code>", "message":
//! "<for people>", "field"?: "<input field>"}` with the status of its kind
//! and `Retry-After` where waiting helps. Bad input is always 4xx; 5xx
//! means a real fault, whose cause chain goes to the log only.

use std::borrow::Cow;

use app::{error::AppError, learner::flows::LearnerError};
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use engine::{settlement::SettlementError, shares::ShareError, storage::StorageError};
use serde_json::json;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: Cow<'static, str>,
    pub message: String,
    pub field: Option<String>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            code: code.into(),
            message: message.into(),
            field: None,
            retry_after: None,
        }
    }

    fn field(mut self, field: &str) -> Self {
        self.field = Some(field.to_owned());
        self
    }

    fn retry(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message).field(field)
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "not found")
    }

    fn unexpected(error: &anyhow::Error) -> Self {
        match AppError::internal(error) {
            AppError::Internal { reference } => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("something went wrong on our side (reference {reference})"),
            ),
            // A momentary outage (see `engine::db::is_transient`).
            other => Self::from(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.code, "message": self.message });
        if let Some(field) = &self.field {
            body["field"] = json!(field);
        }
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<AppError> for ApiError {
    fn from(error: AppError) -> Self {
        let message = error.to_string();
        let status = error.status();
        match error {
            AppError::Invalid { field, .. } => {
                let e = Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message);
                match field {
                    Some(f) => e.field(&f),
                    None => e,
                }
            }
            AppError::Unauthenticated => {
                Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
            }
            AppError::InvalidCredentials => {
                Self::new(StatusCode::UNAUTHORIZED, "invalid_credentials", message)
            }
            AppError::AccountDisabled => {
                Self::new(StatusCode::FORBIDDEN, "account_disabled", message)
            }
            AppError::Forbidden => Self::new(StatusCode::FORBIDDEN, "forbidden", message),
            AppError::NotFound => Self::not_found(),
            AppError::RateLimited {
                retry_after_secs, ..
            } => Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
                .retry(retry_after_secs),
            AppError::Unavailable { retry_after_secs } => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
                    .retry(retry_after_secs)
            }
            AppError::Refused { reason, .. } => Self::new(status, reason, message),
            AppError::TryAgain {
                retry_after_secs, ..
            } => Self::new(status, "unavailable", message).retry(retry_after_secs),
            AppError::Internal { .. } => {
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
    }
}

impl From<ShareError> for ApiError {
    fn from(error: ShareError) -> Self {
        let message = error.to_string();
        let invalid = |field: &str| Self::invalid(field, message.clone());
        match error {
            ShareError::InvalidTitle => invalid("title"),
            ShareError::InvalidSlug => invalid("slug"),
            ShareError::InvalidDescription => invalid("description"),
            ShareError::InvalidStatus => invalid("status"),
            ShareError::InvalidCodeState => invalid("state"),
            ShareError::InvalidLimit => invalid("quota"),
            ShareError::InvalidWindow => invalid("valid_until"),
            ShareError::InvalidCount => invalid("count"),
            ShareError::InvalidLabel => invalid("label"),
            ShareError::InvalidReason => invalid("reason"),
            ShareError::SlugTaken => {
                Self::new(StatusCode::CONFLICT, "slug_taken", message).field("slug")
            }
            ShareError::BatchAlreadyIssued { .. } => {
                Self::new(StatusCode::CONFLICT, "batch_already_issued", message)
            }
            ShareError::IdempotencyKeyReused => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                message,
            ),
            ShareError::ShareNotFound | ShareError::CodeNotFound | ShareError::ResourceNotFound => {
                Self::not_found()
            }
            ShareError::ResourceInUse { .. } => {
                Self::new(StatusCode::CONFLICT, "resource_in_use", message)
            }
            ShareError::CodeNotBound => Self::new(StatusCode::CONFLICT, "code_not_bound", message),
            ShareError::QuotaBelowUse { .. } => invalid("quota"),
            ShareError::LearnerLimitBelowUse { .. } => invalid("per_learner_limit"),
            ShareError::SlugLocked => invalid("slug"),
            ShareError::CodeNotReplaceable => {
                Self::new(StatusCode::CONFLICT, "code_not_replaceable", message)
            }
            ShareError::Unexpected(e) => Self::unexpected(&e),
        }
    }
}

impl From<SettlementError> for ApiError {
    fn from(error: SettlementError) -> Self {
        use SettlementError as E;
        use StatusCode as S;
        let message = error.to_string();
        match error {
            E::CodeRequired => Self::new(S::FORBIDDEN, "code_required", message),
            E::CodeBound => Self::new(S::CONFLICT, "code_bound", message),
            E::CodeRevoked => Self::new(S::CONFLICT, "code_revoked", message),
            E::WrongShare => Self::new(S::UNPROCESSABLE_ENTITY, "wrong_share", message),
            E::InvalidCode => {
                Self::new(S::UNPROCESSABLE_ENTITY, "invalid_code", message).field("code")
            }
            E::AlreadyHasAccess => Self::new(S::CONFLICT, "already_has_access", message),
            E::ShareUnavailable(_) => Self::new(S::FORBIDDEN, "share_unavailable", message),
            E::QuotaExhausted => Self::new(S::FORBIDDEN, "quota_exhausted", message),
            E::LearnerLimitReached => Self::new(S::FORBIDDEN, "learner_limit_reached", message),
            E::AccountDisabled => Self::new(S::FORBIDDEN, "account_disabled", message),
            E::ResourceNotFound => Self::not_found(),
            E::RequestIdReused => {
                Self::new(S::UNPROCESSABLE_ENTITY, "idempotency_key_reused", message)
            }
            E::InvalidRequestId => Self::invalid("Idempotency-Key", message),
            E::Busy => Self::new(S::CONFLICT, "busy_retry", message).retry(1),
            E::Unavailable => Self::new(S::SERVICE_UNAVAILABLE, "unavailable", message).retry(2),
            E::Unexpected(e) => Self::unexpected(&e),
        }
    }
}

impl From<LearnerError> for ApiError {
    fn from(error: LearnerError) -> Self {
        match error {
            LearnerError::Format(error) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_code",
                error.to_string(),
            )
            .field("code"),
            LearnerError::Settlement(error) => error.into(),
            LearnerError::App(error) => error.into(),
        }
    }
}

impl From<StorageError> for ApiError {
    fn from(error: StorageError) -> Self {
        match error {
            StorageError::TooLarge { .. } => Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                error.to_string(),
            )
            .field("file"),
            StorageError::Unexpected(e) => Self::unexpected(&e),
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> Self {
        Self::unexpected(&error)
    }
}

/// Maps a body/path/query extractor's rejection to a clear 4xx.
pub fn rejection(error: impl std::fmt::Display, code: &'static str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, error.to_string())
}
