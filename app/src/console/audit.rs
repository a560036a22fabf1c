//! The tenant's audit log (`/admin/t/{tenant}/audit`, the page in
//! `pages/console/audit.rs`): filtered keyset pages, newest first.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// One page of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditView>,
    /// Cursor of the next (older) page.
    pub next: Option<String>,
}

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditView {
    pub when: String,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub reason: Option<String>,
    pub details: String,
}

/// The tenant's audit log, newest first, optionally filtered by action.
#[server(prefix = "/api/admin", endpoint = "audit", input = server_fn::codec::GetUrl)]
pub async fn audit_log(
    tenant_id: Uuid,
    action: Option<String>,
    before: Option<String>,
) -> Result<AuditPage, AppError> {
    use support::internal;
    const PAGE: i64 = 100;
    let (state, tenant, _) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ViewConsole).await?;
    let zone = support::zone(&state, tenant).await?;
    let before = match before.as_deref().filter(|b| !b.is_empty()) {
        None => None,
        Some(cursor) => Some(parse_cursor(cursor).ok_or_else(|| {
            AppError::invalid("before", crate::i18n::t(Msg::ThisPageLinkIsDamagedStart))
        })?),
    };
    let filter = engine::read_models::AuditFilter {
        action: action.filter(|a| !a.trim().is_empty()),
        target: None,
        before,
    };
    // One row more than the page: a page ending with the oldest entry
    // offers no (empty) next page.
    let mut rows = engine::read_models::audit(&state.reads, tenant, &filter, PAGE + 1)
        .await
        .map_err(internal)?;
    let more = rows.len() as i64 > PAGE;
    rows.truncate(usize::try_from(PAGE).unwrap_or(usize::MAX));
    let next = more
        .then(|| {
            rows.last()
                .map(|r| format!("{}_{}", r.created_at.unix_timestamp_nanos(), r.id))
        })
        .flatten();
    Ok(AuditPage {
        entries: rows
            .into_iter()
            .map(|r| AuditView {
                when: zone.when(r.created_at),
                actor: r
                    .actor_email
                    .unwrap_or_else(|| crate::i18n::t(Msg::System).into()),
                target: match r.target_id {
                    Some(id) => format!(
                        "{} {}",
                        crate::i18n::target_type(&r.target_type),
                        &id.to_string()[..8]
                    ),
                    None => crate::i18n::target_type(&r.target_type),
                },
                action: r.action,
                reason: r.reason,
                details: r.details,
            })
            .collect(),
        next,
    })
}

/// Parses an audit page cursor (`<unix nanos>_<uuid>`).
#[cfg(feature = "ssr")]
fn parse_cursor(cursor: &str) -> Option<(time::OffsetDateTime, Uuid)> {
    let (nanos, id) = cursor.split_once('_')?;
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(nanos.parse().ok()?).ok()?;
    Some((at, id.parse().ok()?))
}
