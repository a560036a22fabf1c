//! The admin console's server functions, all under `/api/admin/`.
//!
//! Every function here takes the tenant it acts on and starts with
//! `guard::require_admin(tenant)`: learners and admins of other tenants get
//! 403 before anything is read or written. The integration test
//! `authorisation::every_admin_server_function_refuses_outsiders` enumerates
//! the registered `/api/admin/` endpoints, so a new function cannot be
//! added without being covered.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// A tenant as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantView {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub admins: i64,
}

#[cfg(feature = "ssr")]
impl From<engine::tenants::TenantSummary> for TenantView {
    fn from(t: engine::tenants::TenantSummary) -> Self {
        Self {
            id: t.id.0,
            slug: t.slug,
            name: t.name,
            admins: t.admins,
        }
    }
}

/// The tenants the signed-in account administers (empty for learners).
#[server(endpoint = "console/tenants", input = server_fn::codec::GetUrl)]
pub async fn my_tenants() -> Result<Vec<TenantView>, AppError> {
    let run = async {
        let state = crate::state::AppState::from_context()?;
        let principal = crate::auth::guard::require_learner().await?;
        let tenants = engine::tenants::administered_by(&state.pool, principal.id)
            .await
            .map_err(|e| AppError::internal(&e))?;
        Ok(tenants.into_iter().map(TenantView::from).collect())
    };
    run.await.map_err(AppError::respond)
}

/// One tenant's overview (admins of that tenant only).
#[server(prefix = "/api/admin", endpoint = "tenant/overview")]
pub async fn tenant_overview(tenant_id: Uuid) -> Result<TenantView, AppError> {
    let run = async {
        let (state, tenant, _) = support::admin_of_tenant(tenant_id).await?;
        engine::tenants::summary(&state.pool, tenant)
            .await
            .map_err(|e| AppError::internal(&e))?
            .map(TenantView::from)
            .ok_or(AppError::NotFound)
    };
    run.await.map_err(AppError::respond)
}

/// A tenant's dashboard: figures, daily activity and its shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardView {
    pub tenant: TenantView,
    pub shares_count: i64,
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
    pub accesses_7d: i64,
    pub days: Vec<DayView>,
    pub shares: Vec<ShareSummary>,
    /// Bound codes other accounts keep trying.
    pub leaks: Vec<LeakView>,
}

/// A probably leaked code on the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakView {
    pub share_id: Uuid,
    pub share_title: String,
    pub hint: String,
    pub attempts: i32,
    pub last_attempt: String,
}

/// A share's learners, and one learner's access records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnersPage {
    pub share_title: String,
    pub learners: Vec<LearnerView>,
    pub next_after: Option<Uuid>,
    /// The selected learner's records (newest first, at most 200).
    pub records: Option<(String, Vec<RecordView>)>,
}

/// A learner bound in a share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnerView {
    pub principal: Uuid,
    pub email: String,
    pub hint: String,
    pub bound_at: String,
    pub accesses: i64,
    pub last_access: Option<String>,
}

/// One counted access.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub when: String,
    pub resource: String,
    pub bound_now: bool,
}

/// One day of the activity chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayView {
    /// `29 Nov`.
    pub label: String,
    pub bindings: i64,
    pub accesses: i64,
}

/// A share in the dashboard's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareSummary {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub status: String,
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
}

/// A share as its editor shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareEditor {
    pub tenant_id: Uuid,
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub status: String,
    /// `datetime-local` values (UTC), empty when unset.
    pub valid_from: String,
    pub valid_until: String,
    pub per_learner_limit: String,
    pub quota: String,
    pub quota_used: i32,
    pub resources: Vec<crate::learner::ResourceItem>,
    pub batches: Vec<BatchView>,
    /// A fresh ticket for the issue form (see [`issue_codes`]).
    pub issue_ticket: Uuid,
}

/// A code batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchView {
    pub id: Uuid,
    pub label: String,
    pub count: i32,
    pub created: String,
}

/// A batch's plain codes, the one time they are shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedView {
    pub share_title: String,
    /// Absolute link learners open.
    pub link: String,
    /// `None` once shown (or for anyone but the issuing admin). At most
    /// [`SHOWN_ON_PAGE`]; the CSV has them all.
    pub codes: Option<Vec<IssuedCard>>,
    /// How many codes the batch has.
    pub total: usize,
    pub csv_url: String,
}

/// One new code, with its printable QR code (small batches only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedCard {
    pub code: String,
    /// An SVG QR code of the link with the code in its fragment (never
    /// sent to the server, so never in a log).
    pub qr_svg: Option<String>,
}

/// Most codes the one-time page lists (the CSV has every one).
pub const SHOWN_ON_PAGE: usize = 1_000;
/// Most codes that get printable cards with a QR code.
pub const CARDS_UP_TO: usize = 200;

/// One page of a share's code table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeTable {
    pub share_title: String,
    pub codes: Vec<CodeRow>,
    /// The keyset cursor of the next page, if there is one.
    pub next_after: Option<Uuid>,
    pub batches: Vec<BatchView>,
}

/// A code as admins see it: never the plain code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeRow {
    pub id: Uuid,
    pub hint: String,
    pub state: String,
    pub bound_email: Option<String>,
    pub first_used: Option<String>,
    pub access_count: i32,
    pub batch: String,
}

