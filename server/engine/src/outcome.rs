//! What each domain error *is*, for whoever asked: its [`ErrorKind`], a
//! stable machine-readable code and the input field it is about.
//!
//! The engine's errors name what happened (`CodeBound`, `SlugTaken`); the
//! adapters (the pages' server functions in `app`, the JSON API in `server`)
//! must serve each one the same way. They used to map every enum on their
//! own and disagreed (`SlugTaken` was 422 on a page and 409 in the API).
//! Now each error answers three questions here, by an exhaustive `match`
//! per enum, and both adapters build their response from the answers: the
//! status from [`ErrorKind::status`], the code as the JSON `error` (and a
//! refusal page's `data-reason`), the field to put the message beside. A
//! new variant does not compile until it has a kind and a code.
//!
//! The codes are API: clients and pages rely on them, so they never change.
//! Messages stay in each error's `Display` (English) and in
//! `app::i18n::errors` (Chinese); nothing here is UI text.

pub use model::ErrorKind;

use crate::{
    accounts::AccountError, branding::BrandingError, codes::CodeFormatError,
    learners::LearnerError, settlement::SettlementError, shares::ShareError, storage::StorageError,
    team::TeamError, tenants::TenantError, tokens::TokenError, transfers::TransferError,
    webhooks::WebhookError,
};

/// A domain error as an outcome an adapter can serve.
pub trait Outcome: std::error::Error {
    /// What kind of outcome this is (and so its HTTP status).
    fn kind(&self) -> ErrorKind;
    /// The stable code: the JSON API's `error`, a refusal page's
    /// `data-reason`.
    fn code(&self) -> &'static str;
    /// The input field the error is about, if one.
    fn field(&self) -> Option<&'static str> {
        None
    }
    /// The unexpected fault inside, if this is one (kind `Internal`): the
    /// adapters log its whole chain and show only a reference.
    fn unexpected(&self) -> Option<&anyhow::Error>;
}

/// The code of a plain input error (the field says which input).
pub const INVALID_INPUT: &str = "invalid_input";

