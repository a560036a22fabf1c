//! Admin endpoints for imported codes (`engine::imports`): bring in codes
//! another system sold, and read an import's report again.

use axum::{
    Json,
    body::Bytes,
    extract::{Path, State, rejection::BytesRejection},
    response::IntoResponse,
};
use engine::{
    idempotency,
    imports::{self, Alphabet, ImportError, ImportFormat, ImportReport, ImportRequest},
    tenants::Permission,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Caller, member_of_share, parse_id};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency::{create_once, key_of},
        schema::ErrorBody,
    },
    state::ServerState,
};

#[derive(Deserialize, utoipa::ToSchema)]
pub struct ImportBody {
    /// The batch's label (at most 120 characters).
    #[serde(default)]
    label: String,
    /// `foreign` (default): another system's codes, 4 to 64 letters and
    /// digits of `alphabet`; `ours`: AdmitOne codes, check symbol verified.
    #[serde(default)]
    format: Option<String>,
    /// A foreign format's letters and digits (default `A–Z0–9`). Case does
    /// not count; spaces and dashes in codes are ignored.
    #[serde(default)]
    alphabet: Option<String>,
    /// When the batch's unused codes stop working (RFC 3339); none: never.
    #[serde(default)]
    expires_at: Option<String>,
    /// The codes, 1 to 100,000; a rejected one is reported by its position
    /// (1-based) in this list.
    codes: Vec<String>,
}

/// One line left out.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RejectedBody {
    pub line: u32,
    /// `bad_symbol`, `wrong_length`, `typo`, `outside_alphabet`,
    /// `duplicate_in_file` or `already_exists`.
    pub reason: String,
}

/// What an import did.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ImportAnswer {
    /// The new batch holding the imported codes.
    pub batch_id: Uuid,
    pub share_id: Uuid,
    pub label: String,
    pub lines: u64,
    pub imported: u64,
    pub rejected: u64,
    /// Rejected lines by reason.
    pub reasons: std::collections::BTreeMap<String, u64>,
    /// The first 1,000 rejected lines, in order.
    pub first_rejected: Vec<RejectedBody>,
}

impl ImportAnswer {
    fn of(batch_id: Uuid, share_id: Uuid, label: String, report: ImportReport) -> Self {
        Self {
            batch_id,
            share_id,
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
                .map(|r| RejectedBody {
                    line: r.line,
                    reason: r.reason.as_str().to_owned(),
                })
                .collect(),
        }
    }
}

/// The format an import body names.
fn format_of(format: Option<&str>, alphabet: Option<&str>) -> Result<ImportFormat, ImportError> {
    match (format.map(str::trim), alphabet) {
        (Some("ours"), None) => Ok(ImportFormat::Ours),
        (Some("ours"), Some(_)) => Err(ImportError::InvalidAlphabet),
        (None | Some("foreign"), None) => Ok(ImportFormat::Foreign(Alphabet::letters_and_digits())),
        (None | Some("foreign"), Some(raw)) if raw.trim().is_empty() => {
            Ok(ImportFormat::Foreign(Alphabet::letters_and_digits()))
        }
        (None | Some("foreign"), Some(raw)) => Alphabet::parse(raw).map(ImportFormat::Foreign),
        (Some(_), _) => Err(ImportError::InvalidImportFormat),
    }
}

/// Imports codes another system sold (a shop, an LMS) into a new batch of
/// the share; learners redeem them like ours. Only digests are stored.
/// Codes already on the platform, repeated, or not of the format are left
/// out and reported; if no code could be imported, nothing changes (422
/// `nothing_imported`). Audited (`batch.imported`); webhook `batch.issued`
/// with `"source": "imported"`.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/imports", tag = "admin",
    params(
        ("share_id" = Uuid, Path, description = "The share"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key imports nothing new and answers the original 201 (for 15 minutes)"),
    ),
    request_body = ImportBody,
    responses(
        (status = 201, description = "Imported; the report names the lines left out", body = ImportAnswer),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "The Idempotency-Key's first attempt still runs, or its answer is no longer held", body = ErrorBody),
        (status = 413, description = "The body is over 16 MiB", body = ErrorBody),
        (status = 429, description = "Too many imports for this tenant this hour (`rate_limited`, with `Retry-After`)", body = ErrorBody),
        (status = 422, description = "No codes or more than 100,000, a bad format, alphabet, label or expiry date, no code importable (`nothing_imported`), or the Idempotency-Key was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn import_codes(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<axum::response::Response, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    // Parsed only once the caller may import: up to 16 MiB of codes.
    let body = body.map_err(|e| rejection(e, "invalid_json"))?;
    let body: ImportBody = serde_json::from_slice(&body)
        .map_err(|e| rejection(format!("invalid JSON: {e}"), "invalid_json"))?;
    let key = key_of(&headers)?;
    let format = format_of(body.format.as_deref(), body.alphabet.as_deref())?;
    let expires_at = super::batches::parse_expiry(body.expires_at.as_deref())?;
    // What was asked, compared across retries of one key: a keyed
    // fingerprint, since the request holds plain codes.
    let request = state.services.keyring.fingerprint(
        &serde_json::to_vec(&(
            share.id.0,
            &body.label,
            &body.format,
            &body.alphabet,
            &body.expires_at,
            &body.codes,
        ))
        .map_err(anyhow::Error::from)?,
    );
    let services = state.services.clone();
    let (tenant, share_uuid) = (share.tenant(), share.id.0);
    create_once(
        &state,
        key,
        &caller.login(),
        idempotency::Scope {
            tenant,
            actor: admin.id,
        },
        "import_codes",
        &request,
        |answer: &ImportAnswer| answer.batch_id,
        async move {
            let lines = body
                .codes
                .into_iter()
                .enumerate()
                .map(|(i, code)| (u32::try_from(i + 1).unwrap_or(u32::MAX), code))
                .collect();
            let imported = service::issuing::import_codes(
                &services,
                &admin,
                &share,
                ImportRequest {
                    share: share.id,
                    label: &body.label,
                    format,
                    expires_at,
                    lines,
                    progress: None,
                },
            )
            .await?;
            Ok(ImportAnswer::of(
                imported.batch_id,
                share_uuid,
                body.label.trim().to_owned(),
                imported.report,
            ))
        },
    )
    .await
}

/// An import's report, as it was answered (kept with the batch).
#[utoipa::path(get, path = "/api/v1/batches/{batch_id}/import", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "An imported batch")),
    responses(
        (status = 200, description = "The report", body = ImportAnswer),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id, or a batch that was issued, not imported (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn import_report(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let batch = parse_id(&batch_id)?;
    let pool = &state.services.pool;
    let Some((tenant, _)) =
        engine::batches::owner_of_batch(pool, &caller.tenants(&state).await?, batch).await?
    else {
        return Err(caller.refuse(&state).await);
    };
    caller
        .member_of(&state, tenant, Permission::ViewConsole)
        .await?;
    let (share, label, report) = imports::report_of(pool, tenant, batch)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(ImportAnswer::of(batch, share.0, label, report)))
}
