//! An import's report (`…/imports/{batch}`, the page in
//! `pages/console/imports.rs`). The import itself is a multipart form post
//! (`server/src/routes/console/imports.rs`), like the resource upload: a
//! file is not a server function's argument.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;
use crate::error::AppError;

/// What an import did, as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReportView {
    pub share_title: String,
    pub label: String,
    pub lines: u64,
    pub imported: u64,
    pub rejected: u64,
    /// (reason, lines), reasons by their stable names.
    pub reasons: Vec<(String, u64)>,
    /// (line, reason): the first 1,000.
    pub first_rejected: Vec<(u32, String)>,
}

/// The report of an imported batch of this share.
#[server(prefix = "/api/admin", endpoint = "codes/import-report", input = server_fn::codec::GetUrl)]
pub async fn import_report(
    tenant_id: Uuid,
    share_id: Uuid,
    batch_id: Uuid,
) -> Result<ImportReportView, AppError> {
    let (state, _, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ViewConsole,
    )
    .await?;
    let (of_share, label, report) =
        engine::imports::report_of(&state.pool, share.tenant(), batch_id)
            .await
            .map_err(support::internal)?
            .ok_or(AppError::NotFound)?;
    if of_share != share.id {
        return Err(AppError::NotFound);
    }
    Ok(ImportReportView {
        share_title: share.title,
        label,
        lines: report.lines,
        imported: report.imported,
        rejected: report.rejected,
        reasons: report
            .reasons
            .into_iter()
            .map(|(reason, n)| (reason.as_str().to_owned(), n))
            .collect(),
        first_rejected: report
            .first_rejected
            .into_iter()
            .map(|r| (r.line, r.reason.as_str().to_owned()))
            .collect(),
    })
}
