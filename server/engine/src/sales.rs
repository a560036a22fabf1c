//! A share's sales as the console lists them: each order a shop (or an
//! integrator) placed, what became of its codes, and its refund if one
//! came, so a creator sees which seats a refund took back, which wait for
//! the grace's end and which were only flagged for them to decide.
//!
//! Read-only and stale-tolerant like [`crate::read_models`] (it reads
//! through [`Reads`]): the orders are written by [`crate::orders`], the
//! refunds by [`crate::refunds`], and nothing here guards a write.

use anyhow::Context as _;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    db::Reads,
    refunds::{RefundAction, RefundKind},
    shares::ShareId,
    tenants::TenantId,
};

/// The most orders one page lists.
pub const PAGE_MAX: i64 = 200;

/// Which orders a page lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shown {
    /// Every order, newest first.
    #[default]
    All,
    /// Only the refunded ones (refunds and chargebacks), newest order first.
    Refunded,
    /// Only the ones a refund flagged for the creator (nothing revoked).
    Flagged,
}

impl Shown {
    /// `all`, `refunded` or `flagged`; anything else is `None`.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "all" => Some(Self::All),
            "refunded" => Some(Self::Refunded),
            "flagged" => Some(Self::Flagged),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Refunded => "refunded",
            Self::Flagged => "flagged",
        }
    }
}

/// How many of an order's codes are in each state now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeCounts {
    pub unused: i64,
    pub bound: i64,
    pub revoked: i64,
    pub expired: i64,
}

/// A refund as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaleRefund {
    pub kind: RefundKind,
    /// The share's policy as it was applied.
    pub action: RefundAction,
    pub reason: Option<String>,
    pub at: OffsetDateTime,
    /// When the bound codes will be revoked (the grace's end), while it
    /// has not come.
    pub revoke_bound_at: Option<OffsetDateTime>,
    /// When the bound codes were revoked.
    pub bound_revoked_at: Option<OffsetDateTime>,
}

/// One order of a share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sale {
    pub id: Uuid,
    pub source: String,
    pub order_ref: String,
    pub batch_id: Uuid,
    pub buyer_email: String,
    pub quantity: i32,
    pub addressed: bool,
    pub mailed: bool,
    pub created_at: OffsetDateTime,
    pub codes: CodeCounts,
    pub refund: Option<SaleRefund>,
}

/// A share's orders, newest first, `shown` filtering them, from before
/// the order `before` (a keyset page: order ids grow with time), at most
/// `limit` (clamped to 1 ..= [`PAGE_MAX`] + 1, so a caller can ask for
/// one more than a page to learn whether another follows).
pub async fn of_share(
    reads: &Reads,
    tenant: TenantId,
    share: ShareId,
    shown: Shown,
    before: Option<Uuid>,
    limit: i64,
) -> anyhow::Result<Vec<Sale>> {
    let rows = sqlx::query!(
        r#"SELECT o.id, o.source, o.order_ref, o.batch_id, o.buyer_email, o.quantity, o.addressed,
                  o.mail_id IS NOT NULL AS "mailed!", o.created_at,
                  o.refund_kind, o.refund_action, o.refund_reason, o.refunded_at,
                  o.revoke_bound_at, o.bound_revoked_at,
                  n.unused AS "unused!", n.bound AS "bound!", n.revoked AS "revoked!", n.expired AS "expired!"
           FROM orders o
           CROSS JOIN LATERAL (
               -- A code with no expiry (NULL) is unused until bound.
               SELECT count(*) FILTER (WHERE c.revoked_at IS NULL AND c.bound_principal IS NULL
                                         AND NOT c.lapsed) AS unused,
                      count(*) FILTER (WHERE c.revoked_at IS NULL AND c.bound_principal IS NOT NULL) AS bound,
                      count(*) FILTER (WHERE c.revoked_at IS NOT NULL) AS revoked,
                      count(*) FILTER (WHERE c.revoked_at IS NULL AND c.bound_principal IS NULL
                                         AND c.lapsed) AS expired
               FROM (SELECT revoked_at, bound_principal,
                            coalesce(code_expires_at(tenant_id, batch_id, expires_at) <= now(), false) AS lapsed
                     FROM auth_codes WHERE tenant_id = o.tenant_id AND batch_id = o.batch_id) c
           ) n
           WHERE o.tenant_id = $1 AND o.share_id = $2
             AND ($3::uuid IS NULL OR o.id < $3)
             AND ($4 = 'all' OR ($4 = 'refunded' AND o.refunded_at IS NOT NULL)
                  OR ($4 = 'flagged' AND o.refund_action = 'flag'))
           ORDER BY o.id DESC
           LIMIT $5"#,
        tenant.0,
        share.0,
        before,
        shown.as_str(),
        limit.clamp(1, PAGE_MAX + 1),
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("listing a share's orders")?;
    rows.into_iter()
        .map(|r| {
            let refund = match (r.refund_kind, r.refund_action, r.refunded_at) {
                (Some(kind), Some(action), Some(at)) => Some(SaleRefund {
                    kind: RefundKind::parse(&kind).context("a stored refund kind")?,
                    action: RefundAction::parse(&action).context("a stored refund action")?,
                    reason: r.refund_reason,
                    at,
                    revoke_bound_at: r.revoke_bound_at,
                    bound_revoked_at: r.bound_revoked_at,
                }),
                _ => None,
            };
            Ok(Sale {
                id: r.id,
                source: r.source,
                order_ref: r.order_ref,
                batch_id: r.batch_id,
                buyer_email: r.buyer_email,
                quantity: r.quantity,
                addressed: r.addressed,
                mailed: r.mailed,
                created_at: r.created_at,
                codes: CodeCounts {
                    unused: r.unused,
                    bound: r.bound,
                    revoked: r.revoked,
                    expired: r.expired,
                },
                refund,
            })
        })
        .collect()
}

/// A share's sales in figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    pub orders: i64,
    /// Seats sold (the orders' quantities).
    pub seats: i64,
    pub refunded: i64,
    /// Refunded orders whose codes the policy only flagged.
    pub flagged: i64,
    /// Refunded orders whose bound codes wait for the grace's end.
    pub grace_pending: i64,
}

/// A share's sales in figures (every order, not a page).
pub async fn totals(reads: &Reads, tenant: TenantId, share: ShareId) -> anyhow::Result<Totals> {
    let row = sqlx::query!(
        r#"SELECT count(*) AS "orders!", coalesce(sum(quantity), 0)::bigint AS "seats!",
                  count(*) FILTER (WHERE refunded_at IS NOT NULL) AS "refunded!",
                  count(*) FILTER (WHERE refund_action = 'flag') AS "flagged!",
                  count(*) FILTER (WHERE revoke_bound_at IS NOT NULL) AS "grace_pending!"
           FROM orders WHERE tenant_id = $1 AND share_id = $2"#,
        tenant.0,
        share.0,
    )
    .fetch_one(&mut *reads.connection().await?)
    .await
    .context("counting a share's orders")?;
    Ok(Totals {
        orders: row.orders,
        seats: row.seats,
        refunded: row.refunded,
        flagged: row.flagged,
        grace_pending: row.grace_pending,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_reads_back_and_nothing_else_does() {
        for shown in [Shown::All, Shown::Refunded, Shown::Flagged] {
            assert_eq!(Shown::parse(shown.as_str()), Some(shown));
        }
        for raw in ["", "ALL", "refund", " flagged", "revoked"] {
            assert_eq!(Shown::parse(raw), None, "{raw:?}");
        }
    }
}
