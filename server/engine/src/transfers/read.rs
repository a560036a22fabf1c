//! Reading requests back: one, a tenant's list, a learner's latest.
//!
//! Every page that shows a request (the console, the learner's page, the
//! API) reads it through the one `SELECT` here, so a [`Transfer`] always
//! carries the same names (course, hint, addresses) whichever page asks.
//! The steps that change a request read it back with [`load`], inside their
//! own transaction.

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use super::{Transfer, TransferError, TransferStatus};
use crate::{accounts::AccountId, shares::ShareId, tenants::TenantId};

/// One query of requests, with the names the pages show: `$where` (a
/// literal: `WHERE …`, `ORDER BY …`) appended to the one `SELECT`.
macro_rules! query_transfers {
    ($where:literal, $($arg:expr),+ $(,)?) => {
        sqlx::query!(
            r#"SELECT r.id, r.tenant_id, r.share_id, s.title AS course, r.code_id, c.hint AS code_hint,
                      r.from_account, f.email AS from_email, r.to_email, r.to_account, r.note,
                      r.status AS "status: TransferStatus", r.created_at, r.link_expires_at,
                      r.confirmed_at, r.decided_at, d.email AS "decided_by_email?", r.decision_reason
               FROM transfer_requests r
               JOIN shares s ON s.tenant_id = r.tenant_id AND s.id = r.share_id
               JOIN auth_codes c ON c.tenant_id = r.tenant_id AND c.id = r.code_id
               JOIN accounts f ON f.id = r.from_account
               LEFT JOIN accounts d ON d.id = r.decided_by
               "# + $where,
            $($arg),+
        )
    };
}

macro_rules! transfer_of_row {
    ($r:expr) => {{
        let r = $r;
        Transfer {
            id: r.id,
            tenant: TenantId(r.tenant_id),
            share: r.share_id,
            course: r.course,
            code: r.code_id,
            code_hint: r.code_hint,
            from_account: AccountId(r.from_account),
            from_email: r.from_email,
            to_email: r.to_email,
            to_account: r.to_account.map(AccountId),
            note: r.note,
            status: r.status,
            created_at: r.created_at,
            link_expires_at: r.link_expires_at,
            confirmed_at: r.confirmed_at,
            decided_at: r.decided_at,
            decided_by_email: r.decided_by_email,
            decision_reason: r.decision_reason,
        }
    }};
}

/// One request of `tenant`, on the caller's connection (a step that
/// changed it reads it back inside its transaction).
pub(super) async fn load(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    id: Uuid,
) -> Result<Transfer, TransferError> {
    let row = query_transfers!("WHERE r.tenant_id = $1 AND r.id = $2", tenant.0, id)
        .fetch_optional(conn)
        .await
        .context("reading a transfer request")?
        .ok_or(TransferError::NotFound)?;
    Ok(transfer_of_row!(row))
}

/// One request of `tenant`.
pub async fn get(pool: &PgPool, tenant: TenantId, id: Uuid) -> Result<Transfer, TransferError> {
    let mut conn = pool.acquire().await.context("acquiring a connection")?;
    load(&mut conn, tenant, id).await
}

/// A tenant's requests, newest first: those in `status`, or all (at most
/// `limit`).
pub async fn list(
    pool: &PgPool,
    tenant: TenantId,
    status: Option<TransferStatus>,
    limit: i64,
) -> anyhow::Result<Vec<Transfer>> {
    let rows = query_transfers!(
        "WHERE r.tenant_id = $1 AND ($2::text IS NULL OR r.status = $2)
         ORDER BY r.created_at DESC, r.id DESC LIMIT $3",
        tenant.0,
        status.map(TransferStatus::as_str),
        limit,
    )
    .fetch_all(pool)
    .await
    .context("listing transfer requests")?;
    Ok(rows.into_iter().map(|row| transfer_of_row!(row)).collect())
}

/// The learner's latest request for their code of `share`, if any (the
/// learner's page shows where it stands).
pub async fn latest_of(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    from: AccountId,
) -> anyhow::Result<Option<Transfer>> {
    let row = query_transfers!(
        "WHERE r.tenant_id = $1 AND r.share_id = $2 AND r.from_account = $3
         ORDER BY r.created_at DESC, r.id DESC LIMIT 1",
        tenant.0,
        share.0,
        from.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading the learner's transfer request")?;
    Ok(row.map(|row| transfer_of_row!(row)))
}