impl Outcome for SettlementError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::CodeRequired
            | Self::ShareUnavailable(_)
            | Self::QuotaExhausted
            | Self::LearnerLimitReached
            | Self::AccountDisabled
            | Self::LearnerSuspended
            | Self::EmailNotVerified
            | Self::AccessEnded { .. }
            | Self::OpenFromCoursePage => K::Forbidden,
            Self::CodeBound | Self::CodeRevoked | Self::CodeExpired | Self::AlreadyHasAccess => {
                K::Conflict
            }
            Self::WrongShare
            | Self::InvalidCode
            | Self::RequestIdReused
            | Self::InvalidRequestId => K::Invalid,
            Self::ResourceNotFound => K::NotFound,
            Self::SessionEnded => K::Unauthenticated,
            Self::Busy => K::Busy,
            Self::Unavailable => K::Unavailable,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::CodeRequired => "code_required",
            Self::CodeBound => "code_bound",
            Self::CodeRevoked => "code_revoked",
            Self::CodeExpired => "code_expired",
            Self::AccessEnded { .. } => "access_ended",
            Self::WrongShare => "wrong_share",
            Self::InvalidCode => "invalid_code",
            Self::AlreadyHasAccess => "already_has_access",
            Self::ShareUnavailable(_) => "share_unavailable",
            Self::QuotaExhausted => "quota_exhausted",
            Self::LearnerLimitReached => "learner_limit_reached",
            Self::AccountDisabled => "account_disabled",
            Self::SessionEnded => "unauthenticated",
            Self::LearnerSuspended => "learner_suspended",
            Self::EmailNotVerified => "email_not_verified",
            Self::ResourceNotFound => "not_found",
            Self::OpenFromCoursePage => "open_from_course_page",
            Self::RequestIdReused => "idempotency_key_reused",
            Self::InvalidRequestId => INVALID_INPUT,
            Self::Busy => "busy_retry",
            Self::Unavailable => "unavailable",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidCode => Some("code"),
            Self::InvalidRequestId => Some("Idempotency-Key"),
            _ => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for ShareError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidTitle
            | Self::InvalidSlug
            | Self::InvalidDescription
            | Self::InvalidStatus
            | Self::InvalidCodeState
            | Self::InvalidLimit
            | Self::InvalidWindow
            | Self::InvalidCount
            | Self::InvalidLabel
            | Self::InvalidReason
            | Self::QuotaBelowUse { .. }
            | Self::LearnerLimitBelowUse { .. }
            | Self::SlugLocked
            // Fixed by ticking "remove anyway": a missing input.
            | Self::ResourceInUse { .. }
            // Fixed by choosing another link name, like a malformed one.
            | Self::SlugTaken
            | Self::InvalidExpiry
            | Self::InvalidAccessDays
            | Self::InvalidExtension
            | Self::InvalidAlphabet
            | Self::InvalidImportFormat
            | Self::NoCodesToImport
            | Self::TooManyLines { .. }
            | Self::NothingImported { .. }
            | Self::IdempotencyKeyReused => K::Invalid,
            Self::BatchAlreadyIssued { .. }
            | Self::CodeNotBound
            | Self::CodeNotUnused
            | Self::NoAccessPeriod
            | Self::CodeExpired
            | Self::CodeNotReplaceable => K::Conflict,
            Self::ShareNotFound | Self::CodeNotFound | Self::ResourceNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidTitle
            | Self::InvalidSlug
            | Self::InvalidDescription
            | Self::InvalidStatus
            | Self::InvalidCodeState
            | Self::InvalidLimit
            | Self::InvalidWindow
            | Self::InvalidCount
            | Self::InvalidLabel
            | Self::InvalidReason
            | Self::QuotaBelowUse { .. }
            | Self::LearnerLimitBelowUse { .. }
            | Self::InvalidExpiry
            | Self::InvalidAccessDays
            | Self::InvalidExtension
            | Self::InvalidAlphabet
            | Self::InvalidImportFormat
            | Self::NoCodesToImport
            | Self::TooManyLines { .. }
            | Self::SlugLocked => INVALID_INPUT,
            Self::NothingImported { .. } => "nothing_imported",
            Self::ResourceInUse { .. } => "resource_in_use",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::SlugTaken => "slug_taken",
            Self::BatchAlreadyIssued { .. } => "batch_already_issued",
            Self::CodeNotBound => "code_not_bound",
            Self::CodeNotUnused => "code_not_unused",
            Self::NoAccessPeriod => "no_access_period",
            Self::CodeNotReplaceable => "code_not_replaceable",
            Self::CodeExpired => "code_expired",
            Self::ShareNotFound | Self::CodeNotFound | Self::ResourceNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidTitle => Some("title"),
            Self::InvalidSlug | Self::SlugTaken | Self::SlugLocked => Some("slug"),
            Self::InvalidDescription => Some("description"),
            Self::InvalidStatus => Some("status"),
            Self::InvalidCodeState => Some("state"),
            Self::InvalidLimit | Self::QuotaBelowUse { .. } => Some("quota"),
            Self::LearnerLimitBelowUse { .. } => Some("per_learner_limit"),
            Self::InvalidWindow => Some("valid_until"),
            Self::InvalidCount => Some("count"),
            Self::InvalidLabel => Some("label"),
            Self::InvalidReason => Some("reason"),
            Self::InvalidExpiry => Some("expires_at"),
            Self::InvalidAccessDays => Some("access_days"),
            Self::InvalidExtension => Some("until"),
            Self::InvalidAlphabet => Some("alphabet"),
            Self::InvalidImportFormat => Some("format"),
            Self::NoCodesToImport | Self::TooManyLines { .. } | Self::NothingImported { .. } => {
                Some("codes")
            }
            Self::ResourceInUse { .. } => Some("force"),
            Self::ResourceNotFound
            | Self::CodeNotReplaceable
            | Self::BatchAlreadyIssued { .. }
            | Self::IdempotencyKeyReused
            | Self::ShareNotFound
            | Self::CodeNotFound
            | Self::CodeNotBound
            | Self::CodeNotUnused
            | Self::NoAccessPeriod
            | Self::CodeExpired
            | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for StorageError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::TooLarge { .. } => ErrorKind::TooLarge,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::TooLarge { .. } => "too_large",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::TooLarge { .. } => Some("file"),
            Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            Self::TooLarge { .. } => None,
        }
    }
}

