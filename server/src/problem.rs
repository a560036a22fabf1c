//! The JSON API's one error shape, RFC 9457 problem details
//! (`application/problem+json`): `{"type", "title", "status", "detail",
//! "code", "field"?}` with the status of its kind and `Retry-After` where
//! waiting helps. `type` and `title` name the kind of problem (one per
//! [`ErrorKind`], each described on `/api/v1/docs#problem-<kind>`); `code`
//! is the stable, finer word clients match on (`code_bound`); `detail` is
//! for people; `field` names the input. Bad input is always 4xx; 5xx means a
//! real fault, whose cause chain goes to the log only.
//!
//! Every status comes from an [`ErrorKind`] (`model`): a domain error's or
//! a use case's ([`ServiceError`]) kind, code and field from
//! `engine::outcome`. The pages' adapter (`app::error::AppError`) reads the
//! same answers, so the two agree for every variant (tested below).

use std::borrow::Cow;

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use engine::{
    accounts::AccountError,
    batches::BatchError,
    branding::BrandingError,
    code_actions::CodeError,
    codes::CodeFormatError,
    imports::ImportError,
    mailings::MailingError,
    orders::OrderError,
    outcome::{ErrorKind, INVALID_INPUT, Outcome},
    refunds::RefundError,
    resources::ResourceError,
    settlement::SettlementError,
    shares::ShareError,
    shops::{ShopError, intake::DeliveryError},
    storage::StorageError,
    suspension::SuspensionError,
    team::TeamError,
    tenants::TenantError,
    tokens::TokenError,
    transfers::TransferError,
    webhooks::WebhookError,
};
use serde_json::json;
use service::{
    ServiceError,
    error::{Reported, report},
};

#[derive(Debug, Clone)]
pub struct ApiError {
    pub kind: ErrorKind,
    pub code: Cow<'static, str>,
    pub message: String,
    pub field: Option<String>,
    pub retry_after: Option<u64>,
    /// A throttle's limit: the answer carries the `RateLimit-*` headers.
    pub rate_limit: Option<u32>,
}

impl ApiError {
    /// An error of `kind` (its status, and its `Retry-After` if waiting is
    /// the remedy) with a stable `code`.
    pub fn new(
        kind: ErrorKind,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            code: code.into(),
            message: message.into(),
            field: None,
            retry_after: kind.retry_after_secs(),
            rate_limit: None,
        }
    }

    /// The HTTP status: the kind's, the one mapping.
    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    pub(crate) fn field(mut self, field: &str) -> Self {
        self.field = Some(field.to_owned());
        self
    }

    pub(crate) fn retry(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, INVALID_INPUT, message).field(field)
    }

    pub fn not_found() -> Self {
        Self::new(ErrorKind::NotFound, "not_found", "not found")
    }

    /// A domain error, served by its kind, code and field.
    pub fn outcome(error: &impl Outcome) -> Self {
        if let Some(unexpected) = error.unexpected() {
            return Self::unexpected(unexpected);
        }
        if error.kind() == ErrorKind::NotFound {
            return Self::not_found();
        }
        let api = Self::new(error.kind(), error.code(), error.to_string());
        match error.field() {
            Some(field) => api.field(field),
            None => api,
        }
    }

    fn unexpected(error: &anyhow::Error) -> Self {
        match report(error) {
            Reported::Internal { reference } => Self::new(
                ErrorKind::Internal,
                "internal",
                format!("something went wrong on our side (reference {reference})"),
            ),
            Reported::Transient => Self::new(
                ErrorKind::Unavailable,
                "unavailable",
                "the service is busy, please try again in a moment",
            )
            .retry(2),
        }
    }
}

/// The media type of every error answer (RFC 9457).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A kind of problem as RFC 9457 names it: the anchor its `type` points to
/// on the docs page, and its `title` (the same for every occurrence).
pub fn problem_type(kind: ErrorKind) -> (&'static str, &'static str) {
    match kind {
        ErrorKind::Malformed => ("malformed", "The request is not what this endpoint reads"),
        ErrorKind::MethodNotAllowed => (
            "method-not-allowed",
            "This endpoint does not take this method",
        ),
        ErrorKind::Invalid => ("invalid", "The input breaks a rule"),
        ErrorKind::Unauthenticated => ("unauthenticated", "Sign in or send a valid API token"),
        ErrorKind::Forbidden => ("forbidden", "Not allowed"),
        ErrorKind::NotFound => ("not-found", "Not found"),
        ErrorKind::Conflict => ("conflict", "Clashes with the current state"),
        ErrorKind::Gone => ("gone", "Gone for good"),
        ErrorKind::TooLarge => ("too-large", "Too large"),
        ErrorKind::RateLimited => ("rate-limited", "Too many requests"),
        ErrorKind::Busy => ("busy", "Busy, retry in a moment"),
        ErrorKind::Unavailable => ("unavailable", "Temporarily unavailable"),
        ErrorKind::Internal => ("internal", "A fault on our side"),
    }
}

impl ApiError {
    /// The problem details document (RFC 9457) this error answers with.
    pub fn body(&self) -> serde_json::Value {
        let (anchor, title) = problem_type(self.kind);
        let mut body = json!({
            "type": format!("/api/v1/docs#problem-{anchor}"),
            "title": title,
            "status": self.status().as_u16(),
            "detail": self.message,
            "code": self.code,
        });
        if let Some(field) = &self.field {
            body["field"] = json!(field);
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status(),
            [(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON))],
            self.body().to_string(),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            let headers = response.headers_mut();
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
            // The IETF draft's names (draft-ietf-httpapi-ratelimit-headers):
            // the window's limit, none left, seconds until it resets.
            if let Some(limit) = self.rate_limit {
                headers.insert("ratelimit-limit", HeaderValue::from(limit));
                headers.insert("ratelimit-remaining", HeaderValue::from(0_u32));
                headers.insert("ratelimit-reset", HeaderValue::from(secs));
            }
        }
        // On a server function's path it is answered as the page's error
        // instead (`crate::middleware::server_fn_errors`).
        response.extensions_mut().insert(self);
        response
    }
}

/// The domain errors the API serves, each through [`ApiError::outcome`].
macro_rules! from_outcome {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for ApiError {
            fn from(error: $error) -> Self {
                Self::outcome(&error)
            }
        }
    )*};
}

from_outcome!(
    BrandingError,
    TeamError,
    TransferError,
    SuspensionError,
    SettlementError,
    ShareError,
    ResourceError,
    BatchError,
    ImportError,
    OrderError,
    RefundError,
    ShopError,
    DeliveryError,
    MailingError,
    CodeError,
    StorageError,
    AccountError,
    TenantError,
    TokenError,
    WebhookError,
    CodeFormatError,
);

/// A use case's outcome: a throttle's and an outage's wait travel as
/// `Retry-After`; everything else is served by its kind, code and field.
impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Throttled {
                limit,
                retry_after_secs,
                ..
            } => Self {
                rate_limit: Some(limit),
                ..Self::outcome(&error).retry(retry_after_secs)
            },
            ServiceError::Unavailable { retry_after_secs } => {
                Self::outcome(&error).retry(retry_after_secs)
            }
            error => Self::outcome(&error),
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
    ApiError::new(ErrorKind::Malformed, code, error.to_string())
}

#[cfg(test)]
mod tests;