/// One page of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditView>,
    /// Cursor of the next (older) page.
    pub next: Option<String>,
}

#[cfg(feature = "ssr")]
impl From<engine::console::BatchRow> for BatchView {
    fn from(b: engine::console::BatchRow) -> Self {
        Self {
            id: b.id,
            label: b.label,
            count: b.count,
            created: support::when(b.created_at),
        }
    }
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

/// Most codes one batch may hold.
pub const MAX_BATCH: i64 = 100_000;

#[cfg(feature = "ssr")]
mod support {
    //! Shared by the console's server functions (ssr only).
    use engine::shares::{self, Share, ShareError, ShareId};
    use time::OffsetDateTime;
    use uuid::Uuid;

    use crate::{auth::guard, error::AppError, state::AppState};

    pub fn internal(error: anyhow::Error) -> AppError {
        AppError::internal(&error)
    }

    /// A share domain error as the console shows it.
    pub fn share_error(error: ShareError) -> AppError {
        AppError::outcome(error)
    }

    /// The state, the tenant and its signed-in admin (401/403 otherwise).
    pub async fn admin_of_tenant(
        tenant: Uuid,
    ) -> Result<
        (
            AppState,
            engine::tenants::TenantId,
            engine::accounts::Principal,
        ),
        AppError,
    > {
        let state = AppState::from_context()?;
        let tenant = engine::tenants::TenantId(tenant);
        let admin = guard::require_admin(tenant).await?;
        Ok((state, tenant, admin))
    }

    /// The signed-in admin of `tenant` and its share `share` (404 for a
    /// share of another tenant: ids are not secrets, but they stay apart).
    pub async fn admin_share(
        tenant: Uuid,
        share: Uuid,
    ) -> Result<(AppState, engine::accounts::Principal, Share), AppError> {
        let state = AppState::from_context()?;
        let admin = guard::require_admin(engine::tenants::TenantId(tenant)).await?;
        let share = shares::get(&state.pool, ShareId(share))
            .await
            .map_err(internal)?
            .filter(|s| s.tenant_id == tenant)
            .ok_or(AppError::NotFound)?;
        Ok((state, admin, share))
    }

    /// A QR code of `text` as an SVG document (`None` if it does not fit).
    pub fn qr_svg(text: &str) -> Option<String> {
        let code = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::M).ok()?;
        Some(
            code.render::<qrcode::render::svg::Color<'_>>()
                .min_dimensions(120, 120)
                .quiet_zone(true)
                .build(),
        )
    }

    /// `2026-11-29 14:05 UTC`.
    pub fn when(at: OffsetDateTime) -> String {
        let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
        at.to_offset(time::UtcOffset::UTC)
            .format(&format)
            .unwrap_or_default()
    }

    /// A `datetime-local` value (UTC).
    pub fn local_input(at: Option<OffsetDateTime>) -> String {
        let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
        at.map(|t| {
            t.to_offset(time::UtcOffset::UTC)
                .format(&format)
                .unwrap_or_default()
        })
        .unwrap_or_default()
    }

    /// Parses a `datetime-local` value (taken as UTC); empty is unset.
    pub fn parse_local(field: &str, raw: &str) -> Result<Option<OffsetDateTime>, AppError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(None);
        }
        let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
        time::PrimitiveDateTime::parse(raw, &format)
            .map(|t| Some(t.assume_utc()))
            .map_err(|_| {
                AppError::invalid(
                    field,
                    crate::i18n::t(
                        "a date and time like 2026-12-31T18:00",
                        "请输入日期和时间，例如 2026-12-31T18:00",
                    ),
                )
            })
    }

    /// Parses an optional limit field (1 to 1,000,000,000); empty is unset.
    pub fn parse_number(field: &str, raw: &str) -> Result<Option<i64>, AppError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(None);
        }
        raw.parse::<i64>()
            .ok()
            .filter(|n| (1..=1_000_000_000).contains(n))
            .map(Some)
            .ok_or_else(|| {
                AppError::invalid(
                    field,
                    crate::i18n::t(
                        "a whole number from 1 to 1,000,000,000, or empty for no limit",
                        "请输入 1 到 1,000,000,000 之间的整数，留空表示不限",
                    ),
                )
            })
    }
}

/// A tenant's dashboard.
#[server(prefix = "/api/admin", endpoint = "dashboard", input = server_fn::codec::GetUrl)]
pub async fn dashboard(tenant_id: Uuid) -> Result<DashboardView, AppError> {
    use support::internal;
    let run = async {
        let (state, tenant, _) = support::admin_of_tenant(tenant_id).await?;
        let summary = engine::tenants::summary(&state.pool, tenant)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let totals = engine::console::totals(&state.pool, tenant)
            .await
            .map_err(internal)?;
        let days = engine::console::activity(&state.pool, tenant, 14)
            .await
            .map_err(internal)?;
        let shares = engine::console::shares(&state.pool, tenant)
            .await
            .map_err(internal)?;
        let leaks = engine::console::leaks(&state.pool, tenant)
            .await
            .map_err(internal)?;
        let label = match crate::i18n::lang() {
            crate::i18n::Lang::En => {
                time::macros::format_description!("[day padding:none] [month repr:short]")
            }
            crate::i18n::Lang::Zh => {
                time::macros::format_description!("[month padding:none]月[day padding:none]日")
            }
        };
        Ok(DashboardView {
            tenant: summary.into(),
            shares_count: totals.shares,
            issued: totals.codes_issued,
            bound: totals.codes_bound,
            revoked: totals.codes_revoked,
            accesses_7d: totals.accesses_7d,
            days: days
                .into_iter()
                .map(|d| DayView {
                    label: d.day.format(&label).unwrap_or_default(),
                    bindings: d.bindings,
                    accesses: d.accesses,
                })
                .collect(),
            shares: shares
                .into_iter()
                .map(|s| ShareSummary {
                    id: s.id,
                    slug: s.slug,
                    title: s.title,
                    status: s.status,
                    issued: s.issued,
                    bound: s.bound,
                    revoked: s.revoked,
                })
                .collect(),
            leaks: leaks
                .into_iter()
                .map(|l| LeakView {
                    share_id: l.share_id,
                    share_title: l.share_title,
                    hint: l.hint,
                    attempts: l.attempts,
                    last_attempt: support::when(l.last_attempt),
                })
                .collect(),
        })
    };
    run.await.map_err(AppError::respond)
}

