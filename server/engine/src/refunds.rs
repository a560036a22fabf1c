//! Refunds out: what a shop's refund or chargeback does to an order's
//! codes.
//!
//! Each share has a refund policy ([`RefundPolicy`], `refund_policies`;
//! none set: [`RefundPolicy::default`]): **revoke** the order's codes (the
//! unused ones at once, so the seat sold can no longer be taken; the bound
//! ones when the policy's grace has passed, at once without one), or only
//! **flag** the order for the creator to decide. [`refund`] records the
//! refund on the order row once, in one transaction with what it revokes,
//! the audit row `order.refunded` and the outbox event `order.refunded`:
//! a shop's retry, or a chargeback after a refund, finds it recorded and
//! changes nothing. A learner whose bound code is revoked loses access at
//! once and is told by mail (the notice an admin's revocation sends).
//!
//! The grace's end is a moment on the order (`revoke_bound_at`), acted on
//! by [`revoke_due`], which every instance runs every minute
//! (`server/src/startup.rs`); instances share the work with `SKIP LOCKED`.
//! The policy applied is the one in force when the refund came: a later
//! change does not reach back.

use anyhow::Context as _;
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit::{self, AuditEntry},
    db::turns,
    mail,
    orders::{OrderRef, OrderSource},
    shares::ShareId,
    tenants::TenantId,
};

/// What refuses a refund or a policy.
#[derive(Debug, thiserror::Error)]
pub enum RefundError {
    #[error("a refund's kind is refund or chargeback")]
    InvalidKind,
    #[error("a refund policy's action is revoke or flag")]
    InvalidAction,
    /// The grace is how long a bound code outlives the refund: only
    /// `revoke` revokes it at all.
    #[error("a grace is 0 to 2,160 hours (90 days), and only when the action is revoke")]
    InvalidGrace,
    #[error("a reason is 1 to 500 characters")]
    InvalidReason,
    #[error("no such order")]
    OrderNotFound,
    #[error("no such share")]
    ShareNotFound,
    /// Other deliveries of this order (a shop's retries) held it for
    /// longer than a request waits: nothing was done; the retry is
    /// answered from what they did.
    #[error("this order is being placed or refunded by another request; try again in a moment")]
    Busy,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// What a shop reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundKind {
    /// The seller gave the money back.
    Refund,
    /// The buyer's bank took it back (a dispute).
    Chargeback,
}

impl RefundKind {
    pub fn parse(raw: &str) -> Result<Self, RefundError> {
        match raw.trim() {
            "refund" => Ok(Self::Refund),
            "chargeback" => Ok(Self::Chargeback),
            _ => Err(RefundError::InvalidKind),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refund => "refund",
            Self::Chargeback => "chargeback",
        }
    }
}

/// What a refund does to an order's codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundAction {
    /// Unused codes at once, bound ones after the grace.
    Revoke,
    /// Nothing revoked: the order is marked for the creator.
    Flag,
}

impl RefundAction {
    pub fn parse(raw: &str) -> Result<Self, RefundError> {
        match raw.trim() {
            "revoke" => Ok(Self::Revoke),
            "flag" => Ok(Self::Flag),
            _ => Err(RefundError::InvalidAction),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Revoke => "revoke",
            Self::Flag => "flag",
        }
    }
}

/// The most grace a bound code may get: 90 days.
pub const MAX_GRACE_HOURS: i64 = 2160;

/// A share's refund policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundPolicy {
    action: RefundAction,
    bound_grace_hours: i32,
}

impl Default for RefundPolicy {
    /// A refund takes the seat back, all of it at once: a creator who
    /// set nothing sold nothing that is still used.
    fn default() -> Self {
        Self {
            action: RefundAction::Revoke,
            bound_grace_hours: 0,
        }
    }
}

impl RefundPolicy {
    /// A policy: `revoke` with 0 to [`MAX_GRACE_HOURS`] of grace for a
    /// bound code, or `flag` (no grace: nothing is revoked).
    pub fn new(action: RefundAction, bound_grace_hours: i64) -> Result<Self, RefundError> {
        let hours = i32::try_from(bound_grace_hours)
            .ok()
            .filter(|h| (0..=MAX_GRACE_HOURS).contains(&i64::from(*h)))
            .filter(|h| action == RefundAction::Revoke || *h == 0)
            .ok_or(RefundError::InvalidGrace)?;
        Ok(Self {
            action,
            bound_grace_hours: hours,
        })
    }

