//! A share's code table (`…/codes`, the page in `pages/console/codes.rs`):
//! keyset pages of codes, and what an admin does to one code (revoke,
//! replace, unbind) or to a batch's unused codes.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use model::CodeState;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::share::BatchView;
#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// One page of a share's code table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeTable {
    pub share_title: String,
    pub codes: Vec<CodeRow>,
    /// The keyset cursor of the next page, if there is one.
    pub next_after: Option<Uuid>,
    /// The keyset cursor of the previous page, if there is one.
    pub previous_before: Option<Uuid>,
    /// How many codes match the filters.
    pub total: i64,
    /// The page's first row among them, counting from 1 (0: no rows).
    pub first_row: i64,
    pub batches: Vec<BatchView>,
    /// The tenant's time zone: what the expiry inputs are in.
    pub time_zone: String,
    /// The signed-in member may look but not change (support): no actions.
    pub read_only: bool,
}

/// A code as admins see it: never the plain code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeRow {
    pub id: Uuid,
    pub hint: String,
    pub state: CodeState,
    pub bound_email: Option<String>,
    /// The address an addressed code binds to (only that verified
    /// account may redeem it).
    pub addressed_to: Option<String>,
    /// The learner a refund released from it (took the seat back).
    pub former_email: Option<String>,
    pub first_used: Option<String>,
    pub access_count: i32,
    pub batch: String,
    /// When it stops working unless bound first (its own date or its
    /// batch's), as a person reads it; `None`: never.
    pub expires: Option<String>,
    /// The same as a `datetime-local` value, empty when unset.
    pub expires_input: String,
}

/// Which codes the table shows: the page's query string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeQuery {
    pub state: Option<String>,
    pub batch: Option<Uuid>,
    /// Part of a hint, of a learner's email or of the address a code is
    /// addressed to.
    pub q: Option<String>,
    /// One code (what "find a full code" leads to).
    pub code: Option<Uuid>,
    pub after: Option<Uuid>,
    pub before: Option<Uuid>,
}

impl CodeQuery {
    /// The filters (not the cursor) as a query string: `state=bound&q=ada`,
    /// for the page links and the CSV.
    pub fn filters(&self) -> String {
        let mut parts = Vec::new();
        if let Some(state) = &self.state {
            parts.push(format!("state={}", crate::pages::login::urlencode(state)));
        }
        if let Some(batch) = self.batch {
            parts.push(format!("batch={batch}"));
        }
        if let Some(q) = &self.q {
            parts.push(format!("q={}", crate::pages::login::urlencode(q)));
        }
        if let Some(code) = self.code {
            parts.push(format!("code={code}"));
        }
        parts.join("&")
    }
}

pub use table_page::{ListCodePage, list_code_page};

/// The table's server function: one argument per query-string field, so the
/// page's filter form is a plain GET.
mod table_page {
    #![expect(
        clippy::too_many_arguments,
        reason = "one argument per query-string field"
    )]
    use super::*;

    /// One page of a share's codes, filtered, with the totals.
    #[server(prefix = "/api/admin", endpoint = "codes", input = server_fn::codec::GetUrl)]
    pub async fn list_code_page(
        tenant_id: Uuid,
        share_id: Uuid,
        state: Option<String>,
        batch: Option<Uuid>,
        q: Option<String>,
        code: Option<Uuid>,
        after: Option<Uuid>,
        before: Option<Uuid>,
    ) -> Result<CodeTable, AppError> {
        use engine::code_table::{CodeFilter, Cursor};
        use support::internal;
        const PAGE: i64 = 50;
        let (app, _, share, role) = support::member_share(
            tenant_id,
            share_id,
            engine::tenants::Permission::ViewConsole,
        )
        .await?;
        let zone = support::zone(&app, share.tenant()).await?;
        let filter = CodeFilter {
            state: state
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(CodeState::parse)
                .transpose()
                .map_err(|e| AppError::outcome(engine::code_actions::CodeError::from(e)))?,
            batch,
            search: q,
            code,
        };
        let cursor = match (after, before) {
            (Some(after), _) => Cursor::After(after),
            (None, Some(before)) => Cursor::Before(before),
            (None, None) => Cursor::First,
        };
        let page = engine::code_table::list_codes(
            &app.pool,
            share.tenant(),
            share.id,
            &filter,
            cursor,
            PAGE,
        )
        .await
        .map_err(internal)?;
        let bounds = page
            .codes
            .first()
            .zip(page.codes.last())
            .map(|(f, l)| (f.id, l.id));
        let counts =
            engine::code_table::count_codes(&app.pool, share.tenant(), share.id, &filter, bounds)
                .await
                .map_err(internal)?;
        let batches = engine::read_models::batches(&app.reads, share.tenant(), share.id)
            .await
            .map_err(internal)?;
        let label_of = |id: Uuid| {
            batches
                .iter()
                .find(|b| b.id == id)
                .map(|b| b.label.clone())
                .unwrap_or_default()
        };
        Ok(CodeTable {
            share_title: share.title,
            codes: page
                .codes
                .into_iter()
                .map(|c| CodeRow {
                    batch: label_of(c.batch_id),
                    id: c.id,
                    hint: c.hint,
                    state: c.state,
                    bound_email: c.bound_email,
                    addressed_to: c.addressed_to,
                    former_email: c.former_email,
                    first_used: c.first_used_at.map(|at| zone.when(at)),
                    access_count: c.access_count,
                    expires: c.expires_at.map(|at| zone.when(at)),
                    expires_input: support::local_input(&zone, c.expires_at),
                })
                .collect(),
            next_after: page.next_after.filter(|_| counts.after > 0),
            previous_before: page.previous_before.filter(|_| counts.before > 0),
            first_row: if bounds.is_some() {
                counts.before + 1
            } else {
                0
            },
            total: counts.total,
            batches: batches
                .into_iter()
                .map(|b| crate::console::share::BatchView::new(b, &zone))
                .collect(),
            time_zone: zone.name().to_owned(),
            read_only: !role.allows(engine::tenants::Permission::ManageCourses),
        })
    }
}