impl Outcome for AccountError {
    fn kind(&self) -> ErrorKind {
        match self {
            // "Taken" stays an input error: the form asks for another email.
            Self::InvalidEmail
            | Self::InvalidPassword
            | Self::InvalidDisplayName
            | Self::EmailTaken
            | Self::SameEmail => ErrorKind::Invalid,
            Self::InvalidCredentials => ErrorKind::Unauthenticated,
            Self::Disabled => ErrorKind::Forbidden,
            Self::LinkInvalid => ErrorKind::Gone,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            // Taken or malformed, the email field needs another value.
            Self::InvalidEmail
            | Self::InvalidPassword
            | Self::InvalidDisplayName
            | Self::EmailTaken
            | Self::SameEmail => INVALID_INPUT,
            Self::InvalidCredentials => "invalid_credentials",
            Self::Disabled => "account_disabled",
            Self::LinkInvalid => "link_invalid",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidEmail | Self::EmailTaken => Some("email"),
            Self::SameEmail => Some("new_email"),
            Self::InvalidPassword => Some("password"),
            Self::InvalidDisplayName => Some("display_name"),
            Self::InvalidCredentials | Self::Disabled | Self::LinkInvalid | Self::Unexpected(_) => {
                None
            }
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TenantError {
    fn kind(&self) -> ErrorKind {
        match self {
            // Fixed by choosing another address, like a malformed one.
            Self::InvalidSlug | Self::InvalidName | Self::SlugTaken | Self::UnknownTimeZone(_) => {
                ErrorKind::Invalid
            }
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidSlug | Self::InvalidName | Self::UnknownTimeZone(_) => INVALID_INPUT,
            Self::SlugTaken => "slug_taken",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidSlug | Self::SlugTaken => Some("slug"),
            Self::InvalidName => Some("name"),
            Self::UnknownTimeZone(_) => Some("time_zone"),
            Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for BrandingError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidName
            | Self::InvalidAccent
            | Self::InvalidSupportEmail
            | Self::LogoNotAnImage => ErrorKind::Invalid,
            Self::LogoTooLarge => ErrorKind::TooLarge,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidName
            | Self::InvalidAccent
            | Self::InvalidSupportEmail
            | Self::LogoNotAnImage => INVALID_INPUT,
            Self::LogoTooLarge => "too_large",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidName => Some("name"),
            Self::InvalidAccent => Some("accent"),
            Self::InvalidSupportEmail => Some("support_email"),
            Self::LogoNotAnImage | Self::LogoTooLarge => Some("logo"),
            Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TokenError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidName | Self::InvalidScope | Self::InvalidExpiry => ErrorKind::Invalid,
            Self::BeyondCaller => ErrorKind::Forbidden,
            Self::TooMany => ErrorKind::Conflict,
            Self::NotFound => ErrorKind::NotFound,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidName | Self::InvalidScope | Self::InvalidExpiry => INVALID_INPUT,
            Self::BeyondCaller => "token_beyond_caller",
            Self::TooMany => "too_many_tokens",
            Self::NotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidName => Some("name"),
            Self::InvalidScope => Some("scopes"),
            Self::InvalidExpiry => Some("expires_at"),
            Self::BeyondCaller | Self::TooMany | Self::NotFound | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for WebhookError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidUrl | Self::InvalidEvents => ErrorKind::Invalid,
            Self::EndpointNotFound | Self::DeliveryNotFound => ErrorKind::NotFound,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidUrl | Self::InvalidEvents => INVALID_INPUT,
            Self::EndpointNotFound | Self::DeliveryNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidUrl => Some("url"),
            Self::InvalidEvents => Some("events"),
            Self::EndpointNotFound | Self::DeliveryNotFound | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TeamError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::LastOwner | Self::AlreadyMember => ErrorKind::Conflict,
            Self::MemberNotFound | Self::InvitationNotFound => ErrorKind::NotFound,
            Self::InvitationInvalid => ErrorKind::Gone,
            Self::WrongAccount { .. } => ErrorKind::Forbidden,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::LastOwner => "last_owner",
            Self::AlreadyMember => "already_member",
            Self::MemberNotFound | Self::InvitationNotFound => "not_found",
            Self::InvitationInvalid => "invitation_invalid",
            Self::WrongAccount { .. } => "invitation_for_another_address",
            Self::Unexpected(_) => "internal",
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TransferError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::NotHolder | Self::WrongAccount { .. } | Self::Closed | Self::HolderSuspended => {
                K::Forbidden
            }
            Self::SameAccount | Self::InvalidNote | Self::InvalidReason => K::Invalid,
            Self::LimitReached { .. }
            | Self::TargetHasCode
            | Self::NotOpen { .. }
            | Self::CodeChanged
            | Self::TargetBlocked => K::Conflict,
            Self::NotFound => K::NotFound,
            Self::LinkInvalid => K::Gone,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::NotHolder => "no_code_held",
            Self::SameAccount => "same_account",
            Self::LimitReached { .. } => "transfer_limit_reached",
            Self::InvalidNote | Self::InvalidReason => INVALID_INPUT,
            Self::NotFound => "not_found",
            Self::LinkInvalid => "link_invalid",
            Self::WrongAccount { .. } => "transfer_for_another_address",
            Self::TargetHasCode => "target_has_code",
            Self::NotOpen { .. } => "transfer_not_open",
            Self::CodeChanged => "code_changed",
            Self::Closed => "transfers_closed",
            Self::HolderSuspended => "learner_suspended",
            Self::TargetBlocked => "target_blocked",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::SameAccount => Some("email"),
            Self::InvalidNote => Some("note"),
            Self::InvalidReason => Some("reason"),
            _ => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for LearnerError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound => ErrorKind::NotFound,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            Self::NotFound => None,
        }
    }
}

/// A typed code that is not a code (caught before anything is counted).
impl Outcome for CodeFormatError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Invalid
    }

    fn code(&self) -> &'static str {
        "invalid_code"
    }

    fn field(&self) -> Option<&'static str> {
        Some("code")
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        None
    }
}