    pub fn action(&self) -> RefundAction {
        self.action
    }

    pub fn bound_grace_hours(&self) -> i32 {
        self.bound_grace_hours
    }
}

/// A share's refund policy (the default when none was set).
pub async fn policy(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
) -> Result<RefundPolicy, RefundError> {
    let row = sqlx::query!(
        r#"SELECT p.action AS "action?", p.bound_grace_hours AS "hours?"
           FROM shares s LEFT JOIN refund_policies p ON p.tenant_id = s.tenant_id AND p.share_id = s.id
           WHERE s.tenant_id = $1 AND s.id = $2"#,
        tenant.0,
        share.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a share's refund policy")?
    .ok_or(RefundError::ShareNotFound)?;
    stored_policy(row.action.as_deref(), row.hours)
}

/// A policy as stored (none: the default). One this release cannot read
/// (a later release's action, during a rollback) is an error, never the
/// default: the default revokes at once what a creator may have chosen to
/// keep.
fn stored_policy(action: Option<&str>, hours: Option<i32>) -> Result<RefundPolicy, RefundError> {
    match (action, hours) {
        (None, _) => Ok(RefundPolicy::default()),
        (Some(action), Some(hours)) => Ok(RefundPolicy {
            action: RefundAction::parse(action)
                .map_err(|_| anyhow::anyhow!("a stored refund action {action:?} is unknown"))?,
            bound_grace_hours: hours,
        }),
        (Some(_), None) => Err(anyhow::anyhow!("a stored refund policy has no grace").into()),
    }
}

/// Sets a share's refund policy (audited: `share.refund_policy_set`).
/// Orders refunded before keep what was applied to them.
pub async fn set_policy(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    policy: RefundPolicy,
) -> Result<RefundPolicy, RefundError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let written = sqlx::query!(
        "INSERT INTO refund_policies (tenant_id, share_id, action, bound_grace_hours, updated_by)
         SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $2)
         ON CONFLICT (tenant_id, share_id) DO UPDATE
            SET action = EXCLUDED.action, bound_grace_hours = EXCLUDED.bound_grace_hours,
                updated_by = EXCLUDED.updated_by, updated_at = now()",
        tenant.0,
        share.0,
        policy.action.as_str(),
        policy.bound_grace_hours,
        actor.0,
    )
    .execute(&mut *tx)
    .await
    .context("writing a share's refund policy")?;
    if written.rows_affected() == 0 {
        return Err(RefundError::ShareNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "share.refund_policy_set",
        ("share", share.0),
        json!({ "action": policy.action.as_str(), "bound_grace_hours": policy.bound_grace_hours }),
    )
    .await?;
    tx.commit()
        .await
        .context("committing a share's refund policy")?;
    Ok(policy)
}

/// A reason given with a refund, if any ([`audit::reason_text`]).
fn check_reason(reason: Option<&str>) -> Result<Option<&str>, RefundError> {
    reason
        .map(|reason| audit::reason_text(reason).ok_or(RefundError::InvalidReason))
        .transpose()
}

/// A refund as recorded on its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    pub order_id: Uuid,
    pub kind: RefundKind,
    /// The policy's action as applied.
    pub action: RefundAction,
    pub reason: Option<String>,
    pub refunded_by: Option<AccountId>,
    pub refunded_at: OffsetDateTime,
    /// When the order's bound codes will be revoked (the grace's end);
    /// `None` once they are, or when none will be.
    pub revoke_bound_at: Option<OffsetDateTime>,
    /// When the order's bound codes were revoked (at the refund, or at
    /// the grace's end).
    pub bound_revoked_at: Option<OffsetDateTime>,
}

/// What [`refund`] did: recorded the refund now, or found it recorded.
#[derive(Debug)]
pub enum Refunded {
    /// Recorded now: the codes this refund revoked at once.
    New { refund: Refund, revoked: Vec<Uuid> },
    /// Recorded before (a shop's retry, a chargeback after a refund):
    /// nothing was done now.
    Replayed(Refund),
}

impl Refunded {
    pub fn refund(&self) -> &Refund {
        match self {
            Self::New { refund, .. } | Self::Replayed(refund) => refund,
        }
    }
}

/// A refund as asked.
#[derive(Debug, Clone)]
pub struct RefundRequest<'a> {
    pub source: &'a OrderSource,
    pub order_ref: &'a OrderRef,
    pub kind: RefundKind,
    pub reason: Option<&'a str>,
}

