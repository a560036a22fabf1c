//! Storing an import: the one transaction that brings the read codes in
//! as a batch of their own, skipping those already stored (under an older
//! key, under their other reading, or by an import racing this one), and
//! keeps the [`ImportReport`] with the batch. [`import_codes`] reads as
//! its steps, in the order they run; [`report_of`] reads the report back.

use std::collections::{BTreeMap, HashSet};

use anyhow::Context as _;
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    ImportError, ImportFormat, ImportReport, ImportRequest, Imported, LISTED_REJECTIONS, MAX_LINES,
    RejectedLine, Rejection,
    read::{self, Read},
};
use crate::{
    accounts::AccountId, audit, code_actions, codes::Keyring, progress::Progress, shares::ShareId,
    tenants::TenantId,
};

/// Rows per INSERT statement.
const INSERT_CHUNK: usize = 5_000;

/// One code as it is inserted: its line, its id, its digest under the
/// current key and that key's version, its hint, and whether it is a
/// foreign code.
struct Row {
    line: u32,
    id: Uuid,
    digest: Vec<u8>,
    version: i16,
    hint: String,
    foreign: bool,
}

/// The import's new batch: where its codes go and how it is recorded.
struct NewBatch<'a> {
    tenant: TenantId,
    share: ShareId,
    id: Uuid,
    label: &'a str,
    /// The foreign format's alphabet (`None`: our format).
    alphabet: Option<String>,
    expires_at: Option<OffsetDateTime>,
}

/// Imports the usable lines of `request` into a new batch of `share`, in
/// one transaction (audited `batch.imported`; webhook `batch.issued` with
/// `"source": "imported"`), and reports the others. Marks the share as
/// taking foreign codes when any was imported.
pub async fn import_codes(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    request: ImportRequest<'_>,
) -> Result<Imported, ImportError> {
    let (label, expires_at) = check_request(&request)?;
    let (accepted, mut rejected) = read::read_lines(&request.format, tenant, &request.lines);
    let (mut rows, older) = rows_of(keyring, &accepted)?;

    let batch = NewBatch {
        tenant,
        share: request.share,
        id: Uuid::now_v7(),
        label,
        alphabet: alphabet_of(&request.format),
        expires_at,
    };
    let mut tx = pool.begin().await.context("starting a transaction")?;
    find_share(&mut tx, tenant, request.share).await?;
    skip_stored_elsewhere(
        &mut tx,
        tenant,
        keyring,
        &accepted,
        &older,
        &mut rows,
        &mut rejected,
    )
    .await?;

    // In digest order: two imports racing over the same codes take their
    // index entries in one order, so they queue instead of deadlocking.
    rows.sort_unstable_by(|a, b| a.digest.cmp(&b.digest));

    insert_batch(&mut tx, actor, &batch).await?;
    let (imported, any_foreign) =
        insert_codes(&mut tx, &batch, &rows, &mut rejected, request.progress).await?;
    let report = report(request.lines.len() as u64, imported, rejected)?;
    record(&mut tx, actor, &batch, &report, any_foreign).await?;
    tx.commit().await.context("committing the import")?;
    if let Some(progress) = request.progress {
        let total = rows.len() as u64;
        progress.report(total, total).await;
    }
    Ok(Imported {
        batch_id: batch.id,
        report,
    })
}

/// Refuses a request before anything is read: its label, its number of
/// lines, its expiry date. Returns the trimmed label and the expiry.
fn check_request<'a>(
    request: &ImportRequest<'a>,
) -> Result<(&'a str, Option<OffsetDateTime>), ImportError> {
    let label = request.label.trim();
    if label.chars().count() > 120 || label.chars().any(char::is_control) {
        return Err(ImportError::InvalidLabel);
    }
    if request.lines.is_empty() {
        return Err(ImportError::NoCodesToImport);
    }
    if request.lines.len() > MAX_LINES {
        return Err(ImportError::TooManyLines { max: MAX_LINES });
    }
    let expires_at = code_actions::check_expiry(request.expires_at, OffsetDateTime::now_utc())?;
    Ok((label, expires_at))
}

