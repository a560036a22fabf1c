//! The code table: a share's codes as admins read them, page by page,
//! with their counts, and the code a person pasted, found.
//!
//! Its own module, apart from [`crate::code_actions`] (what an admin does
//! to one code): these reads change nothing, and they must stay fast at
//! 100,000 codes a share (keyset pages; the filter written once, in the
//! `code_table` SQL function). Not part of [`crate::codes`]
//! either: that one is a code's format and keyring, with no I/O; this one
//! is rows of `auth_codes`. Every query filters by the tenant passed in,
//! but [`share_of_code`], which finds the tenant and share a code belongs
//! to so that callers can authorise before anything else.

use anyhow::Context as _;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{codes::Keyring, shares::ShareId, tenants::TenantId};

/// A code as admins see it (never the plain code).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct CodeView {
    pub id: Uuid,
    pub batch_id: Uuid,
    pub hint: String,
    pub state: CodeState,
    pub bound_email: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub first_used_at: Option<OffsetDateTime>,
    pub access_count: i32,
    /// When the code stops being usable if nobody binds it first: its own
    /// date, else its batch's; `None`: never.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// The address the code is addressed to: it binds only to the account
    /// whose verified address this is ([orders](crate::orders)).
    pub addressed_to: Option<String>,
    /// The learner a refund released from the code (it took the seat back
    /// and unbound it), by email; `None` on every other code.
    pub former_email: Option<String>,
}

/// Which codes of a share to list (the filter is written once, in the
/// `code_table` SQL function, for the page, its totals and the CSV).
#[derive(Debug, Clone, Default)]
pub struct CodeFilter {
    pub state: Option<CodeState>,
    pub batch: Option<Uuid>,
    /// Part of a hint (`AB…YZ`, `AB`, `YZ`), of the bound learner's email,
    /// or of the address a code is addressed to.
    pub search: Option<String>,
    /// One code, by id (what [`find_code`] turns a pasted full code into).
    pub code: Option<Uuid>,
}

impl CodeFilter {
    /// `search` as an ILIKE pattern: trimmed, LIKE metacharacters literal,
    /// `None` when empty.
    fn pattern(&self) -> Option<String> {
        self.search
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                let escaped = s
                    .replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_");
                format!("%{escaped}%")
            })
    }
}

pub use model::CodeState;

/// Where a page of codes starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cursor {
    /// The first page.
    #[default]
    First,
    /// The page after this id (the last id of the page before).
    After(Uuid),
    /// The page before this id (the first id of the page after).
    Before(Uuid),
}

/// A page of codes, and where the next one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeListPage {
    pub codes: Vec<CodeView>,
    /// The last id of this page when another page follows (pass it as
    /// `after`); `None` when this page ends with the last code. Paging
    /// backwards ([`Cursor::Before`]) sets it to the last id of the page
    /// whenever the page is not empty (the cursor's code follows).
    pub next_after: Option<Uuid>,
    /// The first id of this page when a page comes before it, as far as
    /// this read can tell: exact going backwards; going forwards it is set
    /// whenever the cursor was an id (the cursor's code precedes).
    /// [`count_codes`] says exactly.
    pub previous_before: Option<Uuid>,
}

/// A page of a share's codes in id order (keyset pagination, either
/// direction), so it stays fast at 100,000 codes. One row more than the
/// page is read, so a page that ends with the last code says so (no empty
/// page after it).
pub async fn list_codes(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    filter: &CodeFilter,
    cursor: Cursor,
    limit: i64,
) -> anyhow::Result<CodeListPage> {
    let limit = limit.clamp(1, 1_000);
    let mut codes = read_from(pool, tenant, share, filter, cursor, limit + 1).await?;
    let page = usize::try_from(limit).unwrap_or(usize::MAX);
    let more = codes.len() > page;
    codes.truncate(page);
    let (next_after, previous_before) = match cursor {
        Cursor::Before(_) => {
            codes.reverse();
            (
                codes.last().map(|c| c.id),
                more.then(|| codes.first().map(|c| c.id)).flatten(),
            )
        }
        Cursor::First => (more.then(|| codes.last().map(|c| c.id)).flatten(), None),
        Cursor::After(_) => (
            more.then(|| codes.last().map(|c| c.id)).flatten(),
            codes.first().map(|c| c.id),
        ),
    };
    Ok(CodeListPage {
        codes,
        next_after,
        previous_before,
    })
}

