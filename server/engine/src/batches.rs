//! Code batches: a share's access codes, issued many at a time.
//!
//! Issuing draws the codes, stores only their digests ([`crate::codes`])
//! in one transaction, and hands the plain codes back once, in
//! [`IssuedBatch`] ([`crate::handover`] keeps them for the one download).
//! An `Idempotency-Key` makes a retried request find its first batch
//! instead of issuing a second one. A batch that went astray has its
//! unused codes revoked together. Its refusals are [`BatchError`]; every query filters by the tenant passed in.

use anyhow::Context as _;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit, code_actions,
    codes::{Keyring, PlainCode},
    progress::Progress,
    shares::ShareId,
    tenants::TenantId,
};

/// What refuses issuing a batch, or a change to one.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("a batch has 1 to 100,000 codes")]
    InvalidCount,
    #[error("a batch label has at most 120 characters")]
    InvalidLabel,
    /// An expiry date is a moment still to come (none: never expires).
    #[error("an expiry date must be in the future")]
    InvalidExpiry,
    #[error(
        "this batch was already issued as {batch_id} ({count} codes); its codes were shown once, when it was created"
    )]
    BatchAlreadyIssued { batch_id: Uuid, count: i32 },
    #[error("this Idempotency-Key was already used for another request")]
    IdempotencyKeyReused,
    #[error("no such share")]
    ShareNotFound,
    #[error("no such code")]
    CodeNotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<code_actions::PastExpiry> for BatchError {
    fn from(_: code_actions::PastExpiry) -> Self {
        Self::InvalidExpiry
    }
}

/// A freshly issued batch: the plain codes exist only in this value.
#[derive(Debug)]
pub struct IssuedBatch {
    pub batch_id: Uuid,
    pub codes: Vec<(Uuid, PlainCode)>,
}

/// Rows per INSERT statement when issuing codes.
const INSERT_CHUNK: usize = 5_000;

/// What an admin asks for when issuing codes.
#[derive(Debug, Clone)]
pub struct BatchRequest<'a> {
    pub share: ShareId,
    pub count: i64,
    pub label: &'a str,
    /// When the batch's unused codes stop working (`None`: never). Codes
    /// bound before it keep working.
    pub expires_at: Option<OffsetDateTime>,
    /// The caller's `Idempotency-Key`: a retry of the same request issues
    /// nothing new (`BatchAlreadyIssued`).
    pub idempotency_key: Option<&'a str>,
    /// Where to report how many codes are written so far (a page shows it).
    pub progress: Option<&'a Progress>,
    /// Codes that can be mailed later ([`crate::mailings`]): derived from
    /// their ids ([`Keyring::derive`]) instead of drawn, so their text can
    /// be written into a mail after this answer is gone.
    pub mailable: bool,
}

