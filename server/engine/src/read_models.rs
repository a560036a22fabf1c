//! What the admin console reads: a tenant's figures, daily activity, its
//! shares with their code counts, batches, and the audit log.
//!
//! Read-only on purpose: every write lives with its concept (`shares`,
//! `resources`, `batches`, `code_actions`, `settlement`), so the console
//! cannot grow a second path that changes a code. Every query is scoped by
//! `tenant_id` first, so one tenant's admin can only ever read that
//! tenant's rows.
//!
//! Stale-tolerant on purpose too: every read goes through
//! [`crate::db::Reads`], on a standby when one is configured, and still
//! sees every write committed before it began. Nothing read that way may
//! guard a write or hand anything out: the two handover checks at the end
//! take the primary's pool.

use anyhow::Context as _;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

use crate::{
    db::Reads,
    shares::{ShareId, ShareStatus},
    tenants::TenantId,
};

/// Accesses counted in a share so far (its access records), with or
/// without a quota.
pub async fn accesses_counted(
    reads: &Reads,
    tenant: TenantId,
    share: ShareId,
) -> anyhow::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM access_records WHERE tenant_id = $1 AND share_id = $2"#,
        tenant.0,
        share.0,
    )
    .fetch_one(&mut *reads.connection().await?)
    .await
    .context("counting a share's accesses")
}

/// A tenant's headline figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    pub shares: i64,
    pub codes_issued: i64,
    pub codes_bound: i64,
    pub codes_revoked: i64,
    pub accesses_7d: i64,
}

pub async fn totals(reads: &Reads, tenant: TenantId) -> anyhow::Result<Totals> {
    let row = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM shares WHERE tenant_id = $1) AS "shares!",
             (SELECT count(*) FROM auth_codes WHERE tenant_id = $1) AS "issued!",
             (SELECT count(*) FROM auth_codes WHERE tenant_id = $1 AND bound_principal IS NOT NULL) AS "bound!",
             (SELECT count(*) FROM auth_codes WHERE tenant_id = $1 AND revoked_at IS NOT NULL) AS "revoked!",
             (SELECT count(*) FROM access_records WHERE tenant_id = $1
                AND granted_at > now() - interval '7 days') AS "accesses!""#,
        tenant.0,
    )
    .fetch_one(&mut *reads.connection().await?)
    .await
    .context("reading a tenant's totals")?;
    Ok(Totals {
        shares: row.shares,
        codes_issued: row.issued,
        codes_bound: row.bound,
        codes_revoked: row.revoked,
        accesses_7d: row.accesses,
    })
}

/// Bindings and counted accesses of one day (in the tenant's zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayActivity {
    pub day: Date,
    pub bindings: i64,
    pub accesses: i64,
}

/// The last `days` days of activity, oldest first, one row per day (zeros
/// included, so a chart has no gaps); days are the tenant's local days.
pub async fn activity(
    reads: &Reads,
    tenant: TenantId,
    zone: &crate::zone::Zone,
    days: i32,
) -> anyhow::Result<Vec<DayActivity>> {
    let days = days.clamp(1, 366);
    let rows = sqlx::query!(
        r#"WITH zone AS (SELECT $3::text AS tz),
           span AS (
             SELECT generate_series((now() AT TIME ZONE zone.tz)::date - ($2::int - 1),
                                    (now() AT TIME ZONE zone.tz)::date, interval '1 day')::date AS day
             FROM zone
           ),
           counted AS (
             SELECT (granted_at AT TIME ZONE zone.tz)::date AS day,
                    count(*) FILTER (WHERE bound_now) AS bindings, count(*) AS accesses
             FROM access_records, zone
             WHERE tenant_id = $1
               AND granted_at >= ((now() AT TIME ZONE zone.tz)::date - ($2::int - 1))::timestamp AT TIME ZONE zone.tz
             GROUP BY 1
           )
           SELECT span.day AS "day!", coalesce(counted.bindings, 0) AS "bindings!",
                  coalesce(counted.accesses, 0) AS "accesses!"
           FROM span LEFT JOIN counted ON counted.day = span.day
           ORDER BY span.day"#,
        tenant.0,
        days,
        zone.name(),
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("reading a tenant's daily activity")?;
    Ok(rows
        .into_iter()
        .map(|r| DayActivity {
            day: r.day,
            bindings: r.bindings,
            accesses: r.accesses,
        })
        .collect())
}

/// The largest page a caller may ask for; the engine reads one row more
/// than that when asked, so "is there another page" holds at the largest.
pub const PAGE_MAX: i64 = 500;

/// A share in the console's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRow {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub status: ShareStatus,
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
}