/// Up to `rows` codes matching `filter` from the cursor on, in its
/// direction: ascending ids after it, descending before it.
async fn read_from(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    filter: &CodeFilter,
    cursor: Cursor,
    rows: i64,
) -> anyhow::Result<Vec<CodeView>> {
    let (state, pattern) = (filter.state.map(CodeState::as_str), filter.pattern());
    Ok(match cursor {
        Cursor::First | Cursor::After(_) => {
            let after = match cursor {
                Cursor::After(id) => Some(id),
                _ => None,
            };
            sqlx::query_as!(
                CodeView,
                r#"SELECT id AS "id!", batch_id AS "batch_id!", hint AS "hint!",
                          state AS "state!: CodeState", bound_email,
                          first_used_at, access_count AS "access_count!", expires_at,
                          addressed_to, former_email
                   FROM code_table($1, $2, $3, $4, $5, $6)
                   WHERE $7::uuid IS NULL OR id > $7
                   ORDER BY id
                   LIMIT $8"#,
                tenant.0,
                share.0,
                state,
                filter.batch,
                pattern,
                filter.code,
                after,
                rows,
            )
            .fetch_all(pool)
            .await
            .context("listing codes")?
        }
        Cursor::Before(before) => sqlx::query_as!(
            CodeView,
            r#"SELECT id AS "id!", batch_id AS "batch_id!", hint AS "hint!",
                      state AS "state!: CodeState", bound_email,
                      first_used_at, access_count AS "access_count!", expires_at,
                          addressed_to, former_email
               FROM code_table($1, $2, $3, $4, $5, $6)
               WHERE id < $7
               ORDER BY id DESC
               LIMIT $8"#,
            tenant.0,
            share.0,
            state,
            filter.batch,
            pattern,
            filter.code,
            before,
            rows,
        )
        .fetch_all(pool)
        .await
        .context("listing codes backwards")?,
    })
}

/// How many codes match a filter, and how many of them come before and
/// after a page (by id): the console's "120 codes · 51–100".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeCounts {
    pub total: i64,
    /// Matching codes before the page's first id.
    pub before: i64,
    /// Matching codes after the page's last id.
    pub after: i64,
}

/// Counts the codes matching `filter`, around the page that runs from
/// `first` to `last` (both `None` for an empty page: everything is
/// "before").
pub async fn count_codes(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    filter: &CodeFilter,
    page: Option<(Uuid, Uuid)>,
) -> anyhow::Result<CodeCounts> {
    let (first, last) = page.unzip();
    let row = sqlx::query!(
        r#"SELECT count(*) AS "total!",
                  count(*) FILTER (WHERE $7::uuid IS NULL OR id < $7) AS "before!",
                  count(*) FILTER (WHERE id > $8) AS "after!"
           FROM code_table($1, $2, $3, $4, $5, $6)"#,
        tenant.0,
        share.0,
        filter.state.map(CodeState::as_str),
        filter.batch,
        filter.pattern(),
        filter.code,
        first,
        last,
    )
    .fetch_one(pool)
    .await
    .context("counting codes")?;
    Ok(CodeCounts {
        total: row.total,
        before: row.before,
        after: row.after,
    })
}

/// Reads text an admin pasted to find a code: our format, and where any
/// share of `tenant` took imported codes, any format (`codeformat::read`).
/// A tenant with none keeps naming a mistyped code of ours.
pub async fn read_pasted(
    pool: &PgPool,
    tenant: TenantId,
    raw: &str,
) -> anyhow::Result<Result<crate::codes::TypedCode, crate::codes::CodeFormatError>> {
    let foreign = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND foreign_codes) AS "foreign!""#,
        tenant.0,
    )
    .fetch_one(pool)
    .await
    .context("asking whether a tenant has imported codes")?;
    Ok(crate::codes::TypedCode::read(raw, foreign))
}

/// The code a person pasted, among `tenant`'s codes: its share and id. The
/// plain code is only hashed (with every key version still in the
/// keyring), never stored or logged.
pub async fn find_code(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    code: &crate::codes::TypedCode,
) -> anyhow::Result<Option<(ShareId, Uuid)>> {
    let row = sqlx::query!(
        "SELECT share_id, id FROM auth_codes WHERE tenant_id = $1 AND digest = ANY($2)",
        tenant.0,
        &keyring.lookup(code, tenant),
    )
    .fetch_optional(pool)
    .await
    .context("finding a code by its digest")?;
    Ok(row.map(|r| (ShareId(r.share_id), r.id)))
}

/// The tenant and share of a code, looked up only among the tenants
/// `among` (those the caller names or belongs to): a code id never leads
/// into another tenant's rows (docs/design/tenancy.md).
pub async fn share_of_code(
    pool: &PgPool,
    among: &[TenantId],
    code: Uuid,
) -> anyhow::Result<Option<(TenantId, ShareId)>> {
    let among: Vec<Uuid> = among.iter().map(|t| t.0).collect();
    let row = sqlx::query!(
        "SELECT tenant_id, share_id FROM auth_codes WHERE tenant_id = ANY($1) AND id = $2",
        &among,
        code
    )
    .fetch_optional(pool)
    .await
    .context("reading a code's share")?;
    Ok(row.map(|r| (TenantId(r.tenant_id), ShareId(r.share_id))))
}

/// Whether `code` (of `tenant`) is bound to a learner now.
pub async fn is_bound(pool: &PgPool, tenant: TenantId, code: Uuid) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
             SELECT 1 FROM auth_codes
             WHERE tenant_id = $1 AND id = $2 AND bound_principal IS NOT NULL
           ) AS "bound!""#,
        tenant.0,
        code,
    )
    .fetch_one(pool)
    .await
    .context("reading whether a code is bound")
}

/// Whether `code` (of `tenant`) is unused now: neither bound nor revoked.
pub async fn is_unused(pool: &PgPool, tenant: TenantId, code: Uuid) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
             SELECT 1 FROM auth_codes
             WHERE tenant_id = $1 AND id = $2
               AND bound_principal IS NULL AND revoked_at IS NULL
           ) AS "unused!""#,
        tenant.0,
        code,
    )
    .fetch_one(pool)
    .await
    .context("reading whether a code is unused")
}
