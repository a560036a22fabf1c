//! The domain's error messages in the pages' languages (ssr only).
//!
//! The `engine` crate speaks English (its `Display` texts are what logs and
//! the JSON API show, and what an English page shows). The other languages
//! translate each expected outcome in their `errors.ftl`
//! ([`ErrorMsg`]), named here by an exhaustive match, so a new variant
//! cannot reach a Chinese page in English without the compiler pointing at
//! this file, nor name a message a catalogue lacks without the build
//! refusing it.

use engine::{
    accounts::{AccountError, DisplayName, Password},
    batches::BatchError,
    branding::BrandingError,
    code_actions::CodeError,
    imports::ImportError,
    mailings::MailingError,
    orders::OrderError,
    refunds::RefundError,
    resources::ResourceError,
    settlement::SettlementError,
    shares::ShareError,
    shops::ShopError,
    storage::StorageError,
    suspension::SuspensionError,
    team::TeamError,
    tenants::TenantError,
    tokens::TokenError,
    transfers::TransferError,
    webhooks::WebhookError,
};

use super::{ErrorMsg, Lang, lang};

/// An error's message in the current language.
pub fn message<E: Localized>(error: &E) -> String {
    in_lang(error, lang())
}

/// An error's message in `lang`.
pub fn in_lang<E: Localized>(error: &E, lang: Lang) -> String {
    error.localized(lang).unwrap_or_else(|| error.to_string())
}

/// An error with messages in the catalogues beside its English `Display`.
pub trait Localized: std::fmt::Display {
    /// The message in `lang`; `None` in English (the `Display`).
    fn localized(&self, lang: Lang) -> Option<String>;
}