/// A share's bound learners (keyset pages) and, with `learner`, that
/// learner's access records.
#[server(prefix = "/api/admin", endpoint = "learners", input = server_fn::codec::GetUrl)]
pub async fn share_learners(
    tenant_id: Uuid,
    share_id: Uuid,
    learner: Option<Uuid>,
    after: Option<Uuid>,
) -> Result<LearnersPage, AppError> {
    use support::{internal, when};
    const PAGE: i64 = 100;
    let run = async {
        let (state, _, share) = support::admin_share(tenant_id, share_id).await?;
        let id = engine::shares::ShareId(share.id);
        let rows = engine::console::learners(&state.pool, share.tenant(), id, after, PAGE)
            .await
            .map_err(internal)?;
        let next_after = (rows.len() as i64 == PAGE)
            .then(|| rows.last().map(|r| r.code_id))
            .flatten();
        let records = match learner {
            None => None,
            Some(principal) => {
                let list = engine::console::records(
                    &state.pool,
                    share.tenant(),
                    id,
                    Some(principal),
                    None,
                    200,
                )
                .await
                .map_err(internal)?;
                let email = list
                    .first()
                    .map(|r| r.email.clone())
                    .unwrap_or_else(|| crate::i18n::t("this learner", "这位学员").into());
                Some((
                    email,
                    list.into_iter()
                        .map(|r| RecordView {
                            when: when(r.granted_at),
                            resource: r.resource,
                            bound_now: r.bound_now,
                        })
                        .collect(),
                ))
            }
        };
        Ok(LearnersPage {
            share_title: share.title,
            learners: rows
                .into_iter()
                .map(|r| LearnerView {
                    principal: r.principal,
                    email: r.email,
                    hint: r.hint,
                    bound_at: when(r.bound_at),
                    accesses: r.accesses,
                    last_access: r.last_access.map(when),
                })
                .collect(),
            next_after,
            records,
        })
    };
    run.await.map_err(AppError::respond)
}