/// Refunds an order by its shop's id: applies its share's policy, records
/// the refund, audits it and emits `order.refunded`, in one transaction;
/// an order refunded before is answered as it was.
///
/// Locks: the order's turn ([`turns::order`]: its other deliveries wait
/// outside the pool, then answer as replays), the order's row, then its
/// batch's (`FOR UPDATE`), then its codes. Every path that frees or adds a code of a batch (an unbind, a
/// replacement, a revoke-and-replace) takes the batch's row first
/// (`FOR SHARE`, [`crate::batches::hold_for_change`]), so it runs wholly
/// before the refund, which then sees what it did, or wholly after, when
/// it sees the refund; a settlement binding one of the codes meanwhile
/// either committed first (the code is bound, and dealt with as bound) or
/// finds it revoked.
pub async fn refund(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    request: &RefundRequest<'_>,
) -> Result<Refunded, RefundError> {
    let reason = check_reason(request.reason)?;
    let mut waits = turns::Waits::new();
    loop {
        // A shop's retries, the common case, are answered without a lock.
        if let Some(earlier) = recorded_by_ref(pool, tenant, request).await? {
            return replayed(pool, tenant, actor, request, earlier).await;
        }
        if let Some(refunded) = refund_in_turn(pool, tenant, actor, request, reason).await? {
            return Ok(refunded);
        }
        // Another delivery of this order holds its turn: wait for it
        // outside the pool (`db::turns`), then read what it did.
        if !waits.next().await {
            return Err(RefundError::Busy);
        }
    }
}

/// [`refund`] once it holds the order's turn; `None`: another request
/// holds it.
async fn refund_in_turn(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    request: &RefundRequest<'_>,
    reason: Option<&str>,
) -> Result<Option<Refunded>, RefundError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let turn = turns::order(tenant, request.source.as_str(), request.order_ref.as_str());
    if !turns::try_take(&mut tx, &turn).await? {
        tx.rollback().await.context("giving the turn up")?;
        return Ok(None);
    }
    let order = sqlx::query!(
        "SELECT o.id, o.share_id, o.batch_id, o.refunded_at IS NOT NULL AS \"refunded!\",
                p.action AS \"action?\", p.bound_grace_hours AS \"hours?\"
         FROM orders o
         LEFT JOIN refund_policies p ON p.tenant_id = o.tenant_id AND p.share_id = o.share_id
         WHERE o.tenant_id = $1 AND o.source = $2 AND o.order_ref = $3
         FOR UPDATE OF o",
        tenant.0,
        request.source.as_str(),
        request.order_ref.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking an order")?
    .ok_or(RefundError::OrderNotFound)?;
    if order.refunded {
        // Another delivery refunded it while this one waited.
        tx.rollback().await.context("ending a replay")?;
        let earlier = recorded(pool, tenant, order.id)
            .await?
            .context("a refunded order lost its refund")?;
        return replayed(pool, tenant, actor, request, earlier)
            .await
            .map(Some);
    }
    let policy = stored_policy(order.action.as_deref(), order.hours)?;
    let mut revoked = Vec::new();
    let mut learners = Vec::new();
    let mut revoke_bound_at = None;
    let mut bound_revoked = false;
    if policy.action == RefundAction::Revoke {
        hold_batch(&mut tx, tenant, order.batch_id).await?;
        // The seats sold can no longer be taken.
        revoked = sqlx::query_scalar!(
            "UPDATE auth_codes SET revoked_at = now()
             WHERE tenant_id = $1 AND batch_id = $2 AND revoked_at IS NULL AND bound_principal IS NULL
             RETURNING id",
            tenant.0,
            order.batch_id,
        )
        .fetch_all(&mut *tx)
        .await
        .context("revoking a refunded order's unused codes")?;
        if policy.bound_grace_hours == 0 {
            let taken = revoke_codes(
                &mut tx,
                tenant,
                Some(actor),
                order.id,
                order.share_id,
                order.batch_id,
            )
            .await?;
            revoked.extend(taken.codes);
            learners = taken.learners;
            bound_revoked = true;
        } else {
            revoke_bound_at = Some(
                sqlx::query_scalar!(
                    r#"SELECT now() + make_interval(hours => $1) AS "at!""#,
                    policy.bound_grace_hours
                )
                .fetch_one(&mut *tx)
                .await
                .context("reading the grace's end")?,
            );
        }
    }
    let at = sqlx::query_scalar!(
        "UPDATE orders SET refund_kind = $3, refund_action = $4, refund_reason = $5,
                refunded_by = $6, refunded_at = now(), revoke_bound_at = $7,
                bound_revoked_at = CASE WHEN $8 THEN now() END
         WHERE tenant_id = $1 AND id = $2
         RETURNING refunded_at AS \"at!\"",
        tenant.0,
        order.id,
        request.kind.as_str(),
        policy.action.as_str(),
        reason,
        actor.0,
        revoke_bound_at,
        bound_revoked,
    )
    .fetch_one(&mut *tx)
    .await
    .context("recording a refund")?;
    // The bound codes left live: revoked at the grace's end (`revoke`),
    // or kept (`flag`).
    let still_bound: Vec<Uuid> = sqlx::query_scalar!(
        "SELECT id FROM auth_codes WHERE tenant_id = $1 AND batch_id = $2
         AND revoked_at IS NULL AND bound_principal IS NOT NULL ORDER BY id",
        tenant.0,
        order.batch_id,
    )
    .fetch_all(&mut *tx)
    .await
    .context("reading a refunded order's bound codes")?;
    revoked.sort_unstable();
    let left = match policy.action {
        RefundAction::Revoke => "bound_pending",
        RefundAction::Flag => "bound_kept",
    };
    let mut details = json!({
        "source": request.source.as_str(), "order_ref": request.order_ref.as_str(),
        "share_id": order.share_id, "kind": request.kind.as_str(),
        "action": policy.action.as_str(), "revoked": revoked,
        "revoke_bound_at": rfc3339(revoke_bound_at),
    });
    details[left] = json!(still_bound);
    let mut audited = details.clone();
    // Who lost a seat now: the audit log's, not the webhook's.
    audited["learners"] = json!(learners);
    audit::record(
        &mut tx,
        AuditEntry {
            tenant,
            actor: Some(actor),
            action: "order.refunded",
            target_type: "order",
            target_id: Some(order.id),
            reason,
            details: audited,
        },
    )
    .await?;
    details["order_id"] = json!(order.id);
    audit::emit(&mut tx, tenant, "order.refunded", details).await?;
    tx.commit().await.context("committing a refund")?;
    let refund = recorded(pool, tenant, order.id)
        .await?
        .context("a refund just recorded is gone")?;
    debug_assert_eq!(refund.refunded_at, at);
    Ok(Some(Refunded::New { refund, revoked }))
}