impl Localized for ShareError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidTitle => M::ShareInvalidTitle,
            Self::InvalidSlug => M::ShareInvalidSlug,
            Self::SlugTaken => M::ShareSlugTaken,
            Self::InvalidDescription => M::ShareInvalidDescription,
            Self::InvalidStatus => M::ShareInvalidStatus,
            Self::QuotaBelowUse { used } => {
                return lang.error(M::ShareQuotaBelowUse, &[("used", used)]);
            }
            Self::LearnerLimitBelowUse { used } => {
                return lang.error(M::ShareLearnerLimitBelowUse, &[("used", used)]);
            }
            Self::SlugLocked => M::ShareSlugLocked,
            Self::InvalidLimit => M::ShareInvalidLimit,
            Self::InvalidWindow => M::ShareInvalidWindow,
            Self::InvalidAccessDays => M::ShareInvalidAccessDays,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for ResourceError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidTitle => M::ShareInvalidTitle,
            Self::ResourceNotFound => M::ShareResourceNotFound,
            Self::ResourceInUse { accesses } => {
                return lang.error(M::ShareResourceInUse, &[("accesses", accesses)]);
            }
            Self::StorageQuotaExceeded { left, quota } => {
                return lang.error(
                    M::ShareStorageQuotaExceeded,
                    &[("left", left), ("quota", quota)],
                );
            }
            Self::StorageFull { quota } => {
                return lang.error(M::ShareStorageFull, &[("quota", quota)]);
            }
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for BatchError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidCount => M::ShareInvalidCount,
            Self::InvalidLabel => M::ShareInvalidLabel,
            Self::InvalidExpiry => M::ShareInvalidExpiry,
            Self::BatchAlreadyIssued { batch_id, count } => {
                return lang.error(
                    M::ShareBatchAlreadyIssued,
                    &[("batch_id", batch_id), ("count", count)],
                );
            }
            Self::IdempotencyKeyReused => M::ShareIdempotencyKeyReused,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::CodeNotFound => M::ShareCodeNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for MailingError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::NotMailable => M::MailingNotMailable,
            Self::EmptyList => M::MailingEmptyList,
            Self::TooManyAddresses => M::MailingTooManyAddresses,
            Self::InvalidAddresses(lines) => {
                let first: Vec<String> = lines.iter().take(5).map(|l| l.line.to_string()).collect();
                return lang.error(
                    M::MailingInvalidAddresses,
                    &[("count", &lines.len()), ("lines", &first.join(", "))],
                );
            }
            Self::NotEnoughCodes { to_send, free } => {
                return lang.error(
                    M::MailingNotEnoughCodes,
                    &[("to_send", to_send), ("free", free)],
                );
            }
            Self::BatchNotFound => M::ShareCodeNotFound,
            Self::InvalidLang => M::OrderInvalidLang,
            Self::BatchChanged => M::MailingBatchChanged,
            Self::CodeNotMailed => M::MailingCodeNotMailed,
            Self::CodeRedeemed => M::MailingCodeRedeemed,
            Self::CodeRevoked => M::MailingCodeRevoked,
            Self::CodeExpired => M::MailingCodeExpired,
            Self::ResendTooSoon => M::MailingResendTooSoon,
            Self::NoCodeLeft => M::MailingNoCodeLeft,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for OrderError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidSource => M::OrderInvalidSource,
            Self::SourceOfAShop => M::OrderSourceOfAShop,
            Self::InvalidOrderRef => M::OrderInvalidOrderRef,
            Self::InvalidEmail => M::OrderInvalidEmail,
            Self::InvalidQuantity => M::OrderInvalidQuantity,
            Self::InvalidLang => M::OrderInvalidLang,
            Self::AddressTakesOneCode => M::OrderAddressTakesOneCode,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::OrderConflict => M::OrderOrderConflict,
            Self::Busy => M::OrderBusy,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for RefundError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidKind => M::RefundInvalidKind,
            Self::InvalidAction => M::RefundInvalidAction,
            Self::InvalidGrace => M::RefundInvalidGrace,
            Self::InvalidReason => M::RefundInvalidReason,
            Self::OrderNotFound => M::RefundOrderNotFound,
            Self::Busy => M::OrderBusy,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for ShopError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidProvider => M::ShopInvalidProvider,
            Self::InvalidName => M::ShopInvalidName,
            Self::InvalidSecret => M::ShopInvalidSecret,
            Self::SecretRequired => M::ShopSecretRequired,
            Self::InvalidProductRef => M::ShopInvalidProductRef,
            Self::IntegrationNotFound => M::ShopIntegrationNotFound,
            Self::ProductNotFound => M::ShopProductNotFound,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for CodeError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidCodeState => M::ShareInvalidCodeState,
            Self::CodeNotFound => M::ShareCodeNotFound,
            Self::CodeNotBound => M::ShareCodeNotBound,
            Self::CodeNotUnused => M::ShareCodeNotUnused,
            Self::CodeNotReplaceable => M::ShareCodeNotReplaceable,
            Self::CodeExpired => M::ShareCodeExpired,
            Self::InvalidReason => M::ShareInvalidReason,
            Self::InvalidExpiry => M::ShareInvalidExpiry,
            Self::InvalidExtension => M::ShareInvalidExtension,
            Self::NoAccessPeriod => M::ShareNoAccessPeriod,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for ImportError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidImportFormat => M::ShareInvalidImportFormat,
            Self::InvalidAlphabet => M::ShareInvalidAlphabet,
            Self::InvalidLabel => M::ShareInvalidLabel,
            Self::NoCodesToImport => M::ShareNoCodesToImport,
            Self::TooManyLines { max } => {
                return lang.error(M::ShareTooManyLines, &[("max", max)]);
            }
            Self::NothingImported {
                lines,
                line,
                reason,
            } => {
                let reason = super::import_rejection(reason.as_str(), lang);
                return lang.error(
                    M::ShareNothingImported,
                    &[("lines", lines), ("line", line), ("reason", &reason)],
                );
            }
            Self::InvalidExpiry => M::ShareInvalidExpiry,
            Self::ShareNotFound => M::ShareShareNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for TokenError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidName => M::TokenInvalidName,
            Self::InvalidScope => M::TokenInvalidScope,
            Self::InvalidExpiry => M::TokenInvalidExpiry,
            Self::BeyondCaller => M::TokenBeyondCaller,
            Self::TooMany => {
                return lang.error(M::TokenTooMany, &[("max", &engine::tokens::MAX_LIVE)]);
            }
            Self::NotFound => M::TokenNotFound,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for AccountError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidEmail => M::AccountInvalidEmail,
            Self::InvalidPassword => {
                return lang.error(
                    M::AccountInvalidPassword,
                    &[("min", &Password::MIN_CHARS), ("max", &Password::MAX_CHARS)],
                );
            }
            Self::InvalidDisplayName => {
                return lang.error(
                    M::AccountInvalidDisplayName,
                    &[("max", &DisplayName::MAX_CHARS)],
                );
            }
            Self::EmailTaken => M::AccountEmailTaken,
            Self::InvalidCredentials => M::AccountInvalidCredentials,
            Self::Disabled => M::AccountDisabled,
            Self::LinkInvalid => M::AccountLinkInvalid,
            Self::SameEmail => M::AccountSameEmail,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for SettlementError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::CodeRequired => M::SettlementCodeRequired,
            Self::CodeBound => M::SettlementCodeBound,
            Self::CodeRevoked => M::SettlementCodeRevoked,
            Self::CodeExpired => M::SettlementCodeExpired,
            Self::CodeAddressedElsewhere => M::SettlementCodeAddressedElsewhere,
            Self::AccessEnded { ended_at } => {
                let day = ended_at.date();
                let ended = format!("{}年{}月{}日", day.year(), u8::from(day.month()), day.day());
                return lang.error(M::SettlementAccessEnded, &[("ended", &ended)]);
            }
            Self::WrongShare => M::SettlementWrongShare,
            Self::InvalidCode => M::SettlementInvalidCode,
            Self::AlreadyHasAccess => M::SettlementAlreadyHasAccess,
            Self::ShareUnavailable(why) => unavailable(*why),
            Self::QuotaExhausted => M::SettlementQuotaExhausted,
            Self::LearnerLimitReached => M::SettlementLearnerLimitReached,
            Self::AccountDisabled => M::SettlementAccountDisabled,
            Self::SessionEnded => M::SettlementSessionEnded,
            Self::LearnerSuspended => M::SettlementLearnerSuspended,
            Self::EmailNotVerified => M::SettlementEmailNotVerified,
            Self::ResourceNotFound => M::SettlementResourceNotFound,
            Self::OpenFromCoursePage => M::SettlementOpenFromCoursePage,
            Self::RequestIdReused => M::SettlementRequestIdReused,
            Self::InvalidRequestId => M::SettlementInvalidRequestId,
            Self::Busy => M::SettlementBusy,
            Self::Unavailable => M::SettlementUnavailable,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