/// Creates a share (as a draft unless `status` says otherwise) and opens
/// its editor.
#[server(prefix = "/api/admin", endpoint = "share/create")]
pub async fn create_share(
    tenant_id: Uuid,
    title: String,
    slug: Option<String>,
    description: Option<String>,
) -> Result<(), AppError> {
    use engine::shares::{NewShare, ShareInput};
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        let new = NewShare::parse(ShareInput {
            title,
            slug,
            description,
            status: None,
            per_learner_limit: None,
            quota: None,
            valid_from: None,
            valid_until: None,
        })
        .map_err(support::share_error)?;
        let share = engine::shares::create_share(&state.pool, tenant, admin.id, new)
            .await
            .map_err(support::share_error)?;
        leptos_axum::redirect(&format!("/admin/t/{tenant_id}/s/{}", share.id));
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// A share's editor: settings, resources, batches.
#[server(prefix = "/api/admin", endpoint = "share", input = server_fn::codec::GetUrl)]
pub async fn share_settings(tenant_id: Uuid, share_id: Uuid) -> Result<ShareEditor, AppError> {
    use support::{internal, local_input};
    let run = async {
        let (state, _, share) = support::admin_share(tenant_id, share_id).await?;
        let resources = engine::resources::resources(
            &state.pool,
            share.tenant(),
            engine::shares::ShareId(share.id),
        )
        .await
        .map_err(internal)?;
        let batches = engine::console::batches(
            &state.pool,
            share.tenant(),
            engine::shares::ShareId(share.id),
        )
        .await
        .map_err(internal)?;
        Ok(ShareEditor {
            tenant_id,
            id: share.id,
            slug: share.slug,
            title: share.title,
            description: share.description,
            status: share.status,
            valid_from: local_input(share.valid_from),
            valid_until: local_input(share.valid_until),
            per_learner_limit: share
                .per_learner_limit
                .map(|n| n.to_string())
                .unwrap_or_default(),
            quota: share.quota.map(|n| n.to_string()).unwrap_or_default(),
            quota_used: share.quota_used,
            resources: resources.into_iter().map(crate::learner::item).collect(),
            batches: batches.into_iter().map(BatchView::from).collect(),
            issue_ticket: Uuid::new_v4(),
        })
    };
    run.await.map_err(AppError::respond)
}

pub use settings_form::{UpdateShare, update_share};

/// The settings form's server function: one argument per form field, so
/// the form posts without JavaScript.
mod settings_form {
    #![expect(clippy::too_many_arguments, reason = "one argument per form field")]
    use super::*;

    /// Saves a share's settings (audited).
    #[server(prefix = "/api/admin", endpoint = "share/update")]
    pub async fn update_share(
        tenant_id: Uuid,
        share_id: Uuid,
        title: String,
        slug: String,
        description: String,
        status: String,
        valid_from: String,
        valid_until: String,
        per_learner_limit: String,
        quota: String,
    ) -> Result<(), AppError> {
        use engine::shares::{NewShare, ShareInput};
        use support::{parse_local, parse_number, share_error};
        let run = async {
            let (state, admin, share) = support::admin_share(tenant_id, share_id).await?;
            let new = NewShare::parse(ShareInput {
                title,
                slug: Some(slug),
                description: Some(description),
                status: Some(status),
                per_learner_limit: parse_number("per_learner_limit", &per_learner_limit)?,
                quota: parse_number("quota", &quota)?,
                valid_from: parse_local("valid_from", &valid_from)?,
                valid_until: parse_local("valid_until", &valid_until)?,
            })
            .map_err(share_error)?;
            engine::shares::update_share(
                &state.pool,
                share.tenant(),
                admin.id,
                engine::shares::ShareId(share.id),
                new,
            )
            .await
            .map_err(share_error)?;
            // Hydrated pages say "Saved." in place; a plain form gets a flash.
            if crate::auth::guard::from_plain_form() {
                crate::auth::guard::set_flash(&crate::auth::Flash {
                    kind: crate::auth::FlashKind::Success,
                    message: crate::i18n::t("Saved.", "已保存。").into(),
                })
                .await?;
                leptos_axum::redirect(&format!("/admin/t/{tenant_id}/s/{share_id}"));
            }
            Ok(())
        };
        run.await.map_err(AppError::respond)
    }
}

/// Renames a resource.
#[server(prefix = "/api/admin", endpoint = "resources/rename")]
pub async fn rename_resource(
    tenant_id: Uuid,
    share_id: Uuid,
    resource_id: Uuid,
    title: String,
) -> Result<(), AppError> {
    let run = async {
        let (state, admin, share) = support::admin_share(tenant_id, share_id).await?;
        engine::resources::rename_resource(
            &state.pool,
            share.tenant(),
            admin.id,
            engine::shares::ShareId(share.id),
            resource_id,
            &title,
        )
        .await
        .map_err(support::share_error)
    };
    run.await.map_err(AppError::respond)
}

/// Moves a resource up (`up`) or down (`down`) in the list.
#[server(prefix = "/api/admin", endpoint = "resources/move")]
pub async fn move_resource(
    tenant_id: Uuid,
    share_id: Uuid,
    resource_id: Uuid,
    direction: String,
) -> Result<(), AppError> {
    let run = async {
        let step = match direction.as_str() {
            "up" => -1,
            "down" => 1,
            _ => {
                return Err(AppError::invalid(
                    "direction",
                    crate::i18n::t("up or down", "只能是上移或下移"),
                ));
            }
        };
        let (state, admin, share) = support::admin_share(tenant_id, share_id).await?;
        engine::resources::move_resource(
            &state.pool,
            share.tenant(),
            admin.id,
            engine::shares::ShareId(share.id),
            resource_id,
            step,
        )
        .await
        .map_err(support::share_error)
    };
    run.await.map_err(AppError::respond)
}

/// Removes a resource; once learners opened it, only with `force=on`.
#[server(prefix = "/api/admin", endpoint = "resources/delete")]
pub async fn delete_resource(
    tenant_id: Uuid,
    share_id: Uuid,
    resource_id: Uuid,
    force: Option<String>,
) -> Result<(), AppError> {
    let run = async {
        let (state, admin, share) = support::admin_share(tenant_id, share_id).await?;
        let key = engine::resources::delete_resource(
            &state.pool,
            share.tenant(),
            admin.id,
            engine::shares::ShareId(share.id),
            resource_id,
            force.is_some_and(|f| f == "on" || f == "true"),
        )
        .await
        .map_err(support::share_error)?;
        // The row is gone for everyone; stray bytes are only disk space.
        if let Err(error) = state.storage.delete(&key).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "removing a resource's bytes failed"
            );
        }
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Issues `count` codes and opens the one-time result page. `ticket`
/// (chosen by the page) names the request: the page polls
/// [`issue_progress`] with it, and a second submission of the same form
/// (a double click, a retry) opens the first batch instead of issuing
/// another.
#[server(prefix = "/api/admin", endpoint = "codes/issue")]
pub async fn issue_codes(
    tenant_id: Uuid,
    share_id: Uuid,
    count: String,
    label: String,
    ticket: Option<Uuid>,
) -> Result<(), AppError> {
    use engine::shares::ShareError;
    use support::share_error;
    let run = async {
        let (state, admin, share) = support::admin_share(tenant_id, share_id).await?;
        let count = count
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_BATCH).contains(n))
            .ok_or_else(|| {
                AppError::invalid(
                    "count",
                    crate::i18n::t(
                        "a number of codes from 1 to 100,000",
                        "兑换码数量为 1 到 100,000",
                    ),
                )
            })?;
        let idempotency_key = ticket.map(|t| format!("console-issue:{t}"));
        let progress = ticket.map(|t| engine::progress::Progress::new(&state.redis, admin.id, t));
        let issued = engine::batches::issue_codes(
            &state.pool,
            &state.keyring,
            share.tenant(),
            admin.id,
            &engine::batches::BatchRequest {
                share: engine::shares::ShareId(share.id),
                count,
                label: &label,
                idempotency_key: idempotency_key.as_deref(),
                progress: progress.as_ref(),
            },
        )
        .await;
        let batch = match issued {
            Err(ShareError::BatchAlreadyIssued { batch_id, .. }) => {
                leptos_axum::redirect(&format!(
                    "/admin/t/{tenant_id}/s/{share_id}/batches/{batch_id}"
                ));
                return Ok(());
            }
            other => other.map_err(share_error)?,
        };
        let codes: Vec<String> = batch.codes.iter().map(|(_, c)| c.display()).collect();
        if let Err(error) =
            engine::handover::park(&state.redis, admin.id, batch.batch_id, &codes).await
        {
            // Nobody will ever see these codes: they must not stay usable.
            tracing::error!(error = format!("{error:#}"), "parking issued codes failed");
            engine::batches::revoke_unused_of_batch(
                &state.pool,
                share.tenant(),
                admin.id,
                batch.batch_id,
            )
            .await
            .map_err(share_error)?;
            // The "try again" must issue anew, not open the revoked batch.
            if let Some(key) = &idempotency_key {
                engine::batches::release_issue_key(&state.pool, share.tenant(), key)
                    .await
                    .map_err(support::internal)?;
            }
            return Err(AppError::Unavailable {
                retry_after_secs: 5,
            });
        }
        drop(codes);
        leptos_axum::redirect(&format!(
            "/admin/t/{tenant_id}/s/{share_id}/batches/{}",
            batch.batch_id
        ));
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// How far issuing under `ticket` has got: `(done, total)` codes, `None`
/// before the first report.
#[server(prefix = "/api/admin", endpoint = "codes/progress", input = server_fn::codec::GetUrl)]
pub async fn issue_progress(tenant_id: Uuid, ticket: Uuid) -> Result<Option<(u64, u64)>, AppError> {
    let run = async {
        let (state, _, admin) = support::admin_of_tenant(tenant_id).await?;
        engine::progress::read(&state.redis, admin.id, ticket)
            .await
            .map_err(support::internal)
    };
    run.await.map_err(AppError::respond)
}

/// The batch's plain codes, the one time they are shown.
#[server(prefix = "/api/admin", endpoint = "codes/issued", input = server_fn::codec::GetUrl)]
pub async fn issued_codes(
    tenant_id: Uuid,
    share_id: Uuid,
    batch_id: Uuid,
) -> Result<IssuedView, AppError> {
    let run = async {
        let (state, admin, share) = support::admin_share(tenant_id, share_id).await?;
        // Only this share's batch (or replacement code), taken by its admin.
        if !engine::console::handover_of_share(
            &state.pool,
            share.tenant(),
            engine::shares::ShareId(share.id),
            batch_id,
        )
        .await
        .map_err(support::internal)?
        {
            return Err(AppError::NotFound);
        }
        let codes = engine::handover::take(
            &state.redis,
            admin.id,
            batch_id,
            engine::handover::Copy::Page,
        )
        .await
        .map_err(support::internal)?;
        let link = format!("{}/s/{}", state.public_origin, share.slug);
        let total = codes.as_ref().map_or(0, Vec::len);
        let cards = codes.map(|codes| {
            codes
                .into_iter()
                .take(SHOWN_ON_PAGE)
                .map(|code| IssuedCard {
                    qr_svg: (total <= CARDS_UP_TO)
                        .then(|| support::qr_svg(&format!("{link}#code={code}")))
                        .flatten(),
                    code,
                })
                .collect()
        });
        Ok(IssuedView {
            share_title: share.title,
            link,
            codes: cards,
            total,
            csv_url: format!("/admin/t/{tenant_id}/s/{share_id}/batches/{batch_id}/codes.csv"),
        })
    };
    run.await.map_err(AppError::respond)
}

/// One page of a share's codes, filtered.
#[server(prefix = "/api/admin", endpoint = "codes", input = server_fn::codec::GetUrl)]
pub async fn list_code_page(
    tenant_id: Uuid,
    share_id: Uuid,
    state: Option<String>,
    batch: Option<Uuid>,
    q: Option<String>,
    after: Option<Uuid>,
) -> Result<CodeTable, AppError> {
    use engine::{
        code_admin::{CodeFilter, CodeState},
        shares::ShareId,
    };
    use support::{internal, share_error, when};
    const PAGE: i64 = 50;
    let run = async {
        let (app, _, share) = support::admin_share(tenant_id, share_id).await?;
        let filter = CodeFilter {
            state: state
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(CodeState::parse)
                .transpose()
                .map_err(share_error)?,
            batch,
            search: q,
        };
        let codes = engine::code_admin::list_codes(
            &app.pool,
            share.tenant(),
            ShareId(share.id),
            &filter,
            after,
            PAGE,
        )
        .await
        .map_err(internal)?;
        let batches = engine::console::batches(&app.pool, share.tenant(), ShareId(share.id))
            .await
            .map_err(internal)?;
        let label_of = |id: Uuid| {
            batches
                .iter()
                .find(|b| b.id == id)
                .map(|b| b.label.clone())
                .unwrap_or_default()
        };
        let next_after = (codes.len() as i64 == PAGE)
            .then(|| codes.last().map(|c| c.id))
            .flatten();
        Ok(CodeTable {
            share_title: share.title,
            codes: codes
                .into_iter()
                .map(|c| CodeRow {
                    batch: label_of(c.batch_id),
                    id: c.id,
                    hint: c.hint,
                    state: c.state,
                    bound_email: c.bound_email,
                    first_used: c.first_used_at.map(when),
                    access_count: c.access_count,
                })
                .collect(),
            next_after,
            batches: batches.into_iter().map(BatchView::from).collect(),
        })
    };
    run.await.map_err(AppError::respond)
}

/// The code `code_id` of `tenant_id`, for its admin.
#[cfg(feature = "ssr")]
async fn admin_code(
    tenant_id: Uuid,
    code_id: Uuid,
) -> Result<(crate::state::AppState, engine::accounts::Principal), AppError> {
    let state = crate::state::AppState::from_context()?;
    let tenant = engine::tenants::TenantId(tenant_id);
    let admin = crate::auth::guard::require_admin(tenant).await?;
    match engine::code_admin::share_of_code(&state.pool, code_id)
        .await
        .map_err(support::internal)?
    {
        Some((owner, _)) if owner == tenant => Ok((state, admin)),
        _ => Err(AppError::NotFound),
    }
}

/// Revokes one code (a bound learner loses access).
#[server(prefix = "/api/admin", endpoint = "codes/revoke")]
pub async fn revoke_code(tenant_id: Uuid, code_id: Uuid) -> Result<(), AppError> {
    let run = async {
        let (state, admin) = admin_code(tenant_id, code_id).await?;
        engine::code_admin::revoke_code(
            &state.pool,
            engine::tenants::TenantId(tenant_id),
            admin.id,
            code_id,
        )
        .await
        .map_err(support::share_error)
    };
    run.await.map_err(AppError::respond)
}

/// Replaces a lost unused code (revoke + issue one, atomically) and opens
/// the one-time page of the new code.
#[server(prefix = "/api/admin", endpoint = "codes/replace")]
pub async fn replace_code(tenant_id: Uuid, code_id: Uuid) -> Result<(), AppError> {
    let run = async {
        let (state, admin) = admin_code(tenant_id, code_id).await?;
        let tenant = engine::tenants::TenantId(tenant_id);
        let (share, (new_id, plain)) = {
            let share = engine::code_admin::share_of_code(&state.pool, code_id)
                .await
                .map_err(support::internal)?
                .ok_or(AppError::NotFound)?
                .1;
            let replaced = engine::code_admin::replace_code(
                &state.pool,
                &state.keyring,
                tenant,
                admin.id,
                code_id,
            )
            .await
            .map_err(support::share_error)?;
            (share, replaced)
        };
        if let Err(error) =
            engine::handover::park(&state.redis, admin.id, new_id, &[plain.display()]).await
        {
            tracing::error!(
                error = format!("{error:#}"),
                "parking a replacement code failed"
            );
            engine::code_admin::revoke_code(&state.pool, tenant, admin.id, new_id)
                .await
                .map_err(support::share_error)?;
            return Err(AppError::Unavailable {
                retry_after_secs: 5,
            });
        }
        leptos_axum::redirect(&format!(
            "/admin/t/{tenant_id}/s/{}/batches/{new_id}",
            share.0
        ));
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Unbinds a bound code with a reason; `after` is `usable` (the code can
/// be used again) or `revoked`; `confirm` must be `yes`.
#[server(prefix = "/api/admin", endpoint = "codes/unbind")]
pub async fn unbind_code(
    tenant_id: Uuid,
    code_id: Uuid,
    reason: String,
    after: String,
    confirm: Option<String>,
) -> Result<(), AppError> {
    let run = async {
        let (state, admin) = admin_code(tenant_id, code_id).await?;
        // Unbinding takes a course away from a person: the form asks for an
        // explicit confirmation, not only a reason.
        if confirm.as_deref() != Some("yes") {
            return Err(AppError::invalid(
                "confirm",
                crate::i18n::t(
                    "tick the box to confirm that the learner loses access",
                    "请勾选确认：学员将失去访问权限",
                ),
            ));
        }
        let revoke = match after.as_str() {
            "usable" => false,
            "revoked" => true,
            _ => {
                return Err(AppError::invalid(
                    "after",
                    crate::i18n::t(
                        "choose whether the code stays usable or is revoked",
                        "请选择兑换码解绑后可再次使用还是作废",
                    ),
                ));
            }
        };
        engine::code_admin::unbind_code(
            &state.pool,
            engine::tenants::TenantId(tenant_id),
            admin.id,
            code_id,
            &reason,
            revoke,
        )
        .await
        .map_err(support::share_error)?;
        Ok(())
    };
    run.await.map_err(AppError::respond)
}

/// Revokes every unused code of a batch.
#[server(prefix = "/api/admin", endpoint = "batches/revoke-unused")]
pub async fn revoke_unused(tenant_id: Uuid, batch_id: Uuid) -> Result<u64, AppError> {
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        engine::batches::revoke_unused_of_batch(&state.pool, tenant, admin.id, batch_id)
            .await
            .map_err(support::share_error)
    };
    run.await.map_err(AppError::respond)
}

/// The tenant's audit log, newest first, optionally filtered by action.
#[server(prefix = "/api/admin", endpoint = "audit", input = server_fn::codec::GetUrl)]
pub async fn audit_log(
    tenant_id: Uuid,
    action: Option<String>,
    before: Option<String>,
) -> Result<AuditPage, AppError> {
    use support::{internal, when};
    const PAGE: i64 = 100;
    let run = async {
        let (state, tenant, _) = support::admin_of_tenant(tenant_id).await?;
        let before = match before.as_deref().filter(|b| !b.is_empty()) {
            None => None,
            Some(cursor) => Some(parse_cursor(cursor).ok_or_else(|| {
                AppError::invalid(
                    "before",
                    crate::i18n::t(
                        "this page link is damaged; start from the first page",
                        "这个分页链接已损坏，请从第一页开始",
                    ),
                )
            })?),
        };
        let filter = engine::console::AuditFilter {
            action: action.filter(|a| !a.trim().is_empty()),
            target: None,
            before,
        };
        let rows = engine::console::audit(&state.pool, tenant, &filter, PAGE)
            .await
            .map_err(internal)?;
        let next = (rows.len() as i64 == PAGE)
            .then(|| {
                rows.last()
                    .map(|r| format!("{}_{}", r.created_at.unix_timestamp_nanos(), r.id))
            })
            .flatten();
        Ok(AuditPage {
            entries: rows
                .into_iter()
                .map(|r| AuditView {
                    when: when(r.created_at),
                    actor: r
                        .actor_email
                        .unwrap_or_else(|| crate::i18n::t("system", "系统").into()),
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
    };
    run.await.map_err(AppError::respond)
}

/// Parses an audit page cursor (`<unix nanos>_<uuid>`).
#[cfg(feature = "ssr")]
fn parse_cursor(cursor: &str) -> Option<(time::OffsetDateTime, Uuid)> {
    let (nanos, id) = cursor.split_once('_')?;
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(nanos.parse().ok()?).ok()?;
    Some((at, id.parse().ok()?))
}

/// An API token as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    pub id: Uuid,
    pub name: String,
    pub scopes: String,
    pub created_by: String,
    pub created: String,
    pub last_used: Option<String>,
    pub revoked: Option<String>,
}

#[cfg(feature = "ssr")]
fn token_error(error: engine::tokens::TokenError) -> AppError {
    AppError::outcome(error)
}

/// The tenant's API tokens.
#[server(prefix = "/api/admin", endpoint = "tokens", input = server_fn::codec::GetUrl)]
pub async fn api_tokens(tenant_id: Uuid) -> Result<Vec<TokenRow>, AppError> {
    use support::when;
    let run = async {
        let (state, tenant, _) = support::admin_of_tenant(tenant_id).await?;
        let tokens = engine::tokens::list(&state.pool, tenant)
            .await
            .map_err(support::internal)?;
        Ok(tokens
            .into_iter()
            .map(|t| TokenRow {
                id: t.id,
                name: t.name,
                scopes: t
                    .scopes
                    .iter()
                    .map(|s| crate::i18n::scope(s))
                    .collect::<Vec<_>>()
                    .join(", "),
                created_by: t.created_by,
                created: when(t.created_at),
                last_used: t.last_used_at.map(when),
                revoked: t.revoked_at.map(when),
            })
            .collect())
    };
    run.await.map_err(AppError::respond)
}

/// Creates an API token; the answer is the token, shown this once.
#[server(prefix = "/api/admin", endpoint = "tokens/create")]
pub async fn create_token(
    tenant_id: Uuid,
    name: String,
    read: Option<String>,
    write: Option<String>,
) -> Result<String, AppError> {
    use engine::tokens::Scope;
    use secrecy::ExposeSecret as _;
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        let mut scopes = Vec::new();
        if read.is_some() {
            scopes.push(Scope::Read);
        }
        if write.is_some() {
            scopes.push(Scope::Write);
        }
        let (_, token) = engine::tokens::create(&state.pool, tenant, admin.id, &name, &scopes)
            .await
            .map_err(token_error)?;
        let token = token.expose_secret().to_owned();
        // Without JavaScript the answer is a redirect: the token travels
        // to the next page as a one-time message.
        if crate::auth::guard::from_plain_form() {
            crate::auth::guard::set_flash(&crate::auth::Flash {
                kind: crate::auth::FlashKind::Success,
                message: crate::i18n::lang().pick(
                    format!("New token (shown once, copy it now): {token}"),
                    format!("新令牌（只显示这一次，请立即复制）：{token}"),
                ),
            })
            .await?;
        }
        Ok(token)
    };
    run.await.map_err(AppError::respond)
}

/// Revokes an API token at once.
#[server(prefix = "/api/admin", endpoint = "tokens/revoke")]
pub async fn revoke_token(tenant_id: Uuid, token_id: Uuid) -> Result<(), AppError> {
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        engine::tokens::revoke(&state.pool, tenant, admin.id, token_id)
            .await
            .map_err(token_error)
    };
    run.await.map_err(AppError::respond)
}

/// A webhook endpoint as the console lists it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookRow {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub created: String,
    pub disabled: Option<String>,
    pub delivered: i64,
    pub dead: i64,
}

/// A delivery that needs a look: retrying, or dead-lettered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub url: String,
    pub event_type: String,
    pub attempts: i32,
    pub happened: String,
    /// Dead-lettered: waits for "redeliver".
    pub dead: bool,
    pub next_attempt: String,
    pub last_error: Option<String>,
}

/// The webhooks page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub endpoints: Vec<WebhookRow>,
    pub deliveries: Vec<DeliveryRow>,
}

/// A new endpoint and its signing secret, shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewWebhook {
    pub id: Uuid,
    pub secret: String,
}

