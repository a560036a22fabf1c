//! Transfer requests: a learner moves the code they hold to another
//! account they control.
//!
//! A binding is for good (one code, one account), yet people do lose an
//! address or move to a work account. Three people take part, each proving
//! something:
//!
//! 1. the holder asks ([`request()`]), naming the target's address: a
//!    single-use link goes to that address (7 days);
//! 2. the target opens it signed in with that address and confirms
//!    ([`confirm`]): the link came back from the address, so the account
//!    controls it;
//! 3. one of the tenant's admins approves or refuses with a reason
//!    ([`approve`], [`refuse`]).
//!
//! Approval moves the binding in one transaction on the audited unbind
//! path (`admitone.unbind`, the only way past the `auth_codes_keep_binding`
//! trigger): the code's row is locked, it must still be the holder's, the
//! target must not hold a code of the share (the `auth_codes_one_per_learner`
//! index decides a race with the target's own first access), and the code
//! may not have been moved `limit` times already (counted under the row
//! lock, numbered by a unique index). The binding moves whole (first use,
//! accesses counted, extension), so a transfer never resets a limit or an
//! access period; the holder's live grants end at once. Audited
//! (`code.transferred`), announced (webhook `code.transferred`), and both
//! accounts get a mail. The reconciler proves afterwards that every
//! binding is its first binder's or an approved transfer's or a
//! replacement's, and that no code moved more often than its limit
//! ([`crate::invariants`]).
//!
//! One file per side: `request.rs` is the learner's (asking, the
//! confirmation link, withdrawing), `decide.rs` the admin's (approving,
//! refusing), `read.rs` the one `SELECT` every page reads a request
//! through. This file holds what they share: a request as pages show it
//! ([`Transfer`]), its error, and the checks of a person's words.

pub use model::TransferStatus;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{accounts::AccountId, tenants::TenantId};

mod decide;
mod read;
mod request;

pub use decide::{approve, refuse};
pub use read::{get, latest_of, list};
pub(crate) use request::withdraw_open;
pub use request::{TransferPreview, cancel, confirm, preview, request};

/// Everything a transfer can end in besides success.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The asker holds no live code of this course.
    #[error("you hold no code for this course")]
    NotHolder,
    /// The target is the account that asks.
    #[error("that is the address of this account; name the account the course should move to")]
    SameAccount,
    /// The code was moved as often as the limit allows.
    #[error("this code has been moved as often as allowed ({limit} times); ask the course's team")]
    LimitReached { limit: u16 },
    /// The server lets no code move (`tenants.transfers_per_code = 0`).
    #[error("moving a course to another account is not offered here; ask the course's team")]
    Closed,
    /// The tenant suspended the learner who asks.
    #[error("your access to this organisation's courses is suspended; ask the course's team")]
    HolderSuspended,
    /// The receiving account is suspended by the tenant or disabled.
    #[error("the receiving account is suspended or disabled; refuse the request")]
    TargetBlocked,
    /// The learner's note is over 500 characters.
    #[error("the note is at most 500 characters")]
    InvalidNote,
    /// An admin's reason is empty or over 500 characters.
    #[error("give a reason of 1 to 500 characters")]
    InvalidReason,
    #[error("no such transfer request")]
    NotFound,
    /// The link expired, was replaced or was used.
    #[error("this link has expired, was replaced or was already used; ask for a new one")]
    LinkInvalid,
    /// Signed in with another address than the one the link went to.
    #[error("this request is for {email}; sign in with that address to confirm it")]
    WrongAccount { email: String },
    /// The target holds a code of this course already (one account, one
    /// code per course).
    #[error("the receiving account already has access to this course")]
    TargetHasCode,
    /// The request is not waiting for what was asked (decided, cancelled,
    /// or not confirmed yet).
    #[error("this request is {} and cannot be changed now", status.phrase())]
    NotOpen { status: TransferStatus },
    /// Since the request, the code was unbound or revoked: it no longer
    /// belongs to the asker.
    #[error("the code no longer belongs to the learner who asked; refuse the request")]
    CodeChanged,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The default of `transfers.per_code_limit`: how many times one code may
/// be moved.
pub const DEFAULT_PER_CODE_LIMIT: u16 = 2;

/// The most characters of a learner's note or an admin's reason.
const MAX_TEXT: usize = 500;

/// A person's words may hold line breaks and tabs, but no other control
/// character (PostgreSQL refuses a NUL in `text`: it would be a 500).
fn is_words(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
}

fn check_note(note: &str) -> Result<&str, TransferError> {
    let note = note.trim();
    if note.chars().count() <= MAX_TEXT && is_words(note) {
        Ok(note)
    } else {
        Err(TransferError::InvalidNote)
    }
}

fn check_reason(reason: &str) -> Result<&str, TransferError> {
    let reason = reason.trim();
    if (1..=MAX_TEXT).contains(&reason.chars().count()) && is_words(reason) {
        Ok(reason)
    } else {
        Err(TransferError::InvalidReason)
    }
}

/// A request as the console, the learner's page and the API show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub id: Uuid,
    pub tenant: TenantId,
    pub share: Uuid,
    pub course: String,
    pub code: Uuid,
    pub code_hint: String,
    pub from_account: AccountId,
    pub from_email: String,
    pub to_email: String,
    pub to_account: Option<AccountId>,
    pub note: String,
    pub status: TransferStatus,
    pub created_at: OffsetDateTime,
    /// The confirmation link stops working then (a request still awaiting
    /// its target after it is as good as cancelled).
    pub link_expires_at: OffsetDateTime,
    pub confirmed_at: Option<OffsetDateTime>,
    pub decided_at: Option<OffsetDateTime>,
    pub decided_by_email: Option<String>,
    pub decision_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_may_be_empty_a_reason_may_not_and_neither_may_pass_500() {
        assert_eq!(check_note("  ").expect("empty note"), "");
        assert!(matches!(
            check_note(&"é".repeat(501)),
            Err(TransferError::InvalidNote)
        ));
        assert_eq!(
            check_note(&"é".repeat(500)).expect("500").chars().count(),
            500
        );
        assert!(matches!(
            check_reason(" \n"),
            Err(TransferError::InvalidReason)
        ));
        assert!(matches!(
            check_reason(&"x".repeat(501)),
            Err(TransferError::InvalidReason)
        ));
        assert_eq!(check_reason(" ok ").expect("reason"), "ok");
    }
}