/// The refund recorded before on the order `request` names, if any.
async fn recorded_by_ref(
    pool: &PgPool,
    tenant: TenantId,
    request: &RefundRequest<'_>,
) -> anyhow::Result<Option<Refund>> {
    let order = sqlx::query_scalar!(
        "SELECT id FROM orders WHERE tenant_id = $1 AND source = $2 AND order_ref = $3
         AND refunded_at IS NOT NULL",
        tenant.0,
        request.source.as_str(),
        request.order_ref.as_str(),
    )
    .fetch_optional(pool)
    .await
    .context("looking for an order's refund")?;
    match order {
        Some(order) => recorded(pool, tenant, order).await,
        None => Ok(None),
    }
}

/// The answer to a refund of an order refunded before. A report of
/// another kind (a chargeback after a refund) changes nothing either, but
/// is audited once (`order.refund_repeated`): it is the shop's news (its
/// retries are not).
async fn replayed(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    request: &RefundRequest<'_>,
    earlier: Refund,
) -> Result<Refunded, RefundError> {
    if earlier.kind != request.kind
        && !sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM audit_log
                              WHERE tenant_id = $1 AND action = 'order.refund_repeated'
                                AND target_id = $2 AND details->>'kind' = $3) AS "told!""#,
            tenant.0,
            earlier.order_id,
            request.kind.as_str(),
        )
        .fetch_one(pool)
        .await
        .context("looking for a repeated refund's record")?
    {
        let mut conn = pool.acquire().await.context("a connection")?;
        audit::record(
            &mut conn,
            AuditEntry {
                tenant,
                actor: Some(actor),
                action: "order.refund_repeated",
                target_type: "order",
                target_id: Some(earlier.order_id),
                reason: request.reason.and_then(audit::reason_text),
                details: json!({ "kind": request.kind.as_str(),
                                 "recorded_kind": earlier.kind.as_str() }),
            },
        )
        .await?;
    }
    Ok(Refunded::Replayed(earlier))
}

