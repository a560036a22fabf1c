//! The answers of a course's errors: its settings, its content, its
//! batches, imports, mailings, orders, refunds and the shops that send
//! them, one code, and the storage under its files. A
//! variant several of them share (`ShareNotFound`, `InvalidExpiry`)
//! answers the same in each.

use super::{ErrorKind, INVALID_INPUT, Outcome};
use crate::{
    batches::BatchError,
    code_actions::CodeError,
    imports::ImportError,
    mailings::MailingError,
    orders::OrderError,
    refunds::RefundError,
    resources::ResourceError,
    shares::ShareError,
    shops::{ShopError, intake::DeliveryError},
    storage::StorageError,
};

impl Outcome for ShareError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidTitle
            | Self::InvalidSlug
            // Fixed by choosing another link name, like a malformed one.
            | Self::SlugTaken
            | Self::InvalidDescription
            | Self::InvalidStatus
            | Self::QuotaBelowUse { .. }
            | Self::LearnerLimitBelowUse { .. }
            | Self::SlugLocked
            | Self::InvalidLimit
            | Self::InvalidWindow
            | Self::InvalidAccessDays => K::Invalid,
            Self::ShareNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidTitle
            | Self::InvalidSlug
            | Self::InvalidDescription
            | Self::InvalidStatus
            | Self::QuotaBelowUse { .. }
            | Self::LearnerLimitBelowUse { .. }
            | Self::SlugLocked
            | Self::InvalidLimit
            | Self::InvalidWindow
            | Self::InvalidAccessDays => INVALID_INPUT,
            Self::SlugTaken => "slug_taken",
            Self::ShareNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidTitle => Some("title"),
            Self::InvalidSlug | Self::SlugTaken | Self::SlugLocked => Some("slug"),
            Self::InvalidDescription => Some("description"),
            Self::InvalidStatus => Some("status"),
            Self::QuotaBelowUse { .. } | Self::InvalidLimit => Some("quota"),
            Self::LearnerLimitBelowUse { .. } => Some("per_learner_limit"),
            Self::InvalidWindow => Some("valid_until"),
            Self::InvalidAccessDays => Some("access_days"),
            Self::ShareNotFound | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for ResourceError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidTitle
            // Fixed by ticking "remove anyway": a missing input.
            | Self::ResourceInUse { .. } => K::Invalid,
            Self::ResourceNotFound
            | Self::ShareNotFound => K::NotFound,
            Self::StorageQuotaExceeded { .. } | Self::StorageFull { .. } => K::TooLarge,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidTitle => INVALID_INPUT,
            Self::ResourceNotFound | Self::ShareNotFound => "not_found",
            Self::ResourceInUse { .. } => "resource_in_use",
            Self::StorageQuotaExceeded { .. } | Self::StorageFull { .. } => {
                "storage_quota_exceeded"
            }
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidTitle => Some("title"),
            Self::ResourceNotFound
            | Self::ShareNotFound
            | Self::StorageQuotaExceeded { .. }
            | Self::StorageFull { .. }
            | Self::Unexpected(_) => None,
            Self::ResourceInUse { .. } => Some("force"),
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for MailingError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::EmptyList
            | Self::TooManyAddresses
            | Self::InvalidAddresses(_)
            | Self::NotEnoughCodes { .. }
            | Self::InvalidLang => K::Invalid,
            Self::NotMailable
            | Self::CodeNotMailed
            | Self::CodeRedeemed
            | Self::CodeRevoked
            | Self::CodeExpired
            | Self::ResendTooSoon
            | Self::NoCodeLeft => K::Conflict,
            Self::BatchChanged => K::Busy,
            Self::BatchNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::EmptyList
            | Self::TooManyAddresses
            | Self::InvalidAddresses(_)
            | Self::InvalidLang => INVALID_INPUT,
            Self::BatchChanged => "busy_retry",
            Self::NotEnoughCodes { .. } => "not_enough_codes",
            Self::NotMailable => "batch_not_mailable",
            Self::CodeNotMailed => "code_not_mailed",
            Self::CodeRedeemed => "code_redeemed",
            Self::CodeRevoked => "code_revoked",
            Self::CodeExpired => "code_expired",
            Self::ResendTooSoon => "resend_too_soon",
            Self::NoCodeLeft => "no_code_left",
            Self::BatchNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::EmptyList
            | Self::TooManyAddresses
            | Self::InvalidAddresses(_)
            | Self::NotEnoughCodes { .. } => Some("addresses"),
            Self::InvalidLang => Some("lang"),
            Self::NotMailable
            | Self::BatchNotFound
            | Self::BatchChanged
            | Self::CodeNotMailed
            | Self::CodeRedeemed
            | Self::CodeRevoked
            | Self::CodeExpired
            | Self::ResendTooSoon
            | Self::NoCodeLeft
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