/// Issues `count` new codes for a share in one transaction: multi-row
/// inserts (`UNNEST`) of digests, never the plain codes.
pub async fn issue_codes(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    request: &BatchRequest<'_>,
) -> Result<IssuedBatch, BatchError> {
    let (share, count, label) = (request.share, request.count, request.label);
    let count = usize::try_from(count)
        .ok()
        .filter(|n| (1..=100_000).contains(n))
        .ok_or(BatchError::InvalidCount)?;
    let label = label.trim();
    if label.chars().count() > 120 || label.chars().any(char::is_control) {
        return Err(BatchError::InvalidLabel);
    }
    // The date as UTC for the key's comparison; whether it is still to come
    // is judged only for a new request (below): a retry sent after the date
    // passed is the same request, and gets its batch.
    let expires_at = request
        .expires_at
        .map(|at| {
            at.checked_to_offset(time::UtcOffset::UTC)
                .ok_or(BatchError::InvalidExpiry)
        })
        .transpose()?;
    let mut salts = Vec::new();
    let codes: Vec<(Uuid, PlainCode)> = (0..count)
        .map(|_| {
            let id = Uuid::now_v7();
            if request.mailable {
                let (_, code, salt) = keyring.derive(tenant, id);
                salts.push(salt);
                (id, code)
            } else {
                (id, PlainCode::generate())
            }
        })
        .collect();
    let batch_id = Uuid::now_v7();
    let mut tx = pool.begin().await.context("starting a transaction")?;
    if let Some(key) = request.idempotency_key {
        let response = json!({
            "batch_id": batch_id, "count": count, "share_id": share.0, "label": label,
            "expires_at": code_actions::rfc3339(expires_at), "mailable": request.mailable,
        });
        let claimed = sqlx::query_scalar!(
            "INSERT INTO idempotency_records (tenant_id, key, principal_id, operation, response)
             VALUES ($1, $2, $3, 'issue_codes', $4)
             ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key",
            tenant.0,
            key,
            actor.0,
            response,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("claiming the idempotency key")?;
        if claimed.is_none() {
            drop(tx);
            let earlier = sqlx::query!(
                "SELECT principal_id, operation, response FROM idempotency_records WHERE tenant_id = $1 AND key = $2",
                tenant.0,
                key,
            )
            .fetch_one(pool)
            .await
            .context("reading the earlier request")?;
            // The same request: same admin, share, count and label (a key
            // sent again with other values is a different request).
            let same = earlier.principal_id == actor.0
                && earlier.operation == "issue_codes"
                && earlier.response["share_id"] == json!(share.0)
                && earlier.response["count"] == json!(count)
                && earlier.response["label"] == json!(label)
                && earlier.response.get("expires_at").unwrap_or(&json!(null))
                    == &json!(code_actions::rfc3339(expires_at))
                && earlier.response.get("mailable").unwrap_or(&json!(false))
                    == &json!(request.mailable);
            if !same {
                return Err(BatchError::IdempotencyKeyReused);
            }
            return Err(BatchError::BatchAlreadyIssued {
                batch_id: serde_json::from_value(earlier.response["batch_id"].clone())
                    .context("reading the earlier batch id")?,
                count: serde_json::from_value(earlier.response["count"].clone())
                    .context("reading the earlier batch size")?,
            });
        }
    }
    // A new request (its key, if any, claimed in `tx`): the date must be
    // still to come (an error rolls the claim back).
    let expires_at = code_actions::check_expiry(expires_at, OffsetDateTime::now_utc())?;
    let inserted = sqlx::query!(
        "INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by, expires_at, mailable)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $3)",
        tenant.0,
        batch_id,
        share.0,
        label,
        i32::try_from(count).map_err(|_| BatchError::InvalidCount)?,
        actor.0,
        expires_at,
        request.mailable,
    )
    .execute(&mut *tx)
    .await
    .context("inserting a code batch")?;
    if inserted.rows_affected() == 0 {
        return Err(BatchError::ShareNotFound);
    }
    insert_codes(
        &mut tx,
        keyring,
        (tenant, share, batch_id),
        &codes,
        request.mailable.then_some(salts.as_slice()),
        None,
        request.progress,
    )
    .await?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.issued",
        ("code_batch", batch_id),
        json!({ "share_id": share.0, "count": count, "label": label,
                "expires_at": code_actions::rfc3339(expires_at) }),
    )
    .await?;
    audit::emit(
        &mut tx,
        tenant,
        "batch.issued",
        json!({ "share_id": share.0, "batch_id": batch_id, "count": count }),
    )
    .await?;
    tx.commit().await.context("committing the batch")?;
    if let Some(progress) = request.progress {
        progress.report(count as u64, count as u64).await;
    }
    Ok(IssuedBatch { batch_id, codes })
}

/// Stores `codes` of batch `(tenant, share, batch)`: their digests, in
/// multi-row inserts (`UNNEST`) of [`INSERT_CHUNK`], never the plain
/// text; for derived codes, each one's salt (`salts`, in the same order:
/// [`Keyring::derive`]); each addressed to `addressed_to` if given
/// (case-folded already: the table refuses anything else). Reports to
/// `progress` as it goes.
pub(crate) async fn insert_codes(
    tx: &mut sqlx::PgConnection,
    keyring: &Keyring,
    (tenant, share, batch): (TenantId, ShareId, Uuid),
    codes: &[(Uuid, PlainCode)],
    salts: Option<&[[u8; 16]]>,
    addressed_to: Option<&str>,
    progress: Option<&Progress>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        salts.is_none_or(|salts| salts.len() == codes.len()),
        "a salt for each derived code"
    );
    let total = codes.len() as u64;
    let mut done = 0;
    for (n, chunk) in codes.chunks(INSERT_CHUNK).enumerate() {
        let mut ids = Vec::with_capacity(chunk.len());
        let mut digests = Vec::with_capacity(chunk.len());
        let mut versions = Vec::with_capacity(chunk.len());
        let mut hints = Vec::with_capacity(chunk.len());
        let chunk_salts: Vec<Option<Vec<u8>>> = match salts {
            Some(salts) => salts[n * INSERT_CHUNK..n * INSERT_CHUNK + chunk.len()]
                .iter()
                .map(|salt| Some(salt.to_vec()))
                .collect(),
            None => vec![None; chunk.len()],
        };
        for (id, code) in chunk {
            let (version, digest) = keyring.digest(code);
            ids.push(*id);
            digests.push(digest);
            versions.push(i16::try_from(version).context("key version above 32767")?);
            hints.push(code.hint());
        }
        sqlx::query!(
            "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint, addressed_to, salt)
             SELECT $1, id, $2, $3, digest, version, hint, $8, salt
             FROM UNNEST($4::uuid[], $5::bytea[], $6::smallint[], $7::text[], $9::bytea[])
                  AS c(id, digest, version, hint, salt)",
            tenant.0,
            share.0,
            batch,
            &ids,
            &digests,
            &versions,
            &hints,
            addressed_to,
            &chunk_salts as &[Option<Vec<u8>>],
        )
        .execute(&mut *tx)
        .await
        .context("inserting codes")?;
        done += chunk.len() as u64;
        if let Some(progress) = progress
            && done < total
        {
            progress.report(done, total).await;
        }
    }
    Ok(())
}

