//! A share's editor (`/admin/t/{tenant}/s/{share}`, the page in
//! `pages/console/share.rs`): creating a share, its settings, its resources
//! (rename, reorder, remove; uploads are a plain HTTP route in
//! `server/src/routes/console/mod.rs`) and the batches it lists.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use model::ShareStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// A share as its editor shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareEditor {
    pub tenant_id: Uuid,
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub status: ShareStatus,
    /// `datetime-local` values in the tenant's zone, empty when unset.
    pub valid_from: String,
    pub valid_until: String,
    pub per_learner_limit: String,
    pub quota: String,
    /// Days of access from each learner's first access, empty for good.
    pub access_days: String,
    /// Accesses counted so far (with or without a quota).
    pub quota_used: i64,
    /// The tenant's time zone (`Asia/Shanghai`): what the dates are in.
    pub time_zone: String,
    pub resources: Vec<crate::learner::ResourceItem>,
    pub batches: Vec<BatchView>,
    /// A fresh ticket for the issue form (see [`issue_codes`](super::issued::issue_codes)).
    pub issue_ticket: Uuid,
    /// The signed-in member may look but not change (support): the page
    /// shows its forms disabled.
    pub read_only: bool,
}

/// A code batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchView {
    pub id: Uuid,
    pub label: String,
    pub count: i32,
    pub created: String,
    /// When its unused codes stop working, as a person reads it (`None`:
    /// never).
    pub expires: Option<String>,
    /// The same as a `datetime-local` value, empty when unset.
    pub expires_input: String,
    /// The date has passed: its unused codes no longer work.
    pub expired: bool,
    /// Issued to be mailed: its page is the mail page.
    pub mailable: bool,
}

#[cfg(feature = "ssr")]
impl BatchView {
    pub(crate) fn new(b: engine::read_models::BatchRow, zone: &engine::zone::Zone) -> Self {
        Self {
            // Before the fields it reads are moved.
            expired: b.expired(),
            mailable: b.mailable,
            id: b.id,
            label: b.label,
            count: b.count,
            created: zone.when(b.created_at),
            expires: b.expires_at.map(|at| zone.when(at)),
            expires_input: support::local_input(zone, b.expires_at),
        }
    }
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
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    let new = NewShare::parse(ShareInput {
        title,
        slug,
        description,
        status: None,
        per_learner_limit: None,
        quota: None,
        access_days: None,
        valid_from: None,
        valid_until: None,
    })
    .map_err(AppError::outcome)?;
    let share = engine::shares::create_share(&state.pool, tenant, admin.id, new)
        .await
        .map_err(AppError::outcome)?;
    leptos_axum::redirect(&format!("/admin/t/{tenant_id}/s/{}", share.id));
    Ok(())
}