fn rfc3339(at: Option<OffsetDateTime>) -> Option<String> {
    crate::code_actions::rfc3339(at)
}

/// Takes `batch`'s row for the refund: every path that frees or adds a
/// code of it waits (see [`refund`]).
async fn hold_batch(conn: &mut PgConnection, tenant: TenantId, batch: Uuid) -> anyhow::Result<()> {
    sqlx::query!(
        "SELECT id FROM code_batches WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        batch,
    )
    .fetch_one(conn)
    .await
    .context("locking a refunded order's batch")?;
    Ok(())
}

/// What [`revoke_codes`] took back.
struct Taken {
    codes: Vec<Uuid>,
    /// The learners who held them.
    learners: Vec<Uuid>,
}

/// Revokes every code of `batch` still live, bound ones included: each
/// bound learner loses access now, their open transfer requests are
/// withdrawn, they are told by mail, and `code.revoked` is emitted for
/// each (as an admin's revocation of a held code does). `actor`: the
/// member refunding, `None` at a grace's end (the server).
///
/// A bound code is unbound as it is revoked (the audited unbind's
/// clearing, [`crate::code_actions::clear_binding`]): the refund took the
/// seat back, and with it the learner's one code of the share, so a buyer
/// who buys again binds the new order's code like a first one. Who held it
/// stays in the audit row (`learners`); the code itself is spent for
/// everyone, and names who held it (`released_from`, [`note_released`]);
/// each unbind is audited (`code.unbound`, with the order). (An admin's plain revocation keeps the binding instead: a
/// learner whose code was taken away for cause does not come back with
/// another.)
async fn revoke_codes(
    tx: &mut PgConnection,
    tenant: TenantId,
    actor: Option<AccountId>,
    order: Uuid,
    share: Uuid,
    batch: Uuid,
) -> anyhow::Result<Taken> {
    let mut codes = sqlx::query_scalar!(
        "UPDATE auth_codes SET revoked_at = now()
         WHERE tenant_id = $1 AND batch_id = $2 AND revoked_at IS NULL AND bound_principal IS NULL
         RETURNING id",
        tenant.0,
        batch,
    )
    .fetch_all(&mut *tx)
    .await
    .context("revoking a refunded order's unused codes")?;
    // In id order, as every path that locks several codes of a batch.
    let bound = sqlx::query!(
        r#"SELECT id, bound_principal AS "learner!" FROM auth_codes
           WHERE tenant_id = $1 AND batch_id = $2 AND revoked_at IS NULL
             AND bound_principal IS NOT NULL
           ORDER BY id FOR UPDATE"#,
        tenant.0,
        batch,
    )
    .fetch_all(&mut *tx)
    .await
    .context("locking a refunded order's bound codes")?;
    if !bound.is_empty() {
        crate::code_actions::open_unbind(&mut *tx).await?;
    }
    let mut learners = Vec::new();
    for row in bound {
        crate::code_actions::clear_binding(&mut *tx, tenant, row.id, true).await?;
        note_released(&mut *tx, tenant, row.id, row.learner).await?;
        // The unbind, audited as every unbind is (the reconciler's
        // `records_name_the_bound_learner` looks for it): who held the code.
        audit::record(
            &mut *tx,
            AuditEntry {
                tenant,
                actor,
                action: "code.unbound",
                target_type: "code",
                target_id: Some(row.id),
                reason: None,
                details: json!({ "share_id": share, "principal": row.learner, "revoked": true,
                                 "refunded_order": order }),
            },
        )
        .await?;
        audit::emit(
            &mut *tx,
            tenant,
            "code.unbound",
            json!({ "share_id": share, "code_id": row.id, "principal": row.learner }),
        )
        .await?;
        learners.push(row.learner);
        codes.push(row.id);
        crate::code_actions::end_live_grants(&mut *tx, tenant, row.id).await?;
        crate::transfers::withdraw_open(&mut *tx, tenant, row.id, actor).await?;
        audit::emit(
            &mut *tx,
            tenant,
            "code.revoked",
            json!({ "share_id": share, "code_id": row.id }),
        )
        .await?;
        mail::enqueue_code_notice(
            &mut *tx,
            mail::Template::CodeRevoked,
            tenant,
            share,
            AccountId(row.learner),
            json!({}),
        )
        .await?;
    }
    Ok(Taken { codes, learners })
}