/// The rows to insert, one per accepted code, in line order; and every
/// other digest those codes may already be stored under.
fn rows_of(
    keyring: &Keyring,
    accepted: &[(u32, Read)],
) -> anyhow::Result<(Vec<Row>, Vec<Vec<u8>>)> {
    // Digests under the current key (stored), and the others the code may
    // already be stored under: older keys (a code stored before a rotation
    // is the same code), and its other reading (text that is one of ours
    // and also a foreign code is one code: the look-up finds either).
    let mut rows = Vec::with_capacity(accepted.len());
    let mut older: Vec<Vec<u8>> = Vec::new();
    for (line, code) in accepted {
        let (version, digest) = keyring.digest(&code.hashed);
        older.extend(code.known_as(keyring).into_iter().filter(|d| *d != digest));
        rows.push(Row {
            line: *line,
            id: Uuid::now_v7(),
            digest,
            version: i16::try_from(version).context("key version above 32767")?,
            hint: code.hint.clone(),
            foreign: code.foreign,
        });
    }
    Ok((rows, older))
}

/// The alphabet the batch records: a foreign format's, none for ours.
fn alphabet_of(format: &ImportFormat) -> Option<String> {
    match format {
        ImportFormat::Ours => None,
        ImportFormat::Foreign(alphabet) => Some(alphabet.as_str().to_owned()),
    }
}

/// Refuses an import into a share `tenant` does not have.
async fn find_share(
    tx: &mut PgConnection,
    tenant: TenantId,
    share: ShareId,
) -> Result<(), ImportError> {
    let share_exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $2) AS "exists!""#,
        tenant.0,
        share.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("finding the share")?;
    if !share_exists {
        return Err(ImportError::ShareNotFound);
    }
    Ok(())
}

/// Leaves out (as `already_exists`) the rows whose code is stored already
/// under one of its `older` digests (an older key or its other reading) in
/// this tenant.
async fn skip_stored_elsewhere(
    tx: &mut PgConnection,
    tenant: TenantId,
    keyring: &Keyring,
    accepted: &[(u32, Read)],
    older: &[Vec<u8>],
    rows: &mut Vec<Row>,
    rejected: &mut Vec<RejectedLine>,
) -> anyhow::Result<()> {
    let known_older: HashSet<Vec<u8>> = if older.is_empty() {
        Default::default()
    } else {
        sqlx::query_scalar!(
            "SELECT digest FROM auth_codes WHERE tenant_id = $1 AND digest = ANY($2)",
            tenant.0,
            older
        )
        .fetch_all(&mut *tx)
        .await
        .context("looking for codes stored under older keys or readings")?
        .into_iter()
        .collect()
    };
    if !known_older.is_empty() {
        let keep: Vec<bool> = accepted
            .iter()
            .map(|(_, code)| {
                !code
                    .known_as(keyring)
                    .iter()
                    .any(|d| known_older.contains(d))
            })
            .collect();
        let mut keep = keep.into_iter();
        rows.retain(|row| {
            let kept = keep.next().unwrap_or(true);
            if !kept {
                rejected.push(RejectedLine {
                    line: row.line,
                    reason: Rejection::AlreadyExists,
                });
            }
            kept
        });
    }
    Ok(())
}

/// Inserts the batch first (its count is set once the codes are in).
async fn insert_batch(
    tx: &mut PgConnection,
    actor: AccountId,
    batch: &NewBatch<'_>,
) -> anyhow::Result<()> {
    sqlx::query!(
        "INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by, expires_at,
                                   source, alphabet, import_report)
         VALUES ($1, $2, $3, $4, 1, $5, $6, 'imported', $7, '{}'::jsonb)",
        batch.tenant.0,
        batch.id,
        batch.share.0,
        batch.label,
        actor.0,
        batch.expires_at,
        batch.alphabet,
    )
    .execute(&mut *tx)
    .await
    .context("inserting an import's batch")?;
    Ok(())
}

/// Inserts the codes, [`INSERT_CHUNK`] at a time, reporting progress after
/// each chunk; a code already stored is rejected as `already_exists`.
/// Returns how many were imported, and whether any of them is foreign.
async fn insert_codes(
    tx: &mut PgConnection,
    batch: &NewBatch<'_>,
    rows: &[Row],
    rejected: &mut Vec<RejectedLine>,
    progress: Option<&Progress>,
) -> anyhow::Result<(u64, bool)> {
    let total = rows.len() as u64;
    let mut imported: u64 = 0;
    let mut any_foreign = false;
    for chunk in rows.chunks(INSERT_CHUNK) {
        let ids: Vec<Uuid> = chunk.iter().map(|r| r.id).collect();
        let digests: Vec<Vec<u8>> = chunk.iter().map(|r| r.digest.clone()).collect();
        let versions: Vec<i16> = chunk.iter().map(|r| r.version).collect();
        let hints: Vec<String> = chunk.iter().map(|r| r.hint.clone()).collect();
        // A code some share already has (or an import racing this one
        // just took) is skipped here and reported below.
        let inserted: HashSet<Uuid> = sqlx::query_scalar!(
            "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint)
             SELECT $1, id, $2, $3, digest, version, hint
             FROM UNNEST($4::uuid[], $5::bytea[], $6::smallint[], $7::text[]) AS c(id, digest, version, hint)
             -- Any unique key: (tenant_id, digest), or the id.
             ON CONFLICT DO NOTHING
             RETURNING id",
            batch.tenant.0,
            batch.share.0,
            batch.id,
            &ids,
            &digests,
            &versions,
            &hints,
        )
        .fetch_all(&mut *tx)
        .await
        .context("inserting imported codes")?
        .into_iter()
        .collect();
        for row in chunk {
            if inserted.contains(&row.id) {
                imported += 1;
                any_foreign |= row.foreign;
            } else {
                rejected.push(RejectedLine {
                    line: row.line,
                    reason: Rejection::AlreadyExists,
                });
            }
        }
        // Codes written so far (of those not refused before), as issuing
        // reports them; the last report comes after the commit.
        if let Some(progress) = progress {
            progress.report(imported, total).await;
        }
    }
    Ok((imported, any_foreign))
}