impl Outcome for OrderError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidSource
            | Self::SourceOfAShop
            | Self::InvalidOrderRef
            | Self::InvalidEmail
            | Self::InvalidQuantity
            | Self::InvalidLang
            | Self::AddressTakesOneCode => K::Invalid,
            Self::OrderConflict => K::Conflict,
            Self::Busy => K::Busy,
            Self::ShareNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidSource
            | Self::SourceOfAShop
            | Self::InvalidOrderRef
            | Self::InvalidEmail
            | Self::InvalidQuantity
            | Self::InvalidLang
            | Self::AddressTakesOneCode => INVALID_INPUT,
            Self::OrderConflict => "order_conflict",
            Self::Busy => "busy_retry",
            Self::ShareNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidSource | Self::SourceOfAShop => Some("source"),
            Self::InvalidOrderRef => Some("order_id"),
            Self::InvalidEmail => Some("email"),
            Self::InvalidQuantity => Some("quantity"),
            Self::InvalidLang => Some("lang"),
            Self::AddressTakesOneCode => Some("addressed"),
            Self::OrderConflict | Self::Busy | Self::ShareNotFound | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for RefundError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidKind | Self::InvalidAction | Self::InvalidGrace | Self::InvalidReason => {
                K::Invalid
            }
            Self::OrderNotFound | Self::ShareNotFound => K::NotFound,
            Self::Busy => K::Busy,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidKind | Self::InvalidAction | Self::InvalidGrace | Self::InvalidReason => {
                INVALID_INPUT
            }
            Self::OrderNotFound | Self::ShareNotFound => "not_found",
            Self::Busy => "busy_retry",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidKind => Some("kind"),
            Self::InvalidAction => Some("action"),
            Self::InvalidGrace => Some("bound_grace_hours"),
            Self::InvalidReason => Some("reason"),
            Self::OrderNotFound | Self::ShareNotFound | Self::Busy | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for BatchError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidCount
            | Self::InvalidLabel
            | Self::InvalidExpiry
            | Self::IdempotencyKeyReused => K::Invalid,
            Self::BatchAlreadyIssued { .. } => K::Conflict,
            Self::ShareNotFound | Self::CodeNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidCount | Self::InvalidLabel | Self::InvalidExpiry => INVALID_INPUT,
            Self::BatchAlreadyIssued { .. } => "batch_already_issued",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::ShareNotFound | Self::CodeNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidCount => Some("count"),
            Self::InvalidLabel => Some("label"),
            Self::InvalidExpiry => Some("expires_at"),
            Self::BatchAlreadyIssued { .. }
            | Self::IdempotencyKeyReused
            | Self::ShareNotFound
            | Self::CodeNotFound
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