#[cfg(feature = "ssr")]
fn webhook_error(error: engine::webhooks::WebhookError) -> AppError {
    AppError::outcome(error)
}

/// The tenant's webhook endpoints and its troubled deliveries.
#[server(prefix = "/api/admin", endpoint = "webhooks", input = server_fn::codec::GetUrl)]
pub async fn webhooks(tenant_id: Uuid) -> Result<WebhooksView, AppError> {
    use support::{internal, when};
    let run = async {
        let (state, tenant, _) = support::admin_of_tenant(tenant_id).await?;
        let endpoints = engine::webhooks::admin::endpoints(&state.pool, tenant)
            .await
            .map_err(internal)?;
        let deliveries = engine::webhooks::admin::troubled(&state.pool, tenant, 200)
            .await
            .map_err(internal)?;
        Ok(WebhooksView {
            endpoints: endpoints
                .into_iter()
                .map(|e| WebhookRow {
                    id: e.id,
                    url: e.url,
                    events: e.events,
                    created: when(e.created_at),
                    disabled: e.disabled_at.map(when),
                    delivered: e.delivered,
                    dead: e.dead,
                })
                .collect(),
            deliveries: deliveries
                .into_iter()
                .map(|d| DeliveryRow {
                    endpoint_id: d.endpoint_id,
                    event_id: d.event_id,
                    url: d.url,
                    event_type: d.event_type,
                    attempts: d.attempts,
                    happened: when(d.created_at),
                    dead: d.dead_at.is_some(),
                    next_attempt: when(d.next_attempt_at),
                    last_error: d.last_error,
                })
                .collect(),
        })
    };
    run.await.map_err(AppError::respond)
}