/// Frees an issuing request's idempotency key after its batch was revoked
/// unseen (the codes could not be handed over): a retry with the same key
/// then issues a new batch instead of pointing at the revoked one.
pub async fn release_issue_key(pool: &PgPool, tenant: TenantId, key: &str) -> anyhow::Result<()> {
    sqlx::query!(
        "DELETE FROM idempotency_records WHERE tenant_id = $1 AND key = $2 AND operation = 'issue_codes'",
        tenant.0,
        key,
    )
    .execute(pool)
    .await
    .context("releasing an idempotency key")?;
    Ok(())
}

/// A batch with how its codes stand now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSummary {
    pub id: Uuid,
    pub share: ShareId,
    pub label: String,
    /// How many codes were issued (replacements are counted in `unused`,
    /// `bound` and `revoked`, not here).
    pub count: i32,
    pub created_at: time::OffsetDateTime,
    /// When its unused codes stop working (a code's own date overrides it).
    pub expires_at: Option<OffsetDateTime>,
    /// Unused and still usable.
    pub unused: i64,
    pub bound: i64,
    pub revoked: i64,
    /// Unused past their date.
    pub expired: i64,
    /// Issued to be mailed (`crate::mailings`): its codes were never shown.
    pub mailable: bool,
}

/// `batch` of `tenant` with its codes counted by state, if it exists.
pub async fn summary(
    pool: &PgPool,
    tenant: TenantId,
    batch: Uuid,
) -> anyhow::Result<Option<BatchSummary>> {
    let row = sqlx::query!(
        r#"SELECT b.id, b.share_id, b.label, b.count, b.created_at, b.expires_at, b.mailable,
                  count(c.id) FILTER (WHERE c.revoked_at IS NULL AND c.bound_principal IS NULL
                                        AND NOT coalesce(coalesce(c.expires_at, b.expires_at) <= now(), false)) AS "unused!",
                  count(c.id) FILTER (WHERE c.revoked_at IS NULL AND c.bound_principal IS NOT NULL) AS "bound!",
                  count(c.id) FILTER (WHERE c.revoked_at IS NOT NULL) AS "revoked!",
                  count(c.id) FILTER (WHERE c.revoked_at IS NULL AND c.bound_principal IS NULL
                                        AND coalesce(c.expires_at, b.expires_at) <= now()) AS "expired!"
           FROM code_batches b
           LEFT JOIN auth_codes c ON c.tenant_id = b.tenant_id AND c.batch_id = b.id
           WHERE b.tenant_id = $1 AND b.id = $2
           GROUP BY b.id, b.share_id, b.label, b.count, b.created_at, b.expires_at, b.mailable"#,
        tenant.0,
        batch,
    )
    .fetch_optional(pool)
    .await
    .context("reading a batch")?;
    Ok(row.map(|r| BatchSummary {
        id: r.id,
        share: ShareId(r.share_id),
        label: r.label,
        count: r.count,
        created_at: r.created_at,
        expires_at: r.expires_at,
        unused: r.unused,
        bound: r.bound,
        revoked: r.revoked,
        expired: r.expired,
        mailable: r.mailable,
    }))
}

