//! The answers of a learner's errors: the settlement, a typed code,
//! transfers, and a tenant's suspension of a learner.

use super::{ErrorKind, INVALID_INPUT, Outcome};
use crate::{
    codes::CodeFormatError, settlement::SettlementError, suspension::SuspensionError,
    transfers::TransferError,
};

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
            Self::CodeBound
            | Self::CodeRevoked
            | Self::CodeExpired
            | Self::CodeAddressedElsewhere
            | Self::AlreadyHasAccess => K::Conflict,
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
            Self::CodeAddressedElsewhere => "code_addressed_elsewhere",
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

impl Outcome for SuspensionError {
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