impl Outcome for CodeError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidCodeState
            | Self::InvalidReason
            | Self::InvalidExpiry
            | Self::InvalidExtension => K::Invalid,
            Self::CodeNotFound | Self::ShareNotFound => K::NotFound,
            Self::CodeNotBound
            | Self::CodeNotUnused
            | Self::CodeNotReplaceable
            | Self::CodeExpired
            | Self::NoAccessPeriod => K::Conflict,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidCodeState
            | Self::InvalidReason
            | Self::InvalidExpiry
            | Self::InvalidExtension => INVALID_INPUT,
            Self::CodeNotFound | Self::ShareNotFound => "not_found",
            Self::CodeNotBound => "code_not_bound",
            Self::CodeNotUnused => "code_not_unused",
            Self::CodeNotReplaceable => "code_not_replaceable",
            Self::CodeExpired => "code_expired",
            Self::NoAccessPeriod => "no_access_period",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidCodeState => Some("state"),
            Self::CodeNotFound
            | Self::CodeNotBound
            | Self::CodeNotUnused
            | Self::CodeNotReplaceable
            | Self::CodeExpired
            | Self::NoAccessPeriod
            | Self::ShareNotFound
            | Self::Unexpected(_) => None,
            Self::InvalidReason => Some("reason"),
            Self::InvalidExpiry => Some("expires_at"),
            Self::InvalidExtension => Some("until"),
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for ImportError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidImportFormat
            | Self::InvalidAlphabet
            | Self::InvalidLabel
            | Self::NoCodesToImport
            | Self::TooManyLines { .. }
            | Self::NothingImported { .. }
            | Self::InvalidExpiry => K::Invalid,
            Self::ShareNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidImportFormat
            | Self::InvalidAlphabet
            | Self::InvalidLabel
            | Self::NoCodesToImport
            | Self::TooManyLines { .. }
            | Self::InvalidExpiry => INVALID_INPUT,
            Self::NothingImported { .. } => "nothing_imported",
            Self::ShareNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidImportFormat => Some("format"),
            Self::InvalidAlphabet => Some("alphabet"),
            Self::InvalidLabel => Some("label"),
            Self::NoCodesToImport | Self::TooManyLines { .. } | Self::NothingImported { .. } => {
                Some("codes")
            }
            Self::InvalidExpiry => Some("expires_at"),
            Self::ShareNotFound | Self::Unexpected(_) => None,
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

impl Outcome for ShopError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::InvalidProvider
            | Self::InvalidName
            | Self::InvalidSecret
            | Self::SecretRequired
            | Self::InvalidProductRef => K::Invalid,
            Self::IntegrationNotFound | Self::ProductNotFound | Self::ShareNotFound => K::NotFound,
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidProvider
            | Self::InvalidName
            | Self::InvalidSecret
            | Self::InvalidProductRef => INVALID_INPUT,
            Self::SecretRequired => "secret_required",
            Self::IntegrationNotFound | Self::ProductNotFound | Self::ShareNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidProvider => Some("provider"),
            Self::InvalidName => Some("name"),
            Self::InvalidSecret | Self::SecretRequired => Some("secret"),
            Self::InvalidProductRef => Some("product"),
            Self::IntegrationNotFound
            | Self::ProductNotFound
            | Self::ShareNotFound
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

/// A shop's delivery: the shop reads only the status (2xx: done; else it
/// delivers again later), the console the stored reason.
impl Outcome for DeliveryError {
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Self::NotFound => K::NotFound,
            Self::Unverified(_) => K::Unauthenticated,
            Self::Unreadable(_) | Self::UnknownProduct => K::Invalid,
            Self::Order(e) => e.kind(),
            Self::Refund(e) => e.kind(),
            Self::Unexpected(_) => K::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Unverified(_) => "bad_signature",
            Self::Unreadable(_) => "unreadable_event",
            Self::UnknownProduct => "unknown_product",
            Self::Order(e) => e.code(),
            Self::Refund(e) => e.code(),
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::Order(e) => e.field(),
            Self::Refund(e) => e.field(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What an adapter serves for an error: kind, code, field and the
    /// English message.
    fn answer(
        error: &(impl Outcome + std::fmt::Display),
    ) -> (ErrorKind, &'static str, Option<&'static str>, String) {
        (error.kind(), error.code(), error.field(), error.to_string())
    }

    /// A refusal several of a course's errors share answers the same in
    /// each: "no such share" from a batch is "no such share" from a code.
    #[test]
    fn a_shared_refusal_answers_the_same_in_every_error() {
        let not_found = answer(&ShareError::ShareNotFound);
        for other in [
            answer(&ResourceError::ShareNotFound),
            answer(&BatchError::ShareNotFound),
            answer(&CodeError::ShareNotFound),
            answer(&ImportError::ShareNotFound),
            answer(&crate::shops::ShopError::ShareNotFound),
        ] {
            assert_eq!(other, not_found);
        }
        let expiry = answer(&BatchError::InvalidExpiry);
        assert_eq!(answer(&CodeError::InvalidExpiry), expiry);
        assert_eq!(answer(&ImportError::InvalidExpiry), expiry);
        assert_eq!(
            answer(&ImportError::InvalidLabel),
            answer(&BatchError::InvalidLabel)
        );
        assert_eq!(
            answer(&ResourceError::InvalidTitle),
            answer(&ShareError::InvalidTitle)
        );
        assert_eq!(
            answer(&CodeError::CodeNotFound),
            answer(&BatchError::CodeNotFound)
        );
    }
}