/// The report of `lines` read, `imported` brought in and the `rejected`
/// lines (in line order); refuses an import that brought nothing in.
fn report(
    lines: u64,
    imported: u64,
    mut rejected: Vec<RejectedLine>,
) -> Result<ImportReport, ImportError> {
    rejected.sort_unstable_by_key(|r| r.line);
    let mut reasons = BTreeMap::new();
    for r in &rejected {
        *reasons.entry(r.reason).or_insert(0u64) += 1;
    }
    let report = ImportReport {
        lines,
        imported,
        rejected: rejected.len() as u64,
        reasons,
        first_rejected: rejected.iter().take(LISTED_REJECTIONS).copied().collect(),
    };
    if imported == 0 {
        // Nothing to keep: the transaction rolls back (the batch too).
        let first = rejected.first().copied().unwrap_or(RejectedLine {
            line: 1,
            reason: Rejection::WrongLength,
        });
        return Err(ImportError::NothingImported {
            lines: report.lines,
            line: first.line,
            reason: first.reason,
        });
    }
    Ok(report)
}

/// Records the import: the batch's count and report, the share taking
/// foreign codes (if any was imported), the audit entry and the webhook.
async fn record(
    tx: &mut PgConnection,
    actor: AccountId,
    batch: &NewBatch<'_>,
    report: &ImportReport,
    any_foreign: bool,
) -> anyhow::Result<()> {
    let (tenant, share, batch_id, imported) =
        (batch.tenant, batch.share, batch.id, report.imported);
    sqlx::query!(
        "UPDATE code_batches SET count = $3, import_report = $4 WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        batch_id,
        i32::try_from(imported).context("more than 2^31 codes")?,
        serde_json::to_value(report).context("encoding the import report")?,
    )
    .execute(&mut *tx)
    .await
    .context("recording the import's report")?;
    if any_foreign {
        sqlx::query!(
            "UPDATE shares SET foreign_codes = true WHERE tenant_id = $1 AND id = $2 AND NOT foreign_codes",
            tenant.0,
            share.0,
        )
        .execute(&mut *tx)
        .await
        .context("letting the share take foreign codes")?;
    }
    audit::admin_action(
        tx,
        tenant,
        actor,
        "batch.imported",
        ("code_batch", batch_id),
        json!({ "share_id": share.0, "label": batch.label, "lines": report.lines,
                "imported": imported, "rejected": report.rejected,
                "alphabet": batch.alphabet, "expires_at": code_actions::rfc3339(batch.expires_at) }),
    )
    .await?;
    audit::emit(
        tx,
        tenant,
        "batch.issued",
        json!({ "share_id": share.0, "batch_id": batch_id, "count": imported,
                "source": "imported" }),
    )
    .await?;
    Ok(())
}

/// The report of an imported batch of `tenant`, if it is one.
pub async fn report_of(
    pool: &PgPool,
    tenant: TenantId,
    batch: Uuid,
) -> anyhow::Result<Option<(ShareId, String, ImportReport)>> {
    let row = sqlx::query!(
        "SELECT share_id, label, import_report FROM code_batches
         WHERE tenant_id = $1 AND id = $2 AND source = 'imported'",
        tenant.0,
        batch,
    )
    .fetch_optional(pool)
    .await
    .context("reading an import's report")?;
    row.map(|r| {
        let report = serde_json::from_value(r.import_report.unwrap_or_default())
            .context("decoding an import's report")?;
        Ok((ShareId(r.share_id), r.label, report))
    })
    .transpose()
}
