//! The JSON API's response bodies as types, and its OpenAPI 3 document
//! (`/api/v1/openapi.json`), generated from the handlers' annotations and
//! these types so that it cannot drift from what the server sends.
//!
//! The types live by area: [`learner`] (a learner's account and a share's
//! page), [`console`] (a tenant's shares, batches and codes), [`activity`]
//! (learners, access records, the audit log), [`orders`] (a shop's order
//! and its codes), [`transfers`] (a learner's
//! move to another account); the document is assembled in [`document`].
//! The error body every area shares is here. Every type is re-exported, so
//! handlers name them `schema::…`.

mod activity;
mod console;
mod document;
mod learner;
mod orders;
mod transfers;

use serde::Serialize;
use utoipa::ToSchema;

pub use activity::{AuditBody, AuditPage, LearnerBody, LearnersPage, RecordBody, RecordsPage};
pub use console::{
    AccessExtended, AccessExtendedAll, BatchBody, BatchDetail, BatchRevoked, CodeChanged, CodePage,
    ExpiryBody, ExtendBody, FoundCode, IssuedBatch, IssuedCode, ShareSummary, SharesPage,
    StatusChanged, UploadForm,
};
pub use document::{ApiDoc, openapi_json};
pub use learner::{AccountBody, BrandingView, CodeEntered, Me, PublicShare, SharePage};
pub use orders::{
    OrderBody, OrderCodeBody, PlacedOrder, PlacedOrderCode, RecipientBody, RecipientsPage,
    RedoneBody, RefundBody, RefundPolicyBody, RefundedOrder, SendBody,
};
pub use transfers::TransferView;

/// Every error, as RFC 9457 problem details (`application/problem+json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The kind of problem: `/api/v1/docs#problem-<kind>` (e.g.
    /// `#problem-conflict`), described on the docs page.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// The kind's summary, the same for every occurrence.
    pub title: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// What happened, for people (English).
    pub detail: String,
    /// Stable, what clients match on: `invalid_input`, `not_found`,
    /// `code_bound`, `busy_retry`, …
    pub code: String,
    /// The input field the error is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}