/// Adds a webhook endpoint for the ticked events; the answer holds its
/// signing secret, shown this once.
#[server(prefix = "/api/admin", endpoint = "webhooks/create")]
pub async fn create_webhook(
    tenant_id: Uuid,
    url: String,
    code_bound: Option<String>,
    code_unbound: Option<String>,
    code_revoked: Option<String>,
    access_recorded: Option<String>,
    batch_issued: Option<String>,
) -> Result<NewWebhook, AppError> {
    use secrecy::ExposeSecret as _;
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        let url = engine::webhooks::destination::EndpointUrl::parse(&url).map_err(webhook_error)?;
        let ticked = [
            ("code.bound", &code_bound),
            ("code.unbound", &code_unbound),
            ("code.revoked", &code_revoked),
            ("access.recorded", &access_recorded),
            ("batch.issued", &batch_issued),
        ];
        let events = engine::webhooks::parse_events(
            ticked
                .iter()
                .filter(|(_, on)| on.is_some())
                .map(|(event, _)| *event),
        )
        .map_err(webhook_error)?;
        let (id, secret) =
            engine::webhooks::admin::create_endpoint(&state.pool, tenant, admin.id, &url, &events)
                .await
                .map_err(webhook_error)?;
        let secret = secret.expose_secret().to_owned();
        // Without JavaScript the answer is a redirect: the secret travels
        // to the next page as a one-time message.
        if crate::auth::guard::from_plain_form() {
            crate::auth::guard::set_flash(&crate::auth::Flash {
                kind: crate::auth::FlashKind::Success,
                message: crate::i18n::lang().pick(
                    format!(
                        "Endpoint added. Its signing secret (shown once, copy it now): {secret}"
                    ),
                    format!("已添加接收地址。签名密钥（只显示这一次，请立即复制）：{secret}"),
                ),
            })
            .await?;
        }
        Ok(NewWebhook { id, secret })
    };
    run.await.map_err(AppError::respond)
}

/// Stops an endpoint; its pending deliveries are dead-lettered.
#[server(prefix = "/api/admin", endpoint = "webhooks/disable")]
pub async fn disable_webhook(tenant_id: Uuid, endpoint_id: Uuid) -> Result<(), AppError> {
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        engine::webhooks::admin::disable_endpoint(&state.pool, tenant, admin.id, endpoint_id)
            .await
            .map_err(webhook_error)
    };
    run.await.map_err(AppError::respond)
}

/// Sends a dead-lettered delivery again, with fresh attempts.
#[server(prefix = "/api/admin", endpoint = "webhooks/redeliver")]
pub async fn redeliver(tenant_id: Uuid, endpoint_id: Uuid, event_id: Uuid) -> Result<(), AppError> {
    let run = async {
        let (state, tenant, admin) = support::admin_of_tenant(tenant_id).await?;
        engine::webhooks::admin::redeliver(&state.pool, tenant, admin.id, endpoint_id, event_id)
            .await
            .map_err(webhook_error)
    };
    run.await.map_err(AppError::respond)
}