/// A tenant's shares, newest first, `limit` at a time: `after` is the last
/// share of the previous page (keyset on creation time and id; a share of
/// another tenant as `after` gives an empty page).
pub async fn shares(
    reads: &Reads,
    tenant: TenantId,
    after: Option<Uuid>,
    limit: i64,
) -> anyhow::Result<Vec<ShareRow>> {
    sqlx::query_as!(
        ShareRow,
        r#"SELECT s.id, s.slug, s.title, s.status AS "status: ShareStatus",
                  count(c.id) AS "issued!",
                  count(c.bound_principal) AS "bound!",
                  count(c.revoked_at) AS "revoked!"
           FROM shares s LEFT JOIN auth_codes c ON c.tenant_id = s.tenant_id AND c.share_id = s.id
           WHERE s.tenant_id = $1
             AND ($2::uuid IS NULL OR (s.created_at, s.id) <
                  (SELECT p.created_at, p.id FROM shares p WHERE p.tenant_id = $1 AND p.id = $2))
           GROUP BY s.tenant_id, s.id
           ORDER BY s.created_at DESC, s.id DESC
           LIMIT $3"#,
        tenant.0,
        after,
        limit.clamp(1, PAGE_MAX + 1),
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("listing a tenant's shares")
}

/// A code batch of a share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRow {
    pub id: Uuid,
    pub label: String,
    pub count: i32,
    pub created_at: OffsetDateTime,
    /// When its unused codes stop working (`None`: never).
    pub expires_at: Option<OffsetDateTime>,
    /// Issued to be mailed (`crate::mailings`).
    pub mailable: bool,
}

impl BatchRow {
    /// Whether its unused codes no longer work.
    pub fn expired(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at <= OffsetDateTime::now_utc())
    }
}

pub async fn batches(
    reads: &Reads,
    tenant: TenantId,
    share: ShareId,
) -> anyhow::Result<Vec<BatchRow>> {
    sqlx::query_as!(
        BatchRow,
        r#"SELECT id, label, count, created_at, expires_at, mailable FROM code_batches
           WHERE tenant_id = $1 AND share_id = $2 ORDER BY created_at DESC LIMIT 1000"#,
        tenant.0,
        share.0,
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("listing a share's batches")
}

/// One audit log entry as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    pub id: Uuid,
    pub created_at: OffsetDateTime,
    pub actor_email: Option<String>,
    pub action: String,
    pub target_type: String,
    pub target_id: Option<Uuid>,
    pub reason: Option<String>,
    pub details: String,
}

/// Which audit entries to show.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Actions starting with this (`code.` or `code.unbound`).
    pub action: Option<String>,
    /// Entries about this object (a share, a code, a batch).
    pub target: Option<Uuid>,
    /// Keyset: entries strictly older than this one.
    pub before: Option<(OffsetDateTime, Uuid)>,
}