/// Notes on `code`, which a refund's seat taking just unbound, the
/// learner it released (`auth_codes.released_from`: the order view's
/// `former_holder`).
pub(crate) async fn note_released(
    conn: &mut PgConnection,
    tenant: TenantId,
    code: Uuid,
    learner: Uuid,
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE auth_codes SET released_from = $3 WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        code,
        learner,
    )
    .execute(conn)
    .await
    .context("noting who a refund released")?;
    Ok(())
}

/// Whether `code` belongs to an order whose refund takes its seats back
/// (`revoke`): such a code, once unbound, is revoked too (else whoever
/// holds its text could take the seat back during the grace). The caller
/// holds the code's batch ([`crate::batches::hold_for_change`]).
pub(crate) async fn takes_seat_back(
    conn: &mut PgConnection,
    tenant: TenantId,
    code: Uuid,
) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
               SELECT 1 FROM auth_codes c
               JOIN orders o ON o.tenant_id = c.tenant_id AND o.batch_id = c.batch_id
               WHERE c.tenant_id = $1 AND c.id = $2 AND o.refund_action = 'revoke'
           ) AS "refunded!""#,
        tenant.0,
        code,
    )
    .fetch_one(conn)
    .await
    .context("looking for a refund of the code's order")
}

/// An order's refund, if it was refunded.
pub async fn recorded(
    pool: &PgPool,
    tenant: TenantId,
    order: Uuid,
) -> anyhow::Result<Option<Refund>> {
    let row = sqlx::query!(
        r#"SELECT refund_kind AS "kind!", refund_action AS "action!", refund_reason, refunded_by,
                  refunded_at AS "at!", revoke_bound_at, bound_revoked_at
           FROM orders WHERE tenant_id = $1 AND id = $2 AND refunded_at IS NOT NULL"#,
        tenant.0,
        order,
    )
    .fetch_optional(pool)
    .await
    .context("reading an order's refund")?;
    row.map(|row| {
        Ok(Refund {
            order_id: order,
            kind: RefundKind::parse(&row.kind).context("a stored refund kind")?,
            action: RefundAction::parse(&row.action).context("a stored refund action")?,
            reason: row.refund_reason,
            refunded_by: row.refunded_by.map(AccountId),
            refunded_at: row.at,
            revoke_bound_at: row.revoke_bound_at,
            bound_revoked_at: row.bound_revoked_at,
        })
    })
    .transpose()
}

/// Revokes the bound codes of every refunded order whose grace ended by
/// `now` (`None`: the database's clock), one order a transaction
/// (audited `order.refund_grace_ended` with no actor: the server did it;
/// each learner told), trying at most `limit` orders. Returns how many it
/// tried and how many of those it finished. Several instances at once
/// take different orders. An order that fails is logged and not tried
/// again before [`RETRY_AFTER_FAILURE`] (`revoke_retry_at`), so it holds
/// up no other; its grace's end stays as it was.
pub async fn revoke_due(
    pool: &PgPool,
    now: Option<OffsetDateTime>,
    limit: usize,
) -> anyhow::Result<Swept> {
    let mut swept = Swept::default();
    while swept.tried < limit {
        let mut tx = pool.begin().await.context("starting a transaction")?;
        let Some(order) = sqlx::query!(
            "SELECT tenant_id, id, share_id, batch_id, refunded_by, revoke_bound_at AS \"due!\"
             FROM orders
             WHERE revoke_bound_at <= coalesce($1, now())
               AND (revoke_retry_at IS NULL OR revoke_retry_at <= coalesce($1, now()))
             ORDER BY revoke_bound_at LIMIT 1 FOR UPDATE SKIP LOCKED",
            now,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("finding a refund whose grace ended")?
        else {
            break;
        };
        swept.tried += 1;
        let due = Due {
            tenant: TenantId(order.tenant_id),
            order: order.id,
            share: order.share_id,
            batch: order.batch_id,
            refunded_by: order.refunded_by,
            at: order.due,
        };
        let ended = match end_grace(&mut tx, &due).await {
            Ok(()) => tx.commit().await.context("committing a refund's grace end"),
            Err(error) => {
                // Dropping the transaction rolls it back.
                drop(tx);
                Err(error)
            }
        };
        match ended {
            Ok(()) => swept.finished += 1,
            Err(error) => {
                tracing::error!(
                    order = %due.order,
                    tenant = %due.tenant.0,
                    error = format!("{error:#}"),
                    "a refunded order's bound codes could not be revoked; trying again later"
                );
                sqlx::query!(
                    "UPDATE orders SET revoke_retry_at = coalesce($3, now()) + make_interval(secs => $4)
                     WHERE tenant_id = $1 AND id = $2 AND revoke_bound_at IS NOT NULL",
                    due.tenant.0,
                    due.order,
                    now,
                    RETRY_AFTER_FAILURE.as_secs_f64(),
                )
                .execute(pool)
                .await
                .context("putting off a failed grace end")?;
            }
        }
    }
    Ok(swept)
}

/// What one [`revoke_due`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Orders whose grace end was tried.
    pub tried: usize,
    /// Of those, the ones whose bound codes are now revoked.
    pub finished: usize,
}

