//! A learner's request to move their code to another account, as both
//! the learner and the course's team see it (each seeing only what is
//! theirs to see). Apart because both sides of the API answer with it.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A learner's request to move their code to another account.
#[derive(Debug, Serialize, ToSchema)]
pub struct TransferView {
    pub id: Uuid,
    pub share_id: Uuid,
    /// The course's title.
    pub course: String,
    pub code_id: Uuid,
    /// The code's last characters.
    pub code_hint: String,
    /// The learner who held the code and asked.
    pub from_account: Uuid,
    pub from_email: String,
    /// The address the confirmation link went to.
    pub to_email: String,
    /// The account that confirmed with it (`null` until then).
    pub to_account: Option<Uuid>,
    /// The learner's word for the course's team (may be empty).
    pub note: String,
    pub status: model::TransferStatus,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// The confirmation link works until then.
    #[serde(with = "time::serde::rfc3339")]
    pub link_expires_at: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub confirmed_at: Option<time::OffsetDateTime>,
    /// Approved, refused or cancelled then.
    #[serde(with = "time::serde::rfc3339::option")]
    pub decided_at: Option<time::OffsetDateTime>,
    /// Who decided (an admin; the learner for a cancellation). `null` in
    /// the learner's own answers: the team's addresses stay the team's.
    pub decided_by_email: Option<String>,
    /// The admin's reason for a refusal (quoted in both learners' mail),
    /// or note on an approval (the audit log's; `null` for learners).
    pub decision_reason: Option<String>,
}

impl TransferView {
    /// What the learner who asked is shown of their request: no admin's
    /// address, and only a refusal's reason.
    pub fn for_learner(transfer: engine::transfers::Transfer) -> Self {
        let refused = transfer.status == model::TransferStatus::Refused;
        Self {
            decided_by_email: None,
            decision_reason: transfer.decision_reason.clone().filter(|_| refused),
            ..Self::from(transfer)
        }
    }
}

impl From<engine::transfers::Transfer> for TransferView {
    fn from(t: engine::transfers::Transfer) -> Self {
        Self {
            id: t.id,
            share_id: t.share,
            course: t.course,
            code_id: t.code,
            code_hint: t.code_hint,
            from_account: t.from_account.0,
            from_email: t.from_email,
            to_email: t.to_email,
            to_account: t.to_account.map(|a| a.0),
            note: t.note,
            status: t.status,
            created_at: t.created_at,
            link_expires_at: t.link_expires_at,
            confirmed_at: t.confirmed_at,
            decided_at: t.decided_at,
            decided_by_email: t.decided_by_email,
            decision_reason: t.decision_reason,
        }
    }
}
