//! An order and its codes (`routes/api/console/orders.rs`), and a
//! batch's codes sent by mail (`routes/api/console/mailings.rs`), and
//! refunds (`routes/api/console/refunds.rs`).

use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// An order as recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrderBody {
    /// AdmitOne's id of the order.
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub source: String,
    /// The order's id in its shop.
    pub order_id: String,
    pub share_id: Uuid,
    /// The batch its codes belong to.
    pub batch_id: Uuid,
    /// The buyer's address (case-folded).
    pub email: String,
    pub quantity: i32,
    /// Whether its code binds only to the buyer's verified account.
    pub addressed: bool,
    /// Whether its codes were mailed to the buyer.
    pub mailed: bool,
    /// The mail's language as asked; `null`: the buyer's account's if they
    /// have one, else English.
    pub lang: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    pub codes: Vec<OrderCodeBody>,
    /// The refund or chargeback, once one came (`null`: none).
    pub refund: Option<RefundBody>,
}

/// An order's refund, as recorded when it came.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefundBody {
    /// `refund` or `chargeback`.
    pub kind: String,
    /// The share's policy as applied: `revoke` or `flag`.
    pub action: String,
    pub reason: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub refunded_at: OffsetDateTime,
    /// When the order's bound codes will be revoked (the policy's grace);
    /// `null` once they are, or when none will be.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoke_bound_at: Option<OffsetDateTime>,
    /// When the order's bound codes were revoked.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub bound_revoked_at: Option<OffsetDateTime>,
}

/// The answer to refunding an order (or to its replay).
#[derive(Debug, Serialize, ToSchema)]
pub struct RefundedOrder {
    #[serde(flatten)]
    pub order: OrderBody,
    /// `true`: the order was refunded before; nothing was done now.
    pub replayed: bool,
    /// The codes this call revoked (none on a replay).
    pub revoked: Vec<uuid::Uuid>,
}

/// A share's refund policy.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefundPolicyBody {
    pub share_id: Uuid,
    /// `revoke` (unused codes at once, bound ones after the grace) or
    /// `flag` (nothing revoked, the order marked).
    pub action: String,
    /// Hours a bound code outlives the refund (0: revoked at once).
    pub bound_grace_hours: i32,
}

/// One code of an order, as it stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrderCodeBody {
    pub id: Uuid,
    /// First two and last two symbols.
    pub hint: String,
    pub state: model::CodeState,
    /// The address of the account holding it, once bound.
    pub holder: Option<String>,
    /// The address of the account a refund released from it (the refund
    /// took the seat back and unbound the code).
    pub former_holder: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub bound_at: Option<OffsetDateTime>,
}

/// The answer to placing an order (or to its replay).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlacedOrder {
    #[serde(flatten)]
    pub order: OrderBody,
    /// `true`: this order was placed before; nothing was issued now.
    pub replayed: bool,
    /// The codes, in full for the member who placed the order.
    #[serde(rename = "issued")]
    pub codes: Vec<PlacedOrderCode>,
}

/// A code of a placed order, in full.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlacedOrderCode {
    pub id: Uuid,
    /// `XXXX-XXXX-XXXX`, for the member who placed the order (and their
    /// retries within 15 minutes); `null` for anyone else or later, or if
    /// the key it was made with has left the server's keyring.
    pub code: Option<String>,
    pub hint: String,
    pub state: model::CodeState,
}

/// What a send did (or, with `dry_run`, would do).
#[derive(Debug, Serialize, ToSchema)]
pub struct SendBody {
    pub batch_id: Uuid,
    /// New addresses mailed a code now (0 on a dry run).
    pub sent: usize,
    /// New addresses in the list: what `sent` is when not a dry run.
    pub to_send: usize,
    /// Entries repeating an earlier one of the list.
    pub duplicates: usize,
    /// Addresses that had a code of this batch already: skipped.
    pub already_sent: usize,
    /// Codes the batch had left to send before this one.
    pub free: i64,
}

/// One address a batch mailed a code to.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecipientBody {
    pub email: String,
    pub code_id: Uuid,
    pub hint: String,
    /// `queued`, `sent`, `failed`, `redeemed` or `revoked`.
    pub state: String,
    /// The SMTP server's last refusal, while queued again or failed.
    pub error: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub mailed_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub sent_at: Option<OffsetDateTime>,
}

/// What a resend or a revoke-and-resend did.
#[derive(Debug, Serialize, ToSchema)]
pub struct RedoneBody {
    /// The recipient as it now stands (after a revoke-and-resend, with
    /// the new code).
    pub recipient: RecipientBody,
    /// Whether a mail was queued now (`false`: the last one still waited
    /// to go, and nothing more was queued).
    pub queued: bool,
    /// The code revoked now (a revoke-and-resend), else `null`.
    pub revoked_id: Option<Uuid>,
}

/// A page of recipients; pass `next_after` as `after` for the next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecipientsPage {
    pub recipients: Vec<RecipientBody>,
    pub next_after: Option<String>,
    pub has_more: bool,
}
