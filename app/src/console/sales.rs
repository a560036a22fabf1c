//! A share's sales (`…/s/{share}/sales`, the page in
//! `pages/console/sales.rs`): the share's refund policy, and its orders
//! with what became of their codes and refunds (`engine::sales`), so a
//! creator sees the seats a refund took back, those waiting for the
//! grace's end, and the orders flagged for them to decide.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// The sales page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SalesPage {
    pub share_title: String,
    /// `revoke` or `flag`.
    pub policy_action: String,
    pub policy_grace_hours: i32,
    /// The filter the list was read with: `all`, `refunded` or `flagged`.
    pub shown: String,
    pub totals: SalesTotals,
    pub orders: Vec<SaleView>,
    /// The cursor of the next (older) page, if there is one.
    pub next_before: Option<Uuid>,
    /// The signed-in member may look but not change the policy.
    pub read_only: bool,
}

/// The share's sales in figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SalesTotals {
    pub orders: i64,
    pub seats: i64,
    pub refunded: i64,
    pub flagged: i64,
    pub grace_pending: i64,
}

/// One order, as the page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleView {
    pub id: Uuid,
    pub source: String,
    pub order_ref: String,
    pub batch_id: Uuid,
    pub buyer_email: String,
    pub quantity: i32,
    pub addressed: bool,
    pub mailed: bool,
    pub placed: String,
    pub unused: i64,
    pub bound: i64,
    pub revoked: i64,
    pub expired: i64,
    pub refund: Option<RefundView>,
}

impl SaleView {
    /// `none`, or the refund's action as applied (`revoke`, `flag`): what
    /// the page marks its row with.
    pub fn refund_state(&self) -> &'static str {
        match &self.refund {
            None => "none",
            Some(r) if r.action == "flag" => "flag",
            Some(_) => "revoke",
        }
    }
}

/// An order's refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundView {
    /// `refund` or `chargeback`.
    pub kind: String,
    /// `revoke` or `flag`, as applied.
    pub action: String,
    pub reason: Option<String>,
    pub at: String,
    /// When the bound codes will be revoked, while that is to come.
    pub revoke_bound_at: Option<String>,
    /// When the bound codes were revoked.
    pub bound_revoked_at: Option<String>,
}

/// Orders one page lists.
pub const PAGE: i64 = 50;

/// A share's refund policy, its sales in figures and a page of its
/// orders (`shown`: `all`, the default, `refunded` or `flagged`; `before`:
/// the cursor of an older page).
#[server(prefix = "/api/admin", endpoint = "sales", input = server_fn::codec::GetUrl)]
pub async fn share_sales(
    tenant_id: Uuid,
    share_id: Uuid,
    shown: Option<String>,
    before: Option<Uuid>,
) -> Result<SalesPage, AppError> {
    use engine::sales::{self, Shown};
    use support::internal;
    let shown = match shown.as_deref() {
        None | Some("") => Shown::All,
        Some(raw) => Shown::parse(raw).ok_or_else(|| {
            AppError::invalid(
                "shown",
                crate::i18n::t(crate::i18n::Msg::SalesFilterInvalid),
            )
        })?,
    };
    let (state, _, share, role) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ViewConsole,
    )
    .await?;
    let zone = support::zone(&state, share.tenant()).await?;
    let policy = engine::refunds::policy(&state.pool, share.tenant(), share.id)
        .await
        .map_err(AppError::outcome)?;
    let totals = sales::totals(&state.reads, share.tenant(), share.id)
        .await
        .map_err(internal)?;
    // One row more than the page: a page ending with the oldest order
    // offers no (empty) next page.
    let mut rows = sales::of_share(
        &state.reads,
        share.tenant(),
        share.id,
        shown,
        before,
        PAGE + 1,
    )
    .await
    .map_err(internal)?;
    let more = rows.len() as i64 > PAGE;
    rows.truncate(usize::try_from(PAGE).unwrap_or(usize::MAX));
    let next_before = more.then(|| rows.last().map(|r| r.id)).flatten();
    Ok(SalesPage {
        share_title: share.title,
        policy_action: policy.action().as_str().to_owned(),
        policy_grace_hours: policy.bound_grace_hours(),
        shown: shown.as_str().to_owned(),
        totals: SalesTotals {
            orders: totals.orders,
            seats: totals.seats,
            refunded: totals.refunded,
            flagged: totals.flagged,
            grace_pending: totals.grace_pending,
        },
        orders: rows
            .into_iter()
            .map(|s| SaleView {
                id: s.id,
                placed: zone.when(s.created_at),
                unused: s.codes.unused,
                bound: s.codes.bound,
                revoked: s.codes.revoked,
                expired: s.codes.expired,
                refund: s.refund.map(|r| RefundView {
                    kind: r.kind.as_str().to_owned(),
                    action: r.action.as_str().to_owned(),
                    reason: r.reason,
                    at: zone.when(r.at),
                    revoke_bound_at: r.revoke_bound_at.map(|at| zone.when(at)),
                    bound_revoked_at: r.bound_revoked_at.map(|at| zone.when(at)),
                }),
                source: s.source,
                order_ref: s.order_ref,
                batch_id: s.batch_id,
                buyer_email: s.buyer_email,
                quantity: s.quantity,
                addressed: s.addressed,
                mailed: s.mailed,
            })
            .collect(),
        next_before,
        read_only: !role.allows(engine::tenants::Permission::ManageCourses),
    })
}

/// Sets what a refund or chargeback of this share's orders does: `revoke`
/// (unused codes at once, bound ones after `bound_grace_hours`, empty: 0) or
/// `flag`. Orders refunded before keep what was applied to them. Audited.
#[server(prefix = "/api/admin", endpoint = "sales/refund-policy")]
pub async fn set_refund_policy(
    tenant_id: Uuid,
    share_id: Uuid,
    action: String,
    bound_grace_hours: Option<String>,
) -> Result<(), AppError> {
    use engine::refunds::{RefundAction, RefundError, RefundPolicy};
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let action = RefundAction::parse(&action).map_err(AppError::outcome)?;
    // A `flag` form may post the grace field it shows disabled-looking:
    // only `revoke` reads it.
    let hours = match (action, bound_grace_hours.as_deref().map(str::trim)) {
        (RefundAction::Flag, _) | (RefundAction::Revoke, None | Some("")) => 0,
        (RefundAction::Revoke, Some(raw)) => raw
            .parse::<i64>()
            .map_err(|_| AppError::outcome(RefundError::InvalidGrace))?,
    };
    let policy = RefundPolicy::new(action, hours).map_err(AppError::outcome)?;
    engine::refunds::set_policy(&state.pool, share.tenant(), admin.id, share.id, policy)
        .await
        .map_err(AppError::outcome)?;
    Ok(())
}
