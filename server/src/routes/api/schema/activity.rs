//! What a tenant reads of its learners' activity: the learners bound in
//! a share, the access records and the audit log, each a page with its
//! cursor. Kept apart from the bodies of the console's actions.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A learner bound in a share.
#[derive(Debug, Serialize, ToSchema)]
pub struct LearnerBody {
    /// The code they hold.
    pub code_id: Uuid,
    pub account_id: Uuid,
    pub email: String,
    pub hint: String,
    #[serde(with = "time::serde::rfc3339")]
    pub bound_at: time::OffsetDateTime,
    pub accesses: i64,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_access: Option<time::OffsetDateTime>,
    /// The tenant suspended this learner.
    pub suspended: bool,
    /// When their access ends (the share's access period from their first
    /// access, or a later extension); `null`: for good.
    #[serde(with = "time::serde::rfc3339::option")]
    pub access_ends: Option<time::OffsetDateTime>,
}

/// A page of a share's learners; pass `next_after` as `after`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LearnersPage {
    pub learners: Vec<LearnerBody>,
    pub next_after: Option<Uuid>,
    pub has_more: bool,
}

/// One counted access.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordBody {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub granted_at: time::OffsetDateTime,
    pub email: String,
    pub hint: String,
    /// The resource's title (`(deleted)` once removed).
    pub resource: String,
    /// This access bound the code.
    pub bound_now: bool,
}

/// A page of access records, newest first; pass `next_before` as
/// `before` for the next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordsPage {
    pub records: Vec<RecordBody>,
    /// An opaque cursor.
    pub next_before: Option<String>,
    pub has_more: bool,
}

/// One audit log entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditBody {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// Who did it (none for the system).
    pub actor_email: Option<String>,
    /// `code.revoked`, `code.unbound`, `share.created`, …
    pub action: String,
    pub target_type: String,
    pub target_id: Option<Uuid>,
    pub reason: Option<String>,
    /// What the action changed.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

/// A page of the audit log, newest first; pass `next_before` as `before`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    pub entries: Vec<AuditBody>,
    /// An opaque cursor.
    pub next_before: Option<String>,
    pub has_more: bool,
}
