//! The one error type users see.
//!
//! Server functions map every domain error to an [`AppError`] through
//! [`AppError::outcome`], which reads the error's kind, code and field from
//! `engine::outcome` (the same answers the JSON API serves), so a page and
//! the API give one status for one outcome. An expected outcome keeps its
//! meaning and message; anything unexpected becomes `Internal` with a
//! reference, and its full cause chain goes to the log only, never to the
//! browser.
//!
//! An error that arrives as a problem document (the JSON API's shape) is
//! read back into an `AppError` in `problem`.

mod problem;

use crate::i18n::Msg;
pub use model::ErrorKind;
pub use problem::Problem;
use problem::ProblemBody;
use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// Input that does not parse; `field` names the form field, if any.
    #[error("{message}")]
    Invalid {
        field: Option<String>,
        message: String,
    },
    #[error("please sign in first")]
    Unauthenticated,
    /// Unknown email and wrong password look the same.
    #[error("the email or the password is wrong")]
    InvalidCredentials,
    #[error("this account is disabled; contact the course provider")]
    AccountDisabled,
    #[error("you do not have access to this")]
    Forbidden,
    #[error("not found")]
    NotFound,
    #[error("{message}")]
    RateLimited {
        message: String,
        /// Attempts the window allows (`RateLimit-Limit`). Defaulted, so
        /// a browser still decodes an older server's answer mid-deploy.
        #[serde(default)]
        limit: u32,
        retry_after_secs: u64,
    },
    #[error("the service is busy, please try again in a moment")]
    Unavailable { retry_after_secs: u64 },
    /// An expected refusal with its own message; `reason` is its stable
    /// code (`code_bound`, `share_unavailable`, …, the JSON API's `error`)
    /// that pages and tests can rely on, `kind` what sort of refusal it is
    /// (and so its status), `field` the form field it belongs beside.
    #[error("{message}")]
    Refused {
        // A redirect written by an older server has no kind: a refusal.
        #[serde(default = "forbidden")]
        kind: ErrorKind,
        reason: String,
        message: String,
        field: Option<String>,
    },
    /// A momentary refusal worth retrying (someone else holds the code,
    /// the database is slow): the page offers to try again. `kind` is
    /// `Busy` or `Unavailable`.
    #[error("{message}")]
    TryAgain {
        #[serde(default = "busy")]
        kind: ErrorKind,
        message: String,
        retry_after_secs: u64,
    },
    /// Something went wrong on our side; `reference` finds it in the logs.
    #[error("something went wrong on our side (reference {reference})")]
    Internal { reference: String },
}

fn forbidden() -> ErrorKind {
    ErrorKind::Forbidden
}

fn busy() -> ErrorKind {
    ErrorKind::Busy
}