/// How long an order whose grace end failed waits before the next try.
pub const RETRY_AFTER_FAILURE: std::time::Duration = std::time::Duration::from_secs(600);

/// A refunded order whose grace ended.
struct Due {
    tenant: TenantId,
    order: Uuid,
    share: Uuid,
    batch: Uuid,
    refunded_by: Option<Uuid>,
    at: OffsetDateTime,
}

/// One grace end, inside the sweep's transaction (which holds the order).
async fn end_grace(tx: &mut PgConnection, due: &Due) -> anyhow::Result<()> {
    hold_batch(&mut *tx, due.tenant, due.batch).await?;
    let taken = revoke_codes(&mut *tx, due.tenant, None, due.order, due.share, due.batch).await?;
    sqlx::query!(
        "UPDATE orders SET revoke_bound_at = NULL, revoke_retry_at = NULL, bound_revoked_at = now()
         WHERE tenant_id = $1 AND id = $2",
        due.tenant.0,
        due.order,
    )
    .execute(&mut *tx)
    .await
    .context("noting a refund's grace ended")?;
    audit::record(
        &mut *tx,
        AuditEntry {
            tenant: due.tenant,
            actor: None,
            action: "order.refund_grace_ended",
            target_type: "order",
            target_id: Some(due.order),
            reason: None,
            details: json!({ "share_id": due.share, "revoked": taken.codes,
                             "learners": taken.learners, "due": rfc3339(Some(due.at)),
                             "refunded_by": due.refunded_by }),
        },
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_grants_grace_only_to_revoke_and_within_90_days() {
        for hours in [0, 1, 72, MAX_GRACE_HOURS] {
            let policy = RefundPolicy::new(RefundAction::Revoke, hours).expect("in range");
            assert_eq!(i64::from(policy.bound_grace_hours()), hours);
        }
        for hours in [-1, MAX_GRACE_HOURS + 1, i64::from(i32::MAX) + 1] {
            assert!(matches!(
                RefundPolicy::new(RefundAction::Revoke, hours),
                Err(RefundError::InvalidGrace)
            ));
        }
        assert!(RefundPolicy::new(RefundAction::Flag, 0).is_ok());
        assert!(matches!(
            RefundPolicy::new(RefundAction::Flag, 1),
            Err(RefundError::InvalidGrace)
        ));
        assert_eq!(
            RefundPolicy::default(),
            RefundPolicy::new(RefundAction::Revoke, 0).expect("default")
        );
    }

    #[test]
    fn kinds_actions_and_reasons_are_parsed() {
        assert_eq!(RefundKind::parse(" refund ").ok(), Some(RefundKind::Refund));
        assert_eq!(
            RefundKind::parse("chargeback").ok(),
            Some(RefundKind::Chargeback)
        );
        for bad in ["", "Refund", "dispute"] {
            assert!(matches!(
                RefundKind::parse(bad),
                Err(RefundError::InvalidKind)
            ));
        }
        assert_eq!(RefundAction::parse("flag").ok(), Some(RefundAction::Flag));
        assert!(matches!(
            RefundAction::parse("keep"),
            Err(RefundError::InvalidAction)
        ));
        assert_eq!(check_reason(None).ok(), Some(None));
        assert_eq!(
            check_reason(Some(" asked by mail \n")).ok(),
            Some(Some("asked by mail"))
        );
        for bad in ["", "   ", "a\u{0}b", &"é".repeat(501)] {
            assert!(
                matches!(check_reason(Some(bad)), Err(RefundError::InvalidReason)),
                "{bad:?}"
            );
        }
    }
}