/// A share's editor: settings, resources, batches.
#[server(prefix = "/api/admin", endpoint = "share", input = server_fn::codec::GetUrl)]
pub async fn share_settings(tenant_id: Uuid, share_id: Uuid) -> Result<ShareEditor, AppError> {
    use support::{internal, local_input};
    let (state, _, share, role) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ViewConsole,
    )
    .await?;
    let resources = engine::resources::resources(&state.pool, share.tenant(), share.id)
        .await
        .map_err(internal)?;
    let batches = engine::read_models::batches(&state.reads, share.tenant(), share.id)
        .await
        .map_err(internal)?;
    let zone = support::zone(&state, share.tenant()).await?;
    let counted = engine::read_models::accesses_counted(&state.reads, share.tenant(), share.id)
        .await
        .map_err(internal)?;
    Ok(ShareEditor {
        tenant_id,
        id: share.id.0,
        slug: share.slug,
        title: share.title,
        description: share.description,
        status: share.status,
        valid_from: local_input(&zone, share.valid_from),
        valid_until: local_input(&zone, share.valid_until),
        per_learner_limit: share
            .per_learner_limit
            .map(|n| n.to_string())
            .unwrap_or_default(),
        quota: share.quota.map(|n| n.to_string()).unwrap_or_default(),
        access_days: share.access_days.map(|n| n.to_string()).unwrap_or_default(),
        quota_used: counted,
        time_zone: zone.name().to_owned(),
        resources: resources.into_iter().map(crate::learner::item).collect(),
        batches: batches
            .into_iter()
            .map(|b| BatchView::new(b, &zone))
            .collect(),
        issue_ticket: Uuid::new_v4(),
        read_only: !role.allows(engine::tenants::Permission::ManageCourses),
    })
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
        access_days: Option<String>,
        confirm_period: Option<String>,
        status_seen: Option<String>,
    ) -> Result<(), AppError> {
        use engine::shares::{NewShare, ShareInput};
        use support::parse_number;
        let (state, admin, share, _) = support::member_share(
            tenant_id,
            share_id,
            engine::tenants::Permission::ManageCourses,
        )
        .await?;
        let zone = support::zone(&state, share.tenant()).await?;
        let keep_period = access_days.is_none();
        let status_untouched = status_seen.as_deref().map(str::trim) == Some(status.trim());
        let new = NewShare::parse(ShareInput {
            title,
            slug: Some(slug),
            description: Some(description),
            status: Some(status),
            per_learner_limit: parse_number("per_learner_limit", &per_learner_limit)?,
            quota: parse_number("quota", &quota)?,
            // Absent (a caller that is not this form): kept.
            access_days: access_days
                .as_deref()
                .map(|raw| parse_number("access_days", raw))
                .transpose()?,
            valid_from: support::parse_local_or_kept(
                &zone,
                "valid_from",
                &valid_from,
                share.valid_from,
            )?,
            valid_until: support::parse_local_or_kept(
                &zone,
                "valid_until",
                &valid_until,
                share.valid_until,
            )?,
        })
        .map_err(AppError::outcome)?;
        // A shorter period ends some learners' access at once: the
        // form says how many and asks for a tick first.
        if !keep_period && confirm_period.as_deref() != Some("yes") {
            let cut = engine::access_period::cut_off_by(
                &state.pool,
                share.tenant(),
                share.id,
                new.access_days,
            )
            .await
            .map_err(support::internal)?;
            if cut > 0 {
                return Err(AppError::invalid(
                    "access_days",
                    crate::i18n::lang().format(
                        Msg::LearnersWouldLoseAccessAtOnce,
                        &[("count", &cut.to_string())],
                    ),
                ));
            }
        }
        // The form sends every field: nothing is kept (but the period,
        // for a caller that is not this form, and the status the form
        // did not change).
        // `status_untouched`: the status as the form showed it
        // (`status_seen`), left as it was. The share then keeps the
        // status it has now, so saving a form opened before someone
        // paused the course keeps the pause.
        let kept = engine::shares::Kept {
            access_days: keep_period,
            status: status_untouched,
            ..Default::default()
        };
        engine::shares::update_share(&state.pool, share.tenant(), admin.id, share.id, new, kept)
            .await
            .map_err(AppError::outcome)?;
        // Hydrated pages say "Saved." in place; a plain form gets a flash.
        if crate::auth::guard::from_plain_form() {
            crate::auth::guard::set_flash(&crate::auth::Flash {
                kind: crate::auth::FlashKind::Success,
                message: crate::i18n::t(Msg::Saved).into(),
            })
            .await?;
            leptos_axum::redirect(&format!("/admin/t/{tenant_id}/s/{share_id}"));
        }
        Ok(())
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
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    engine::resources::rename_resource(
        &state.pool,
        share.tenant(),
        admin.id,
        share.id,
        resource_id,
        &title,
    )
    .await
    .map_err(AppError::outcome)
}

/// Moves a resource up (`up`) or down (`down`) in the list.
#[server(prefix = "/api/admin", endpoint = "resources/move")]
pub async fn move_resource(
    tenant_id: Uuid,
    share_id: Uuid,
    resource_id: Uuid,
    direction: String,
) -> Result<(), AppError> {
    let step = match direction.as_str() {
        "up" => -1,
        "down" => 1,
        _ => {
            return Err(AppError::invalid(
                "direction",
                crate::i18n::t(Msg::UpOrDown),
            ));
        }
    };
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    engine::resources::move_resource(
        &state.pool,
        share.tenant(),
        admin.id,
        share.id,
        resource_id,
        step,
    )
    .await
    .map_err(AppError::outcome)
}

/// Removes a resource; once learners opened it, only with `force=on`.
#[server(prefix = "/api/admin", endpoint = "resources/delete")]
pub async fn delete_resource(
    tenant_id: Uuid,
    share_id: Uuid,
    resource_id: Uuid,
    force: Option<String>,
) -> Result<(), AppError> {
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let key = engine::resources::delete_resource(
        &state.pool,
        share.tenant(),
        admin.id,
        share.id,
        resource_id,
        force.is_some_and(|f| f == "on" || f == "true"),
    )
    .await
    .map_err(AppError::outcome)?;
    // The row is gone for everyone; stray bytes are only disk space.
    if let Err(error) = state.storage.delete(&key).await {
        tracing::warn!(
            error = format!("{error:#}"),
            "removing a resource's bytes failed"
        );
    }
    Ok(())
}