impl AppError {
    /// What kind of outcome this is (the one taxonomy, see `model`).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Invalid { .. } => ErrorKind::Invalid,
            Self::Unauthenticated | Self::InvalidCredentials => ErrorKind::Unauthenticated,
            Self::AccountDisabled | Self::Forbidden => ErrorKind::Forbidden,
            Self::NotFound => ErrorKind::NotFound,
            Self::RateLimited { .. } => ErrorKind::RateLimited,
            Self::Unavailable { .. } => ErrorKind::Unavailable,
            Self::Refused { kind, .. } | Self::TryAgain { kind, .. } => *kind,
            Self::Internal { .. } => ErrorKind::Internal,
        }
    }

    /// The HTTP status the error is served with: its kind's.
    pub fn status(&self) -> http::StatusCode {
        self.kind().status()
    }

    /// The message in the page's language. Messages carried by the error
    /// were written in the request's language by the server; the fixed ones
    /// are translated here. (`Display` stays English, for logs.)
    pub fn text(&self) -> String {
        use crate::i18n::t;
        let fixed = match self {
            Self::Unauthenticated => t(Msg::PleaseSignInFirst),
            Self::InvalidCredentials => t(Msg::TheEmailOrThePasswordIs),
            Self::AccountDisabled => t(Msg::ThisAccountIsDisabledContactThe),
            Self::Forbidden => t(Msg::YouDoNotHaveAccessTo),
            Self::NotFound => t(Msg::NotFound),
            Self::Unavailable { .. } => t(Msg::TheServiceIsBusyPleaseTry),
            Self::Internal { reference } => {
                return crate::i18n::tf(Msg::ServerErrorWithReference, &[("reference", reference)]);
            }
            Self::Invalid { .. }
            | Self::RateLimited { .. }
            | Self::Refused { .. }
            | Self::TryAgain { .. } => return self.to_string(),
        };
        fixed.to_owned()
    }

    /// The message as a sentence for a page: capitalised, with a full stop
    /// (`。` after Chinese).
    pub fn sentence(&self) -> String {
        sentence(&self.text())
    }

    /// Whether trying again in a moment may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::TryAgain { .. } | Self::Unavailable { .. } | Self::Internal { .. }
        )
    }

    /// A field-level input error.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// The message for form field `field`, if this error is about it.
    pub fn field_message(&self, field: &str) -> Option<String> {
        match self {
            Self::Invalid {
                field: Some(f),
                message,
            }
            | Self::Refused {
                field: Some(f),
                message,
                ..
            } if f == field => Some(message.clone()),
            _ => None,
        }
    }

    /// Whether the error belongs to one form field (shown next to it) rather
    /// than to the whole form.
    pub fn is_field_error(&self) -> bool {
        matches!(
            self,
            Self::Invalid { field: Some(_), .. } | Self::Refused { field: Some(_), .. }
        )
    }

    /// Sets the status (and `Retry-After`, `RateLimit-*`) of the response
    /// that carries this error: **the one place an error becomes a status**.
    /// It is called where an error leaves for a reader: when a server
    /// function's error is encoded for its caller
    /// ([`FromServerFnError::ser`](server_fn::error::FromServerFnError::ser)),
    /// and when a page rendered on the server shows one (the error views:
    /// `components::ErrorFlash`, the console's and the resource page's). A
    /// plain HTML form post (no JavaScript) keeps the redirect back to its
    /// page, which shows the error; its status must stay a redirect.
    #[cfg(feature = "ssr")]
    pub fn set_response_status(&self) {
        use leptos::prelude::use_context;
        let (Some(response), Some(parts)) = (
            use_context::<leptos_axum::ResponseOptions>(),
            use_context::<http::request::Parts>(),
        ) else {
            return;
        };
        let html_form = parts.method == http::Method::POST
            && parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/html"));
        if html_form {
            return;
        }
        response.set_status(self.status());
        if let Self::RateLimited {
            retry_after_secs, ..
        }
        | Self::Unavailable { retry_after_secs }
        | Self::TryAgain {
            retry_after_secs, ..
        } = self
        {
            response.insert_header(
                http::header::RETRY_AFTER,
                http::HeaderValue::from(*retry_after_secs),
            );
        }
        // The IETF draft's names, as the JSON API sends them.
        if let Self::RateLimited {
            limit,
            retry_after_secs,
            ..
        } = self
        {
            for (name, value) in [
                ("ratelimit-limit", u64::from(*limit)),
                ("ratelimit-remaining", 0),
                ("ratelimit-reset", *retry_after_secs),
            ] {
                response.insert_header(
                    http::HeaderName::from_static(name),
                    http::HeaderValue::from(value),
                );
            }
        }
    }

    /// In the browser a page has no response to set: nothing to do.
    #[cfg(not(feature = "ssr"))]
    pub fn set_response_status(&self) {}

    /// A domain error as the pages show it: its kind, code and field come
    /// from `engine::outcome` (as for the JSON API), its message in the
    /// page's language from `i18n::errors`.
    #[cfg(feature = "ssr")]
    pub fn outcome<E>(error: E) -> Self
    where
        E: engine::outcome::Outcome + crate::i18n::errors::Localized,
    {
        if let Some(unexpected) = error.unexpected() {
            return Self::internal(unexpected);
        }
        let message = crate::i18n::errors::message(&error);
        let field = error.field().map(str::to_owned);
        match (error.kind(), error.code()) {
            // Pages show bad input beside its field whatever its code.
            (ErrorKind::Invalid, _) => Self::Invalid { field, message },
            (ErrorKind::NotFound, _) => Self::NotFound,
            // A session that ended (signed out everywhere meanwhile).
            (ErrorKind::Unauthenticated, "unauthenticated") => Self::Unauthenticated,
            (ErrorKind::Unauthenticated, _) => Self::InvalidCredentials,
            (ErrorKind::Forbidden, "account_disabled") => Self::AccountDisabled,
            (kind @ (ErrorKind::Busy | ErrorKind::Unavailable), _) => Self::TryAgain {
                kind,
                message,
                retry_after_secs: kind.retry_after_secs().unwrap_or(1),
            },
            (kind, code) => Self::Refused {
                kind,
                reason: code.to_owned(),
                message,
                field,
            },
        }
    }

    /// Logs an unexpected error with its whole chain and returns what the
    /// user may see: a reference to the log line. A momentary outage
    /// (PostgreSQL restarting, Redis away) is `Unavailable` instead: the
    /// request is worth retrying, and nothing is wrong with the code.
    #[cfg(feature = "ssr")]
    pub fn internal(error: &anyhow::Error) -> Self {
        match service::error::report(error) {
            service::error::Reported::Transient => Self::Unavailable {
                retry_after_secs: 2,
            },
            service::error::Reported::Internal { reference } => Self::Internal { reference },
        }
    }
}