/// The code `code_id` of `tenant_id`, for its admin.
#[cfg(feature = "ssr")]
async fn member_code(
    tenant_id: Uuid,
    code_id: Uuid,
    permission: engine::tenants::Permission,
) -> Result<(crate::state::Services, engine::accounts::Principal), AppError> {
    let state = crate::state::services()?;
    let tenant = engine::tenants::TenantId(tenant_id);
    let admin = crate::auth::guard::require_member(tenant, permission).await?;
    match engine::code_table::share_of_code(&state.pool, &[tenant], code_id)
        .await
        .map_err(support::internal)?
    {
        Some((owner, _)) if owner == tenant => Ok((state, admin)),
        _ => Err(AppError::NotFound),
    }
}

/// Finds a code a person pasted (support: "my code doesn't work") among
/// the tenant's codes, whichever share it belongs to, and goes to it in
/// that share's code table. Posted, so the plain code never reaches a URL,
/// a log or the browser's history; it is only hashed.
#[server(prefix = "/api/admin", endpoint = "codes/find")]
pub async fn find_code(tenant_id: Uuid, code: String) -> Result<(), AppError> {
    use crate::i18n::{errors::message, t};
    let state = crate::state::services()?;
    let tenant = engine::tenants::TenantId(tenant_id);
    crate::auth::guard::require_member(tenant, engine::tenants::Permission::ViewConsole).await?;
    let plain = engine::code_table::read_pasted(&state.pool, tenant, &code)
        .await
        .map_err(support::internal)?
        .map_err(|error| AppError::invalid("code", message(&error)))?;
    match engine::code_table::find_code(&state.pool, &state.keyring, tenant, &plain)
        .await
        .map_err(support::internal)?
    {
        Some((share, id)) => {
            leptos_axum::redirect(&format!(
                "/admin/t/{tenant_id}/s/{}/codes?code={id}",
                share.0
            ));
            Ok(())
        }
        None => Err(AppError::invalid("code", t(Msg::NoCodeOfThisTenantMatches))),
    }
}

