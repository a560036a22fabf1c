//! A sample of every variant of the console side's errors: shares,
//! resources, batches, codes, imports, storage, tenants, branding, the
//! team, API tokens, webhooks and the code format. Apart from the
//! adapters' comparison (`tests.rs`) so that the samples, which grow with
//! every new variant, do not bury it.

use super::*;

pub(super) fn share_errors() -> Vec<ShareError> {
    use ShareError as E;
    let all = vec![
        E::InvalidTitle,
        E::InvalidSlug,
        E::SlugTaken,
        E::InvalidDescription,
        E::InvalidStatus,
        E::QuotaBelowUse { used: 3 },
        E::LearnerLimitBelowUse { used: 2 },
        E::SlugLocked,
        E::InvalidLimit,
        E::InvalidWindow,
        E::InvalidAccessDays,
        E::ShareNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 13, |e| match e {
        E::InvalidTitle => 0,
        E::InvalidSlug => 1,
        E::SlugTaken => 2,
        E::InvalidDescription => 3,
        E::InvalidStatus => 4,
        E::QuotaBelowUse { .. } => 5,
        E::LearnerLimitBelowUse { .. } => 6,
        E::SlugLocked => 7,
        E::InvalidLimit => 8,
        E::InvalidWindow => 9,
        E::InvalidAccessDays => 10,
        E::ShareNotFound => 11,
        E::Unexpected(_) => 12,
    });
    all
}

pub(super) fn resource_errors() -> Vec<ResourceError> {
    use ResourceError as E;
    let all = vec![
        E::InvalidTitle,
        E::ResourceNotFound,
        E::ResourceInUse { accesses: 4 },
        E::ShareNotFound,
        E::StorageQuotaExceeded { left: 2, quota: 10 },
        E::StorageFull { quota: 10 },
        E::Unexpected(boom()),
    ];
    covers(&all, 7, |e| match e {
        E::InvalidTitle => 0,
        E::ResourceNotFound => 1,
        E::ResourceInUse { .. } => 2,
        E::ShareNotFound => 3,
        E::StorageQuotaExceeded { .. } => 4,
        E::StorageFull { .. } => 5,
        E::Unexpected(_) => 6,
    });
    all
}

pub(super) fn batch_errors() -> Vec<BatchError> {
    use BatchError as E;
    let all = vec![
        E::InvalidCount,
        E::InvalidLabel,
        E::InvalidExpiry,
        E::BatchAlreadyIssued {
            batch_id: uuid::Uuid::nil(),
            count: 10,
        },
        E::IdempotencyKeyReused,
        E::ShareNotFound,
        E::CodeNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 8, |e| match e {
        E::InvalidCount => 0,
        E::InvalidLabel => 1,
        E::InvalidExpiry => 2,
        E::BatchAlreadyIssued { .. } => 3,
        E::IdempotencyKeyReused => 4,
        E::ShareNotFound => 5,
        E::CodeNotFound => 6,
        E::Unexpected(_) => 7,
    });
    all
}

pub(super) fn mailing_errors() -> Vec<engine::mailings::MailingError> {
    use engine::mailings::{InvalidLine, MailingError as E};
    let all = vec![
        E::NotMailable,
        E::EmptyList,
        E::TooManyAddresses,
        E::InvalidAddresses(vec![InvalidLine {
            line: 2,
            text: "nope".into(),
        }]),
        E::NotEnoughCodes {
            to_send: 3,
            free: 2,
        },
        E::BatchNotFound,
        E::Unexpected(boom()),
        E::InvalidLang,
        E::BatchChanged,
        E::CodeNotMailed,
        E::CodeRedeemed,
        E::CodeRevoked,
        E::CodeExpired,
        E::ResendTooSoon,
        E::NoCodeLeft,
    ];
    covers(&all, 15, |e| match e {
        E::NotMailable => 0,
        E::EmptyList => 1,
        E::TooManyAddresses => 2,
        E::InvalidAddresses(_) => 3,
        E::NotEnoughCodes { .. } => 4,
        E::BatchNotFound => 5,
        E::Unexpected(_) => 6,
        E::InvalidLang => 7,
        E::BatchChanged => 8,
        E::CodeNotMailed => 9,
        E::CodeRedeemed => 10,
        E::CodeRevoked => 11,
        E::CodeExpired => 12,
        E::ResendTooSoon => 13,
        E::NoCodeLeft => 14,
    });
    all
}