/// Sets when a batch's unused codes stop working (`None`: never); a code
/// with its own date keeps it. Codes already bound keep working whatever
/// the date. Audited.
pub async fn set_batch_expiry(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    batch: Uuid,
    expires_at: Option<OffsetDateTime>,
) -> Result<(), BatchError> {
    let expires_at = code_actions::check_expiry(expires_at, OffsetDateTime::now_utc())?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let before = sqlx::query!(
        "SELECT share_id, expires_at FROM code_batches WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        batch,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the batch")?
    .ok_or(BatchError::CodeNotFound)?;
    // "In the future" by the database's clock too (the one the trigger
    // and the reconciler read).
    let set = sqlx::query!(
        "UPDATE code_batches SET expires_at = $3
         WHERE tenant_id = $1 AND id = $2 AND ($3::timestamptz IS NULL OR $3 > clock_timestamp())",
        tenant.0,
        batch,
        expires_at,
    )
    .execute(&mut *tx)
    .await
    .context("setting a batch's expiry")?;
    if set.rows_affected() == 0 {
        return Err(BatchError::InvalidExpiry);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.expiry_changed",
        ("code_batch", batch),
        json!({ "share_id": before.share_id, "from": code_actions::rfc3339(before.expires_at),
                "to": code_actions::rfc3339(expires_at) }),
    )
    .await?;
    tx.commit().await.context("committing a batch's expiry")?;
    Ok(())
}

/// The tenant and share of a batch, if it exists.
pub async fn owner_of_batch(
    pool: &PgPool,
    among: &[TenantId],
    batch: Uuid,
) -> anyhow::Result<Option<(TenantId, ShareId)>> {
    let among: Vec<Uuid> = among.iter().map(|t| t.0).collect();
    let row = sqlx::query!(
        "SELECT tenant_id, share_id FROM code_batches WHERE tenant_id = ANY($1) AND id = $2",
        &among,
        batch
    )
    .fetch_optional(pool)
    .await
    .context("finding a batch's share")?;
    Ok(row.map(|r| (TenantId(r.tenant_id), ShareId(r.share_id))))
}

/// Takes the row of `code`'s batch (`FOR KEY SHARE`) before a change
/// that frees a code of it or adds one (an unbind, a replacement): a
/// refund of the batch's order, which takes the row `FOR UPDATE`
/// (`crate::refunds::refund`), then runs wholly before or wholly after
/// the change, and no seat it took back comes free again. Taken before
/// the code's own row, in the refund's order (batch, then codes). The
/// weakest lock that conflicts with `FOR UPDATE`: a send of the batch
/// (`FOR NO KEY UPDATE`, `crate::mailings`) and a replacement's own insert
/// (its foreign key's `FOR KEY SHARE`) do not wait for it.
pub(crate) async fn hold_for_change(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    code: Uuid,
) -> anyhow::Result<()> {
    sqlx::query!(
        "SELECT b.id FROM code_batches b
         JOIN auth_codes c ON c.tenant_id = b.tenant_id AND c.batch_id = b.id
         WHERE c.tenant_id = $1 AND c.id = $2
         FOR KEY SHARE OF b",
        tenant.0,
        code,
    )
    .fetch_optional(conn)
    .await
    .context("holding the code's batch")?;
    Ok(())
}

/// Whether any code of `batch` was revoked (a held answer of it must not
/// be handed out again as if fresh).
pub async fn has_revoked_codes(
    pool: &PgPool,
    tenant: TenantId,
    batch: Uuid,
) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM auth_codes
                         WHERE tenant_id = $1 AND batch_id = $2 AND revoked_at IS NOT NULL) AS "revoked!""#,
        tenant.0,
        batch,
    )
    .fetch_one(pool)
    .await
    .context("looking for revoked codes of a batch")
}

/// Revokes every unused code of a batch (a batch handed to the wrong
/// class, or never delivered); bound codes keep their learners. Audited;
/// returns how many were revoked.
pub async fn revoke_unused_of_batch(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    batch: Uuid,
) -> Result<u64, BatchError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let share = sqlx::query_scalar!(
        "SELECT share_id FROM code_batches WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        batch,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("finding a batch")?
    .ok_or(BatchError::CodeNotFound)?;
    let revoked = sqlx::query!(
        r#"UPDATE auth_codes SET revoked_at = now()
           WHERE tenant_id = $1 AND batch_id = $2 AND revoked_at IS NULL AND bound_principal IS NULL"#,
        tenant.0,
        batch,
    )
    .execute(&mut *tx)
    .await
    .context("revoking a batch's unused codes")?
    .rows_affected();
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.unused_revoked",
        ("code_batch", batch),
        json!({ "share_id": share, "revoked": revoked }),
    )
    .await?;
    tx.commit()
        .await
        .context("committing the batch revocation")?;
    Ok(revoked)
}
