//! The two adapters agree on every domain error variant. Three answers
//! are compared: the page's (`AppError`), the JSON API's serving the
//! error itself, and the JSON API's serving the page's error (what the
//! console's plain-HTTP routes do, `routes/page_error.rs`). Same status always; the same code
//! wherever the page keeps one; the same field.
//!
//! Moved verbatim out of `error.rs`, so that file reads as the mapping alone.
use std::collections::BTreeSet;

use app::error::AppError;

use super::*;

/// What the pages' adapter shows: (status, the code it keeps, field).
fn page(error: &AppError) -> (StatusCode, Option<String>, Option<String>) {
    let status = error.status();
    match error {
        AppError::Refused { reason, field, .. } => (status, Some(reason.clone()), field.clone()),
        // A page shows bad input beside its field, whatever its code.
        AppError::Invalid { field, .. } => (status, None, field.clone()),
        _ => (status, None, None),
    }
}

fn api(error: ApiError) -> (StatusCode, String, Option<String>) {
    (error.status(), error.code.into_owned(), error.field)
}

/// Checks every sample `all()` makes through both adapters (made twice:
/// the errors hold an `anyhow::Error`, which does not clone).
fn agree<E: Outcome + Into<ApiError>>(all: fn() -> Vec<E>, to_page: impl Fn(E) -> AppError) {
    for (for_page, for_api) in all().into_iter().zip(all()) {
        let name = format!("{for_api:?}");
        let kind = for_api.kind();
        let shown = to_page(for_page);
        let (page_status, page_code, page_field) = page(&shown);
        let (api_status, api_code, api_field) = api(for_api.into());
        let (via_status, via_code, via_field) = api(ApiError::from(shown.clone()));
        assert_eq!(page_status, api_status, "{name}: page vs JSON status");
        assert_eq!(
            via_status, api_status,
            "{name}: JSON via the page vs JSON status"
        );
        if let Some(page_code) = page_code {
            assert_eq!(page_code, api_code, "{name}: page reason vs JSON code");
        }
        // Only a page's input error drops its specific code (it shows
        // the message beside the field instead).
        if !(kind == ErrorKind::Invalid && api_code != INVALID_INPUT) {
            assert_eq!(via_code, api_code, "{name}: JSON via the page vs JSON code");
        }
        if matches!(shown, AppError::Invalid { .. } | AppError::Refused { .. }) {
            assert_eq!(page_field, api_field, "{name}: page vs JSON field");
        }
        assert_eq!(
            via_field, api_field,
            "{name}: JSON via the page vs JSON field"
        );
    }
}

/// `index` is an exhaustive match (a new variant does not compile until
/// it has an arm); the samples must cover every arm.
fn covers<E>(samples: &[E], arms: usize, index: impl Fn(&E) -> usize) {
    let seen: BTreeSet<usize> = samples.iter().map(index).collect();
    assert_eq!(seen, (0..arms).collect(), "a variant has no sample");
}

fn boom() -> anyhow::Error {
    anyhow::anyhow!("a fault only the log sees")
}

fn settlement_errors() -> Vec<SettlementError> {
    use SettlementError as E;
    let all = vec![
        E::CodeRequired,
        E::CodeBound,
        E::CodeRevoked,
        E::WrongShare,
        E::InvalidCode,
        E::AlreadyHasAccess,
        E::ShareUnavailable(engine::shares::Unavailability::Paused),
        E::QuotaExhausted,
        E::LearnerLimitReached,
        E::AccountDisabled,
        E::ResourceNotFound,
        E::OpenFromCoursePage,
        E::RequestIdReused,
        E::InvalidRequestId,
        E::Busy,
        E::Unavailable,
        E::Unexpected(boom()),
        E::LearnerSuspended,
        E::EmailNotVerified,
        E::CodeExpired,
        E::AccessEnded {
            ended_at: time::OffsetDateTime::UNIX_EPOCH,
        },
        E::SessionEnded,
    ];
    covers(&all, 22, |e| match e {
        E::CodeRequired => 0,
        E::CodeBound => 1,
        E::CodeRevoked => 2,
        E::WrongShare => 3,
        E::InvalidCode => 4,
        E::AlreadyHasAccess => 5,
        E::ShareUnavailable(_) => 6,
        E::QuotaExhausted => 7,
        E::LearnerLimitReached => 8,
        E::AccountDisabled => 9,
        E::ResourceNotFound => 10,
        E::RequestIdReused => 11,
        E::InvalidRequestId => 12,
        E::Busy => 13,
        E::Unavailable => 14,
        E::Unexpected(_) => 15,
        E::OpenFromCoursePage => 16,
        E::LearnerSuspended => 17,
        E::EmailNotVerified => 18,
        E::CodeExpired => 19,
        E::AccessEnded { .. } => 20,
        E::SessionEnded => 21,
    });
    all
}