pub(super) fn order_errors() -> Vec<engine::orders::OrderError> {
    use engine::orders::OrderError as E;
    let all = vec![
        E::InvalidSource,
        E::InvalidOrderRef,
        E::InvalidEmail,
        E::InvalidQuantity,
        E::AddressTakesOneCode,
        E::ShareNotFound,
        E::OrderConflict,
        E::Unexpected(boom()),
        E::InvalidLang,
        E::SourceOfAShop,
        E::Busy,
    ];
    covers(&all, 11, |e| match e {
        E::InvalidSource => 0,
        E::InvalidOrderRef => 1,
        E::InvalidEmail => 2,
        E::InvalidQuantity => 3,
        E::AddressTakesOneCode => 4,
        E::ShareNotFound => 5,
        E::OrderConflict => 6,
        E::Unexpected(_) => 7,
        E::InvalidLang => 8,
        E::SourceOfAShop => 9,
        E::Busy => 10,
    });
    all
}

pub(super) fn refund_errors() -> Vec<engine::refunds::RefundError> {
    use engine::refunds::RefundError as E;
    let all = vec![
        E::InvalidKind,
        E::InvalidAction,
        E::InvalidGrace,
        E::InvalidReason,
        E::OrderNotFound,
        E::ShareNotFound,
        E::Unexpected(boom()),
        E::Busy,
    ];
    covers(&all, 8, |e| match e {
        E::InvalidKind => 0,
        E::InvalidAction => 1,
        E::InvalidGrace => 2,
        E::InvalidReason => 3,
        E::OrderNotFound => 4,
        E::ShareNotFound => 5,
        E::Unexpected(_) => 6,
        E::Busy => 7,
    });
    all
}

pub(super) fn shop_errors() -> Vec<engine::shops::ShopError> {
    use engine::shops::ShopError as E;
    let all = vec![
        E::InvalidProvider,
        E::InvalidName,
        E::InvalidSecret,
        E::SecretRequired,
        E::InvalidProductRef,
        E::IntegrationNotFound,
        E::ProductNotFound,
        E::ShareNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 9, |e| match e {
        E::InvalidProvider => 0,
        E::InvalidName => 1,
        E::InvalidSecret => 2,
        E::SecretRequired => 3,
        E::InvalidProductRef => 4,
        E::IntegrationNotFound => 5,
        E::ProductNotFound => 6,
        E::ShareNotFound => 7,
        E::Unexpected(_) => 8,
    });
    all
}

pub(super) fn code_errors() -> Vec<CodeError> {
    use CodeError as E;
    let all = vec![
        E::InvalidCodeState,
        E::CodeNotFound,
        E::CodeNotBound,
        E::CodeNotUnused,
        E::CodeNotReplaceable,
        E::CodeExpired,
        E::InvalidReason,
        E::InvalidExpiry,
        E::InvalidExtension,
        E::NoAccessPeriod,
        E::ShareNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 12, |e| match e {
        E::InvalidCodeState => 0,
        E::CodeNotFound => 1,
        E::CodeNotBound => 2,
        E::CodeNotUnused => 3,
        E::CodeNotReplaceable => 4,
        E::CodeExpired => 5,
        E::InvalidReason => 6,
        E::InvalidExpiry => 7,
        E::InvalidExtension => 8,
        E::NoAccessPeriod => 9,
        E::ShareNotFound => 10,
        E::Unexpected(_) => 11,
    });
    all
}

pub(super) fn import_errors() -> Vec<ImportError> {
    use ImportError as E;
    let all = vec![
        E::InvalidImportFormat,
        E::InvalidAlphabet,
        E::InvalidLabel,
        E::NoCodesToImport,
        E::TooManyLines { max: 100_000 },
        E::NothingImported {
            lines: 3,
            line: 1,
            reason: engine::imports::Rejection::AlreadyExists,
        },
        E::InvalidExpiry,
        E::ShareNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 9, |e| match e {
        E::InvalidImportFormat => 0,
        E::InvalidAlphabet => 1,
        E::InvalidLabel => 2,
        E::NoCodesToImport => 3,
        E::TooManyLines { .. } => 4,
        E::NothingImported { .. } => 5,
        E::InvalidExpiry => 6,
        E::ShareNotFound => 7,
        E::Unexpected(_) => 8,
    });
    all
}

