//! The bodies of a tenant's console calls about its shares, batches and
//! codes: what issuing, listing, revoking, replacing, extending and
//! expiring answer with or take, and the upload form. Apart from the
//! learners' bodies, and from the activity read models (`activity.rs`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A share's new status.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusChanged {
    pub id: Uuid,
    pub status: model::ShareStatus,
}

/// One issued code: the plain code appears in this answer only.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedCode {
    pub id: Uuid,
    /// `XXXX-XXXX-XXXX`.
    pub code: String,
}

/// A new batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedBatch {
    pub batch_id: Uuid,
    pub count: usize,
    pub codes: Vec<IssuedCode>,
}

/// A page of codes; pass `next_after` as `after` for the next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodePage {
    pub codes: Vec<engine::code_table::CodeView>,
    /// Set exactly when another page follows.
    pub next_after: Option<Uuid>,
    /// Whether another page follows (`next_after` is set).
    pub has_more: bool,
}

/// A code's state after an action.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodeChanged {
    pub id: Uuid,
    pub state: model::CodeState,
}

/// A share in a tenant's list, with its code counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShareSummary {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub status: model::ShareStatus,
    /// Codes issued, bound to a learner, revoked.
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
}

/// A page of shares, newest first; pass `next_after` as `after` for the
/// next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharesPage {
    pub shares: Vec<ShareSummary>,
    pub next_after: Option<Uuid>,
    /// Whether another page follows (`next_after` is set).
    pub has_more: bool,
}

/// A batch of codes.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchBody {
    pub id: Uuid,
    pub label: String,
    pub count: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// When its unused codes stop working (a code's own date overrides
    /// it); `null`: never.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<time::OffsetDateTime>,
}

/// A batch with its codes counted by state.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchDetail {
    pub id: Uuid,
    pub share_id: Uuid,
    pub label: String,
    /// How many codes were issued.
    pub count: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// When its unused codes stop working (a code's own date overrides
    /// it); `null`: never.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<time::OffsetDateTime>,
    /// Codes nobody has used yet and still usable (replacement codes
    /// included).
    pub unused: i64,
    /// Codes bound to a learner.
    pub bound: i64,
    /// Codes revoked (replaced ones included).
    pub revoked: i64,
    /// Codes nobody used before their date: refused to everyone.
    pub expired: i64,
}

/// A date to extend access to.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ExtendBody {
    /// RFC 3339, in the future.
    #[schema(value_type = String, format = DateTime)]
    pub until: String,
}

/// One learner's access after an extension.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessExtended {
    pub code_id: Uuid,
    /// When the learner's access now ends.
    #[serde(with = "time::serde::rfc3339")]
    pub access_ends: time::OffsetDateTime,
}

/// Everyone's access after an extension.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessExtendedAll {
    pub share_id: Uuid,
    /// Learners (codes bound and not revoked) whose extension moved to
    /// this date; those whose extension was already later are not counted.
    pub extended: u64,
}

/// A new expiry date for a batch or one code.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ExpiryBody {
    /// RFC 3339, in the future; `null` (or absent): never (for a code:
    /// its batch's date applies again).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<String>,
}

/// What revoking a batch's unused codes did.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchRevoked {
    pub batch_id: Uuid,
    /// How many unused codes were revoked now (bound codes keep working).
    pub revoked: u64,
}

/// A code found by its full text.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundCode {
    pub share_id: Uuid,
    pub code: engine::code_table::CodeView,
}

/// The multipart upload form.
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    reason = "describes a multipart body for the OpenAPI document"
)]
pub struct UploadForm {
    /// Defaults to the file name.
    title: Option<String>,
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    file: String,
}
