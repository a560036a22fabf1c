//! A sample of every variant of the learner side's errors: settlement
//! (entering a code, opening a resource), accounts, learners and
//! transfers. Apart from the adapters' comparison (`tests.rs`) so that
//! the samples, which grow with every new variant, do not bury it.

use super::*;

pub(super) fn settlement_errors() -> Vec<SettlementError> {
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
        E::CodeAddressedElsewhere,
    ];
    covers(&all, 23, |e| match e {
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
        E::CodeAddressedElsewhere => 22,
    });
    all
}

pub(super) fn account_errors() -> Vec<AccountError> {
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

pub(super) fn suspension_errors() -> Vec<SuspensionError> {
    use SuspensionError as E;
    let all = vec![E::NotFound, E::Unexpected(boom())];
    covers(&all, 2, |e| match e {
        E::NotFound => 0,
        E::Unexpected(_) => 1,
    });
    all
}

pub(super) fn transfer_errors() -> Vec<TransferError> {
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