/// Revokes one code. A bound learner loses access: that needs `confirm`
/// = `yes`, like unbinding.
#[server(prefix = "/api/admin", endpoint = "codes/revoke")]
pub async fn revoke_code(
    tenant_id: Uuid,
    code_id: Uuid,
    confirm: Option<String>,
) -> Result<(), AppError> {
    let (state, admin) = member_code(
        tenant_id,
        code_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    if engine::code_table::is_bound(&state.pool, engine::tenants::TenantId(tenant_id), code_id)
        .await
        .map_err(support::internal)?
    {
        support::confirmed(
            confirm.as_deref(),
            crate::i18n::Msg::ConfirmLearnerLosesAccess,
        )?;
    }
    engine::code_actions::revoke_code(
        &state.pool,
        engine::tenants::TenantId(tenant_id),
        admin.id,
        code_id,
    )
    .await
    .map_err(AppError::outcome)
}

/// Replaces a lost unused code (revoke + issue one, atomically) and opens
/// the one-time page of the new code.
#[server(prefix = "/api/admin", endpoint = "codes/replace")]
pub async fn replace_code(tenant_id: Uuid, code_id: Uuid) -> Result<(), AppError> {
    let (state, admin) = member_code(
        tenant_id,
        code_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let service::issuing::Replacement {
        share,
        code_id: new_id,
    } = service::issuing::replace_for_handover(
        &state,
        engine::tenants::TenantId(tenant_id),
        &admin,
        code_id,
    )
    .await?;
    leptos_axum::redirect(&format!(
        "/admin/t/{tenant_id}/s/{}/batches/{new_id}",
        share.0
    ));
    Ok(())
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
    let (state, admin) = member_code(
        tenant_id,
        code_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    // Unbinding takes a course away from a person: the form asks for an
    // explicit confirmation, not only a reason.
    if confirm.as_deref() != Some("yes") {
        return Err(AppError::invalid(
            "confirm",
            crate::i18n::t(Msg::TickTheBoxToConfirmThat),
        ));
    }
    let revoke = match after.as_str() {
        "usable" => false,
        "revoked" => true,
        _ => {
            return Err(AppError::invalid(
                "after",
                crate::i18n::t(Msg::ChooseWhetherTheCodeStaysUsable),
            ));
        }
    };
    engine::code_actions::unbind_code(
        &state.pool,
        engine::tenants::TenantId(tenant_id),
        admin.id,
        code_id,
        &reason,
        revoke,
    )
    .await
    .map_err(AppError::outcome)?;
    Ok(())
}

/// Revokes a bound code whose text leaked and binds a new code to its
/// learner, who keeps their access and gets a mail (with `reason`);
/// `confirm` must be `yes`.
#[server(prefix = "/api/admin", endpoint = "codes/revoke-and-replace")]
pub async fn revoke_and_replace(
    tenant_id: Uuid,
    code_id: Uuid,
    reason: String,
    confirm: Option<String>,
) -> Result<(), AppError> {
    let (state, admin) = member_code(
        tenant_id,
        code_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    if confirm.as_deref() != Some("yes") {
        return Err(AppError::invalid(
            "confirm",
            crate::i18n::t(Msg::TickTheBoxToConfirmThat),
        ));
    }
    engine::leaks::revoke_and_replace(
        &state.pool,
        &state.keyring,
        engine::tenants::TenantId(tenant_id),
        admin.id,
        code_id,
        &reason,
    )
    .await
    .map_err(AppError::outcome)?;
    Ok(())
}

/// Sets one unused code's own expiry date (a `datetime-local` value in the
/// tenant's zone; empty: its batch's date applies again).
#[server(prefix = "/api/admin", endpoint = "codes/expiry")]
pub async fn set_code_expiry(
    tenant_id: Uuid,
    code_id: Uuid,
    expires_at: String,
) -> Result<(), AppError> {
    let (state, admin) = member_code(
        tenant_id,
        code_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let tenant = engine::tenants::TenantId(tenant_id);
    let zone = support::zone(&state, tenant).await?;
    let expires_at = support::parse_local(&zone, "expires_at", &expires_at)?;
    engine::code_actions::set_code_expiry(&state.pool, tenant, admin.id, code_id, expires_at)
        .await
        .map_err(AppError::outcome)
}

/// Sets when a batch's unused codes stop working (a `datetime-local` value
/// in the tenant's zone; empty: never).
#[server(prefix = "/api/admin", endpoint = "batches/expiry")]
pub async fn set_batch_expiry(
    tenant_id: Uuid,
    batch_id: Uuid,
    expires_at: String,
) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    let zone = support::zone(&state, tenant).await?;
    let expires_at = support::parse_local(&zone, "expires_at", &expires_at)?;
    engine::batches::set_batch_expiry(&state.pool, tenant, admin.id, batch_id, expires_at)
        .await
        .map_err(AppError::outcome)
}

/// Revokes every unused code of a batch (`confirm` = `yes`: they can never
/// be used again).
#[server(prefix = "/api/admin", endpoint = "batches/revoke-unused")]
pub async fn revoke_unused(
    tenant_id: Uuid,
    batch_id: Uuid,
    confirm: Option<String>,
) -> Result<u64, AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    support::confirmed(
        confirm.as_deref(),
        crate::i18n::Msg::ConfirmCodesNeverUsedAgain,
    )?;
    engine::batches::revoke_unused_of_batch(&state.pool, tenant, admin.id, batch_id)
        .await
        .map_err(AppError::outcome)
}
