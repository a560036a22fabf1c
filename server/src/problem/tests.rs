//! The two adapters agree on every domain error variant. Three answers
//! are compared: the page's (`AppError`), the JSON API's serving the
//! error itself, and the JSON API's serving the page's error (what the
//! console's plain-HTTP routes do, `routes/page_error.rs`). Same status always; the same code
//! wherever the page keeps one; the same field.
//!
//! Moved verbatim out of `error.rs`, so that file reads as the mapping alone.
//! The samples of every variant live by side in `tests/learner_side.rs`
//! and `tests/console_side.rs`; the comparisons are here.
use std::collections::BTreeSet;

use app::error::AppError;

use super::*;

mod console_side;
mod learner_side;

use console_side::*;
use learner_side::*;

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

#[test]
fn settlement_errors_get_one_status_from_both_adapters() {
    agree(settlement_errors, app::learner::settlement_error);
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
        E::Suspension(SuspensionError::NotFound),
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
        E::Suspension(_) => 21,
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
    agree(order_errors, AppError::outcome);
    agree(refund_errors, AppError::outcome);
    agree(shop_errors, AppError::outcome);
    agree(mailing_errors, AppError::outcome);
    agree(code_errors, AppError::outcome);
    agree(import_errors, AppError::outcome);
    agree(account_errors, AppError::outcome);
    agree(storage_errors, AppError::outcome);
    agree(tenant_errors, AppError::outcome);
    agree(branding_errors, AppError::outcome);
    agree(token_errors, AppError::outcome);
    agree(webhook_errors, AppError::outcome);
    agree(team_errors, AppError::outcome);
    agree(suspension_errors, AppError::outcome);
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