#[test]
fn settlement_errors_get_one_status_from_both_adapters() {
    agree(settlement_errors, app::learner::settlement_error);
}
fn share_errors() -> Vec<ShareError> {
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

fn resource_errors() -> Vec<ResourceError> {
    use ResourceError as E;
    let all = vec![
        E::InvalidTitle,
        E::ResourceNotFound,
        E::ResourceInUse { accesses: 4 },
        E::ShareNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 5, |e| match e {
        E::InvalidTitle => 0,
        E::ResourceNotFound => 1,
        E::ResourceInUse { .. } => 2,
        E::ShareNotFound => 3,
        E::Unexpected(_) => 4,
    });
    all
}

fn batch_errors() -> Vec<BatchError> {
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

fn code_errors() -> Vec<CodeError> {
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

fn import_errors() -> Vec<ImportError> {
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

fn account_errors() -> Vec<AccountError> {
    use AccountError as E;
    let all = vec![
        E::InvalidEmail,
        E::InvalidPassword,
        E::InvalidDisplayName,
        E::EmailTaken,
        E::InvalidCredentials,
        E::Disabled,
        E::Unexpected(boom()),
        E::LinkInvalid,
        E::SameEmail,
    ];
    covers(&all, 9, |e| match e {
        E::InvalidEmail => 0,
        E::InvalidPassword => 1,
        E::InvalidDisplayName => 2,
        E::EmailTaken => 3,
        E::InvalidCredentials => 4,
        E::Disabled => 5,
        E::Unexpected(_) => 6,
        E::LinkInvalid => 7,
        E::SameEmail => 8,
    });
    all
}

fn storage_errors() -> Vec<StorageError> {
    use StorageError as E;
    let all = vec![E::TooLarge { limit: 10 }, E::Unexpected(boom())];
    covers(&all, 2, |e| match e {
        E::TooLarge { .. } => 0,
        E::Unexpected(_) => 1,
    });
    all
}

fn tenant_errors() -> Vec<TenantError> {
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

fn branding_errors() -> Vec<engine::branding::BrandingError> {
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

fn team_errors() -> Vec<TeamError> {
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

fn transfer_errors() -> Vec<TransferError> {
    use TransferError as E;
    let all = vec![
        E::NotHolder,
        E::SameAccount,
        E::LimitReached { limit: 2 },
        E::InvalidNote,
        E::InvalidReason,
        E::NotFound,
        E::LinkInvalid,
        E::WrongAccount {
            email: "a@example.com".into(),
        },
        E::TargetHasCode,
        E::NotOpen {
            status: engine::transfers::TransferStatus::Approved,
        },
        E::CodeChanged,
        E::Closed,
        E::HolderSuspended,
        E::TargetBlocked,
        E::Unexpected(boom()),
    ];
    covers(&all, 15, |e| match e {
        E::NotHolder => 0,
        E::SameAccount => 1,
        E::LimitReached { .. } => 2,
        E::InvalidNote => 3,
        E::InvalidReason => 4,
        E::NotFound => 5,
        E::LinkInvalid => 6,
        E::WrongAccount { .. } => 7,
        E::TargetHasCode => 8,
        E::NotOpen { .. } => 9,
        E::CodeChanged => 10,
        E::Closed => 11,
        E::HolderSuspended => 12,
        E::TargetBlocked => 13,
        E::Unexpected(_) => 14,
    });
    all
}

fn learner_errors() -> Vec<LearnerError> {
    use LearnerError as E;
    let all = vec![E::NotFound, E::Unexpected(boom())];
    covers(&all, 2, |e| match e {
        E::NotFound => 0,
        E::Unexpected(_) => 1,
    });
    all
}

fn token_errors() -> Vec<TokenError> {
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

fn webhook_errors() -> Vec<WebhookError> {
    use WebhookError as E;
    let all = vec![
        E::InvalidUrl,
        E::InvalidEvents,
        E::EndpointNotFound,
        E::DeliveryNotFound,
        E::Unexpected(boom()),
    ];
    covers(&all, 5, |e| match e {
        E::InvalidUrl => 0,
        E::InvalidEvents => 1,
        E::EndpointNotFound => 2,
        E::DeliveryNotFound => 3,
        E::Unexpected(_) => 4,
    });
    all
}

fn code_format_errors() -> Vec<CodeFormatError> {
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

/// The use cases' own outcomes (the engine errors inside are sampled
/// above, each through its own enum).
fn service_errors() -> Vec<ServiceError> {
    use ServiceError as E;
    use engine::coordination::ThrottleScope;
    let all = vec![
        E::Unauthenticated,
        E::Forbidden,
        E::NotFound,
        E::Throttled {
            scope: ThrottleScope::CodeIp,
            limit: 5,
            retry_after_secs: 30,
        },
        E::Unavailable {
            retry_after_secs: 5,
        },
        E::PasswordsDiffer,
        E::NewPasswordsDiffer,
        E::WrongCurrentPassword,
        E::InvalidNewPassword(AccountError::InvalidPassword),
        E::Account(AccountError::EmailTaken),
        E::Settlement(SettlementError::AlreadyHasAccess),
        E::Share(ShareError::SlugTaken),
        E::Resource(ResourceError::ResourceInUse { accesses: 1 }),
        E::Batch(BatchError::IdempotencyKeyReused),
        E::Import(ImportError::NoCodesToImport),
        E::Code(CodeError::CodeNotBound),
        E::Format(CodeFormatError::BadCheckSymbol),
        E::Unexpected(boom()),
        E::InvalidNewEmail,
        E::NewEmailTaken,
        E::InvalidRole,
        E::SignupClosed,
        E::VerifyEmailFirst,
        E::Team(TeamError::LastOwner),
        E::Tenant(TenantError::SlugTaken),
        E::Learner(LearnerError::NotFound),
        E::Transfer(TransferError::TargetHasCode),
    ];
    covers(&all, 27, |e| match e {
        E::Unauthenticated => 0,
        E::Forbidden => 1,
        E::NotFound => 2,
        E::Throttled { .. } => 3,
        E::Unavailable { .. } => 4,
        E::PasswordsDiffer => 5,
        E::NewPasswordsDiffer => 6,
        E::WrongCurrentPassword => 7,
        E::InvalidNewPassword(_) => 8,
        E::Account(_) => 9,
        E::Settlement(_) => 10,
        E::Share(_) => 11,
        E::Format(_) => 12,
        E::Unexpected(_) => 13,
        E::InvalidNewEmail => 14,
        E::NewEmailTaken => 15,
        E::InvalidRole => 16,
        E::SignupClosed => 17,
        E::VerifyEmailFirst => 18,
        E::Team(_) => 19,
        E::Tenant(_) => 20,
        E::Learner(_) => 21,
        E::Transfer(_) => 22,
        E::Resource(_) => 23,
        E::Batch(_) => 24,
        E::Import(_) => 25,
        E::Code(_) => 26,
    });
    all
}

#[test]
fn use_case_errors_get_one_status_from_both_adapters() {
    agree(service_errors, AppError::from);
}

#[test]
fn a_wait_travels_as_retry_after_through_both_doors() {
    let throttled = || ServiceError::Throttled {
        scope: engine::coordination::ThrottleScope::CodeIp,
        limit: 5,
        retry_after_secs: 30,
    };
    let away = || ServiceError::Unavailable {
        retry_after_secs: 5,
    };
    assert_eq!(ApiError::from(throttled()).retry_after, Some(30));
    assert!(matches!(
        AppError::from(throttled()),
        AppError::RateLimited {
            retry_after_secs: 30,
            ..
        }
    ));
    assert_eq!(ApiError::from(away()).retry_after, Some(5));
    // The RateLimit-* headers belong to a throttle's refusal only.
    assert_eq!(ApiError::from(throttled()).rate_limit, Some(5));
    assert_eq!(ApiError::from(away()).rate_limit, None);
    assert!(matches!(
        AppError::from(away()),
        AppError::Unavailable {
            retry_after_secs: 5
        }
    ));
}

#[test]
fn console_and_account_errors_get_one_status_from_both_adapters() {
    agree(share_errors, AppError::outcome);
    agree(resource_errors, AppError::outcome);
    agree(batch_errors, AppError::outcome);
    agree(code_errors, AppError::outcome);
    agree(import_errors, AppError::outcome);
    agree(account_errors, AppError::outcome);
    agree(storage_errors, AppError::outcome);
    agree(tenant_errors, AppError::outcome);
    agree(branding_errors, AppError::outcome);
    agree(token_errors, AppError::outcome);
    agree(webhook_errors, AppError::outcome);
    agree(team_errors, AppError::outcome);
    agree(learner_errors, AppError::outcome);
    agree(transfer_errors, AppError::outcome);
    agree(code_format_errors, |e| {
        AppError::from(ServiceError::Format(e))
    });
}

/// The JSON API's statuses that clients were promised
/// (`docs/ARCHITECTURE.md`, "Errors"): a change here is a breaking change, not a refactor.
#[test]
fn the_promised_statuses_hold() {
    let cases: [(ApiError, u16, &str); 8] = [
        (SettlementError::Busy.into(), 409, "busy_retry"),
        (SettlementError::WrongShare.into(), 422, "wrong_share"),
        (SettlementError::CodeRequired.into(), 403, "code_required"),
        (SettlementError::Unavailable.into(), 503, "unavailable"),
        (ShareError::SlugTaken.into(), 422, "slug_taken"),
        (
            BatchError::IdempotencyKeyReused.into(),
            422,
            "idempotency_key_reused",
        ),
        (StorageError::TooLarge { limit: 1 }.into(), 413, "too_large"),
        (rejection("not JSON", "invalid_json"), 400, "invalid_json"),
    ];
    for (error, status, code) in cases {
        assert_eq!(
            (error.status().as_u16(), error.code.as_ref()),
            (status, code)
        );
    }
    let busy = ApiError::from(SettlementError::Busy);
    assert_eq!(busy.retry_after, Some(1));
}