/// Newest first, `limit` at a time (keyset pagination on time and id).
pub async fn audit(
    reads: &Reads,
    tenant: TenantId,
    filter: &AuditFilter,
    limit: i64,
) -> anyhow::Result<Vec<AuditRow>> {
    let (before_at, before_id) = filter.before.unzip();
    sqlx::query_as!(
        AuditRow,
        r#"SELECT l.id, l.created_at, a.email AS "actor_email?", l.action, l.target_type, l.target_id,
                  l.reason, l.details::text AS "details!"
           FROM audit_log l LEFT JOIN accounts a ON a.id = l.actor_id
           WHERE l.tenant_id = $1
             AND ($2::text IS NULL OR l.action LIKE $2 || '%' ESCAPE '\')
             AND ($3::uuid IS NULL OR l.target_id = $3 OR l.details->>'share_id' = $3::text)
             AND ($4::timestamptz IS NULL OR (l.created_at, l.id) < ($4, $5))
           ORDER BY l.created_at DESC, l.id DESC
           LIMIT $6"#,
        tenant.0,
        // A prefix, literally: `code_` does not match `codes…`.
        filter.action.as_deref().map(|a| {
            a.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        }),
        filter.target,
        before_at,
        before_id,
        limit.clamp(1, PAGE_MAX + 1),
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("reading the audit log")
}

/// A bound code other accounts keep trying: probably passed around.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakRow {
    pub code_id: Uuid,
    pub share_id: Uuid,
    pub share_title: String,
    pub hint: String,
    pub attempts: i32,
    pub last_attempt: OffsetDateTime,
}

/// The most recently tried bound codes of a tenant.
pub async fn leaks(reads: &Reads, tenant: TenantId) -> anyhow::Result<Vec<LeakRow>> {
    sqlx::query_as!(
        LeakRow,
        r#"SELECT c.id AS code_id, c.share_id, s.title AS share_title, c.hint,
                  c.foreign_attempts AS attempts,
                  c.last_foreign_attempt_at AS "last_attempt!"
           FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           WHERE c.tenant_id = $1 AND c.foreign_attempts > 0 AND c.last_foreign_attempt_at IS NOT NULL
             AND c.bound_principal IS NOT NULL AND c.revoked_at IS NULL
           ORDER BY c.last_foreign_attempt_at DESC
           LIMIT 20"#,
        tenant.0,
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("reading the leak signal")
}

/// A learner bound in a share, with their use of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnerRow {
    pub code_id: Uuid,
    pub principal: Uuid,
    pub email: String,
    pub hint: String,
    pub bound_at: OffsetDateTime,
    pub accesses: i64,
    pub last_access: Option<OffsetDateTime>,
    /// The tenant suspended this learner.
    pub suspended: bool,
    /// When their access ends (`None`: for good).
    pub access_ends: Option<OffsetDateTime>,
}

impl LearnerRow {
    /// Whether their access period is over.
    pub fn access_ended(&self) -> bool {
        self.access_ends
            .is_some_and(|at| at <= OffsetDateTime::now_utc())
    }
}

/// The learners bound in a share, in code id order (keyset on `after`).
pub async fn learners(
    reads: &Reads,
    tenant: TenantId,
    share: ShareId,
    after: Option<Uuid>,
    limit: i64,
) -> anyhow::Result<Vec<LearnerRow>> {
    sqlx::query_as!(
        LearnerRow,
        r#"SELECT c.id AS code_id, a.id AS principal, a.email, c.hint,
                  c.first_used_at AS "bound_at!",
                  -- The learner's own records in the share, whichever code
                  -- they went through (a replaced code keeps its history).
                  (SELECT count(*) FROM access_records r
                    WHERE r.tenant_id = c.tenant_id AND r.share_id = c.share_id
                      AND r.principal_id = a.id) AS "accesses!",
                  (SELECT max(r.granted_at) FROM access_records r
                    WHERE r.tenant_id = c.tenant_id AND r.share_id = c.share_id
                      AND r.principal_id = a.id) AS last_access,
                  EXISTS (SELECT 1 FROM suspended_learners s
                          WHERE s.tenant_id = c.tenant_id AND s.account_id = a.id) AS "suspended!",
                  binding_access_ends(c.first_used_at, c.access_until, sh.access_days) AS access_ends
           FROM auth_codes c JOIN accounts a ON a.id = c.bound_principal
           JOIN shares sh ON sh.tenant_id = c.tenant_id AND sh.id = c.share_id
           WHERE c.tenant_id = $1 AND c.share_id = $2 AND c.bound_principal IS NOT NULL
             AND ($3::uuid IS NULL OR c.id > $3)
           ORDER BY c.id
           LIMIT $4"#,
        tenant.0,
        share.0,
        after,
        limit.clamp(1, PAGE_MAX + 1),
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("listing a share's learners")
}

/// One counted access, for the records page and the CSV export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    pub id: Uuid,
    pub granted_at: OffsetDateTime,
    pub email: String,
    pub hint: String,
    pub resource: String,
    pub bound_now: bool,
}

/// A page of a share's access records, newest first, optionally of one
/// learner; `before` is the last row of the previous page (keyset), so the
/// CSV export streams page by page and never holds them all.
pub async fn records(
    reads: &Reads,
    tenant: TenantId,
    share: ShareId,
    learner: Option<Uuid>,
    before: Option<(OffsetDateTime, Uuid)>,
    limit: i64,
) -> anyhow::Result<Vec<RecordRow>> {
    let (before_at, before_id) = before.unzip();
    sqlx::query_as!(
        RecordRow,
        r#"SELECT r.id, r.granted_at, a.email, c.hint,
                  coalesce(res.title, '(deleted)') AS "resource!", r.bound_now
           FROM access_records r
           JOIN accounts a ON a.id = r.principal_id
           JOIN auth_codes c ON c.tenant_id = r.tenant_id AND c.id = r.code_id
           LEFT JOIN resources res ON res.tenant_id = r.tenant_id AND res.id = r.resource_id
           WHERE r.tenant_id = $1 AND r.share_id = $2 AND ($3::uuid IS NULL OR r.principal_id = $3)
             AND ($4::timestamptz IS NULL OR (r.granted_at, r.id) < ($4, $5))
           ORDER BY r.granted_at DESC, r.id DESC
           LIMIT $6"#,
        tenant.0,
        share.0,
        learner,
        before_at,
        before_id,
        limit.clamp(1, 5_000),
    )
    .fetch_all(&mut *reads.connection().await?)
    .await
    .context("reading access records")
}

/// Whether `id` is a batch of `share`, or a (replacement) code of it: what
/// a one-time handover page may be opened for. On the primary: it guards
/// handing out plain codes.
pub async fn handover_of_share(
    pool: &sqlx::PgPool,
    tenant: TenantId,
    share: ShareId,
    id: Uuid,
) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM code_batches WHERE tenant_id = $1 AND share_id = $2 AND id = $3)
               OR EXISTS (SELECT 1 FROM auth_codes WHERE tenant_id = $1 AND share_id = $2 AND id = $3)
           AS "found!""#,
        tenant.0,
        share.0,
        id,
    )
    .fetch_one(pool)
    .await
    .context("checking a handover's share")
}

/// The label of a handover of `share`: a batch's, or a single replacement
/// code's (its batch's label). `None`: no such handover in this share. On
/// the primary: it guards the one download of plain codes.
pub async fn handover_label(
    pool: &sqlx::PgPool,
    tenant: TenantId,
    share: ShareId,
    id: Uuid,
) -> anyhow::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT label FROM code_batches
         WHERE tenant_id = $1 AND share_id = $2
           AND id = coalesce((SELECT batch_id FROM auth_codes WHERE tenant_id = $1 AND id = $3), $3)",
        tenant.0,
        share.0,
        id,
    )
    .fetch_optional(pool)
    .await
    .context("reading a handover's label")
}