fn unavailable(why: engine::shares::Unavailability) -> ErrorMsg {
    use engine::shares::Unavailability as U;
    match why {
        U::Paused => ErrorMsg::UnavailablePaused,
        U::NotOpenYet => ErrorMsg::UnavailableNotOpenYet,
        U::Closed => ErrorMsg::UnavailableClosed,
        U::LimitReached => ErrorMsg::UnavailableLimitReached,
        U::NotAvailable => ErrorMsg::UnavailableNotAvailable,
    }
}

/// Why a share is closed to learners, in `lang` (`None` in English: the
/// `Unavailability`'s own words).
pub fn share_unavailable(why: engine::shares::Unavailability, lang: Lang) -> Option<String> {
    lang.error(unavailable(why), &[])
}

impl Localized for StorageError {
    fn localized(&self, lang: Lang) -> Option<String> {
        match self {
            Self::TooLarge { limit } => lang.error(ErrorMsg::StorageTooLarge, &[("limit", limit)]),
            Self::Unexpected(_) => lang.error(ErrorMsg::Unexpected, &[]),
        }
    }
}

impl Localized for TenantError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidSlug => M::TenantInvalidSlug,
            Self::InvalidName => M::TenantInvalidName,
            Self::SlugTaken => M::TenantSlugTaken,
            Self::UnknownTimeZone(_) => M::TenantUnknownTimeZone,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for BrandingError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidName => M::TenantInvalidName,
            Self::InvalidAccent => M::BrandingInvalidAccent,
            Self::InvalidSupportEmail => M::BrandingInvalidSupportEmail,
            Self::LogoNotAnImage => M::BrandingLogoNotAnImage,
            Self::LogoTooLarge => M::BrandingLogoTooLarge,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for WebhookError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::InvalidUrl => M::WebhookInvalidUrl,
            Self::InvalidEvents => M::WebhookInvalidEvents,
            Self::EndpointNotFound => M::WebhookEndpointNotFound,
            Self::DeliveryNotFound => M::WebhookDeliveryNotFound,
            Self::TooMany => {
                return lang.error(
                    M::WebhookTooMany,
                    &[("max", &engine::webhooks::endpoints::MAX_ENDPOINTS)],
                );
            }
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for TeamError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::LastOwner => M::TeamLastOwner,
            Self::AlreadyMember => M::TeamAlreadyMember,
            Self::MemberNotFound => M::TeamMemberNotFound,
            Self::InvitationNotFound => M::TeamInvitationNotFound,
            Self::InvitationInvalid => M::TeamInvitationInvalid,
            Self::WrongAccount { invited } => {
                return lang.error(M::TeamWrongAccount, &[("invited", invited)]);
            }
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for TransferError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        let msg = match self {
            Self::NotHolder => M::TransferNotHolder,
            Self::SameAccount => M::TransferSameAccount,
            Self::LimitReached { limit } => {
                return lang.error(M::TransferLimitReached, &[("limit", &limit.to_string())]);
            }
            Self::InvalidNote => M::TransferInvalidNote,
            Self::InvalidReason => M::TransferInvalidReason,
            Self::NotFound => M::TransferNotFound,
            Self::LinkInvalid => M::TransferLinkInvalid,
            Self::WrongAccount { email } => {
                return lang.error(M::TransferWrongAccount, &[("email", email)]);
            }
            Self::TargetHasCode => M::TransferTargetHasCode,
            Self::NotOpen { status } => {
                let status = crate::i18n::transfer_status(*status);
                return lang.error(M::TransferNotOpen, &[("status", &status)]);
            }
            Self::CodeChanged => M::TransferCodeChanged,
            Self::Closed => M::TransferClosed,
            Self::HolderSuspended => M::TransferHolderSuspended,
            Self::TargetBlocked => M::TransferTargetBlocked,
            Self::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for SuspensionError {
    fn localized(&self, lang: Lang) -> Option<String> {
        let msg = match self {
            Self::NotFound => ErrorMsg::LearnerNotFound,
            Self::Unexpected(_) => ErrorMsg::Unexpected,
        };
        lang.error(msg, &[])
    }
}

impl Localized for engine::codes::CodeFormatError {
    fn localized(&self, lang: Lang) -> Option<String> {
        // One translation, shared with the browser's own check (`i18n.rs`).
        super::code_format_message(self, lang)
    }
}

impl Localized for service::ServiceError {
    fn localized(&self, lang: Lang) -> Option<String> {
        use ErrorMsg as M;
        use service::ServiceError as E;
        let msg = match self {
            E::Unauthenticated => M::ServiceUnauthenticated,
            E::Forbidden => M::ServiceForbidden,
            E::NotFound => M::ServiceNotFound,
            E::Throttled {
                scope,
                retry_after_secs: secs,
                ..
            } => {
                let what = lang.error(attempts(*scope), &[])?;
                return if *secs >= 120 {
                    lang.error(
                        M::ServiceThrottledMinutes,
                        &[("what", &what), ("wait", &secs.div_ceil(60))],
                    )
                } else {
                    lang.error(M::ServiceThrottled, &[("what", &what), ("wait", secs)])
                };
            }
            E::Unavailable { .. } => M::ServiceUnavailable,
            E::PasswordsDiffer => M::ServicePasswordsDiffer,
            E::NewPasswordsDiffer => M::ServiceNewPasswordsDiffer,
            E::WrongCurrentPassword => M::ServiceWrongCurrentPassword,
            E::InvalidNewPassword(e) | E::Account(e) => return e.localized(lang),
            E::InvalidNewEmail => M::ServiceInvalidNewEmail,
            E::NewEmailTaken => M::ServiceNewEmailTaken,
            E::InvalidRole => M::ServiceInvalidRole,
            E::SignupClosed => M::ServiceSignupClosed,
            E::VerifyEmailFirst => M::ServiceVerifyEmailFirst,
            E::Team(e) => return e.localized(lang),
            E::Tenant(e) => return e.localized(lang),
            E::Suspension(e) => return e.localized(lang),
            E::Transfer(e) => return e.localized(lang),
            E::Settlement(e) => return e.localized(lang),
            E::Share(e) => return e.localized(lang),
            E::Resource(e) => return e.localized(lang),
            E::Batch(e) => return e.localized(lang),
            E::Import(e) => return e.localized(lang),
            E::Code(e) => return e.localized(lang),
            E::Format(e) => return e.localized(lang),
            E::Unexpected(_) => M::Unexpected,
        };
        lang.error(msg, &[])
    }
}

/// What a throttle counts (English: `service::error::attempts`).
fn attempts(scope: engine::coordination::ThrottleScope) -> ErrorMsg {
    use ErrorMsg as M;
    use engine::coordination::ThrottleScope as S;
    match scope {
        S::SignInEmail | S::SignInEmailNetwork => M::AttemptsSignInEmail,
        S::SignInIp => M::AttemptsSignInIp,
        S::RegisterIp => M::AttemptsRegisterIp,
        S::RegisterEmail => M::AttemptsRegisterEmail,
        S::CodeAccount => M::AttemptsCodeAccount,
        S::CodeIp => M::AttemptsCodeIp,
        S::CodeShare => M::AttemptsCodeShare,
        S::PasswordChangeAccount => M::AttemptsPasswordChangeAccount,
        S::PasswordChangeIp => M::AttemptsPasswordChangeIp,
        S::ResetEmail => M::AttemptsResetEmail,
        S::MailIp => M::AttemptsMailIp,
        S::MailAccount => M::AttemptsMailAccount,
        S::ApiToken => M::AttemptsApiToken,
        S::ContentAccount => M::AttemptsContentAccount,
        S::ImportTenant => M::AttemptsImportTenant,
        S::LogoIp => M::AttemptsLogoIp,
    }
}