pub(super) fn storage_errors() -> Vec<StorageError> {
    use StorageError as E;
    let all = vec![E::TooLarge { limit: 10 }, E::Unexpected(boom())];
    covers(&all, 2, |e| match e {
        E::TooLarge { .. } => 0,
        E::Unexpected(_) => 1,
    });
    all
}

pub(super) fn tenant_errors() -> Vec<TenantError> {
    use TenantError as E;
    let all = vec![
        E::InvalidSlug,
        E::InvalidName,
        E::SlugTaken,
        E::UnknownTimeZone(engine::zone::UnknownZone),
        E::Unexpected(boom()),
    ];
    covers(&all, 5, |e| match e {
        E::InvalidSlug => 0,
        E::InvalidName => 1,
        E::SlugTaken => 2,
        E::UnknownTimeZone(_) => 3,
        E::Unexpected(_) => 4,
    });
    all
}

pub(super) fn branding_errors() -> Vec<engine::branding::BrandingError> {
    use engine::branding::BrandingError as E;
    let all = vec![
        E::InvalidName,
        E::InvalidAccent,
        E::InvalidSupportEmail,
        E::LogoNotAnImage,
        E::LogoTooLarge,
        E::Unexpected(boom()),
    ];
    covers(&all, 6, |e| match e {
        E::InvalidName => 0,
        E::InvalidAccent => 1,
        E::InvalidSupportEmail => 2,
        E::LogoNotAnImage => 3,
        E::LogoTooLarge => 4,
        E::Unexpected(_) => 5,
    });
    all
}

pub(super) fn team_errors() -> Vec<TeamError> {
    use TeamError as E;
    let all = vec![
        E::LastOwner,
        E::AlreadyMember,
        E::MemberNotFound,
        E::InvitationNotFound,
        E::InvitationInvalid,
        E::WrongAccount {
            invited: "a@example.com".into(),
        },
        E::Unexpected(boom()),
    ];
    covers(&all, 7, |e| match e {
        E::LastOwner => 0,
        E::AlreadyMember => 1,
        E::MemberNotFound => 2,
        E::InvitationNotFound => 3,
        E::InvitationInvalid => 4,
        E::WrongAccount { .. } => 5,
        E::Unexpected(_) => 6,
    });
    all
}

pub(super) fn token_errors() -> Vec<TokenError> {
    use TokenError as E;
    let all = vec![
        E::InvalidName,
        E::InvalidScope,
        E::InvalidExpiry,
        E::BeyondCaller,
        E::TooMany,
        E::NotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 7, |e| match e {
        E::InvalidName => 0,
        E::InvalidScope => 1,
        E::InvalidExpiry => 2,
        E::BeyondCaller => 3,
        E::TooMany => 4,
        E::NotFound => 5,
        E::Unexpected(_) => 6,
    });
    all
}

pub(super) fn webhook_errors() -> Vec<WebhookError> {
    use WebhookError as E;
    let all = vec![
        E::InvalidUrl,
        E::InvalidEvents,
        E::EndpointNotFound,
        E::DeliveryNotFound,
        E::Unexpected(boom()),
        E::TooMany,
    ];
    covers(&all, 6, |e| match e {
        E::InvalidUrl => 0,
        E::InvalidEvents => 1,
        E::EndpointNotFound => 2,
        E::DeliveryNotFound => 3,
        E::Unexpected(_) => 4,
        E::TooMany => 5,
    });
    all
}

pub(super) fn code_format_errors() -> Vec<CodeFormatError> {
    use CodeFormatError as E;
    let all = vec![
        E::WrongLength,
        E::BadSymbol,
        E::BadCheckSymbol,
        E::ForeignWrongLength,
    ];
    covers(&all, 4, |e| match e {
        E::WrongLength => 0,
        E::BadSymbol => 1,
        E::BadCheckSymbol => 2,
        E::ForeignWrongLength => 3,
    });
    all
}
