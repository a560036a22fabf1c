//! The audit log and the outbox, written inside the transaction of the
//! action they describe, so neither can say something that did not commit
//! nor miss something that did.

use anyhow::Context as _;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::{accounts::AccountId, tenants::TenantId};

/// One audited admin action.
#[derive(Debug)]
pub struct AuditEntry<'a> {
    pub tenant: TenantId,
    pub actor: Option<AccountId>,
    pub action: &'a str,
    pub target_type: &'a str,
    pub target_id: Option<Uuid>,
    pub reason: Option<&'a str>,
    pub details: Value,
}

pub async fn record(conn: &mut PgConnection, entry: AuditEntry<'_>) -> anyhow::Result<()> {
    sqlx::query!(
        "INSERT INTO audit_log (tenant_id, id, actor_id, action, target_type, target_id, reason, details)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        entry.tenant.0,
        Uuid::now_v7(),
        entry.actor.map(|a| a.0),
        entry.action,
        entry.target_type,
        entry.target_id,
        entry.reason,
        entry.details,
    )
    .execute(conn)
    .await
    .with_context(|| format!("writing the audit entry {}", entry.action))?;
    Ok(())
}

/// An admin's reason for the audit log, if it is one: 1 to 500
/// characters, trimmed, with no control character but line breaks and tabs
/// (PostgreSQL refuses a NUL in text).
pub(crate) fn reason_text(reason: &str) -> Option<&str> {
    let reason = reason.trim();
    let words = !reason
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'));
    ((1..=500).contains(&reason.chars().count()) && words).then_some(reason)
}

/// Records an admin's action (no reason): the common case of [`record`].
pub async fn admin_action(
    conn: &mut PgConnection,
    tenant: TenantId,
    actor: AccountId,
    action: &str,
    target: (&str, Uuid),
    details: Value,
) -> anyhow::Result<()> {
    record(
        conn,
        AuditEntry {
            tenant,
            actor: Some(actor),
            action,
            target_type: target.0,
            target_id: Some(target.1),
            reason: None,
            details,
        },
    )
    .await
}

/// Queues an event for delivery after commit (the relay reads `outbox`).
pub async fn emit(
    conn: &mut PgConnection,
    tenant: TenantId,
    event_type: &str,
    payload: Value,
) -> anyhow::Result<()> {
    sqlx::query!(
        "INSERT INTO outbox (tenant_id, id, event_type, payload) VALUES ($1, $2, $3, $4)",
        tenant.0,
        Uuid::now_v7(),
        event_type,
        payload,
    )
    .execute(conn)
    .await
    .with_context(|| format!("queueing the event {event_type}"))?;
    Ok(())
}