/// A use case's outcome as the pages show it: the service's own outcomes
/// keep the shapes pages know (a throttle's wait, an outage's retry, an
/// input error beside its field); the engine's errors inside go through
/// [`AppError::outcome`], like every other domain error.
#[cfg(feature = "ssr")]
impl From<service::ServiceError> for AppError {
    fn from(error: service::ServiceError) -> Self {
        use engine::outcome::Outcome as _;
        use service::ServiceError as E;
        let message = crate::i18n::errors::message(&error);
        match error {
            E::Unauthenticated => Self::Unauthenticated,
            E::Forbidden => Self::Forbidden,
            E::NotFound => Self::NotFound,
            E::Throttled {
                limit,
                retry_after_secs,
                ..
            } => Self::RateLimited {
                message,
                limit,
                retry_after_secs,
            },
            E::Unavailable { retry_after_secs } => Self::Unavailable { retry_after_secs },
            E::PasswordsDiffer
            | E::NewPasswordsDiffer
            | E::WrongCurrentPassword
            | E::InvalidNewPassword(_)
            | E::InvalidNewEmail
            | E::NewEmailTaken
            | E::InvalidRole => Self::Invalid {
                field: error.field().map(str::to_owned),
                message,
            },
            E::SignupClosed | E::VerifyEmailFirst => Self::Refused {
                kind: error.kind(),
                reason: error.code().to_owned(),
                message,
                field: None,
            },
            E::Team(error) => Self::outcome(error),
            E::Tenant(error) => Self::outcome(error),
            E::Suspension(error) => Self::outcome(error),
            E::Transfer(error) => Self::outcome(error),
            E::Account(error) => Self::outcome(error),
            E::Settlement(error) => crate::learner::settlement_error(error),
            E::Share(error) => Self::outcome(error),
            E::Resource(error) => Self::outcome(error),
            E::Batch(error) => Self::outcome(error),
            E::Import(error) => Self::outcome(error),
            E::Code(error) => Self::outcome(error),
            E::Format(error) => Self::outcome(error),
            E::Unexpected(error) => Self::internal(&error),
        }
    }
}

/// A message as a sentence: capitalised, ending in a full stop (`。` after
/// Chinese text).
pub fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let mut sentence: String = first.to_uppercase().chain(chars).collect();
    if !sentence.ends_with(['.', '!', '?', ')', '。', '！', '？', '）']) {
        let chinese = sentence
            .chars()
            .last()
            .is_some_and(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        sentence.push(if chinese { '。' } else { '.' });
    }
    sentence
}

impl server_fn::error::FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    /// The error as its caller reads it, in the answer's status too
    /// ([`AppError::set_response_status`]).
    #[cfg(feature = "ssr")]
    fn ser(&self) -> server_fn::Bytes {
        use server_fn::Encodes as _;
        self.set_response_status();
        JsonEncoding::encode(self).unwrap_or_else(|error| {
            JsonEncoding::encode(&Self::Internal {
                reference: format!("server function: {error}"),
            })
            .unwrap_or_default()
        })
    }

    fn from_server_fn_error(value: server_fn::error::ServerFnErrorErr) -> Self {
        use server_fn::error::ServerFnErrorErr as E;
        match value {
            E::Args(message) | E::Deserialization(message) | E::MissingArg(message) => {
                Self::Invalid {
                    field: None,
                    message,
                }
            }
            other => Self::Internal {
                reference: format!("server function: {other}"),
            },
        }
    }

    /// An error answer in another shape is read for what it says: a
    /// problem document (the JSON API's, an older server's mid-deploy) as
    /// the error of its status, anything else (a proxy's page while the
    /// server restarts, a gateway's timeout) as a moment's outage; never as
    /// a decoding error shown to the person as if their input were wrong.
    /// (Our own layers answer server functions in this shape:
    /// `server::server_fn_errors`.)
    fn de(data: server_fn::Bytes) -> Self {
        use server_fn::Decodes as _;
        JsonEncoding::decode(data.clone())
            .or_else(|_| {
                <JsonEncoding as server_fn::Decodes<ProblemBody>>::decode(data)
                    .map(ProblemBody::into_app_error)
            })
            .unwrap_or(Self::Unavailable {
                retry_after_secs: 2,
            })
    }
}

#[cfg(test)]
mod tests;
