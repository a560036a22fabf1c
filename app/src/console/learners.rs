//! A share's learners (`…/learners`, the page in
//! `pages/console/learners.rs`): who is bound with which code, and one
//! learner's access records.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// A share's learners, and one learner's access records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnersPage {
    pub share_title: String,
    pub learners: Vec<LearnerView>,
    pub next_after: Option<Uuid>,
    /// The selected learner's records (newest first, at most 200).
    pub records: Option<(String, Vec<RecordView>)>,
    /// The signed-in member may look but not change (support).
    pub read_only: bool,
    /// The share gives access for a period (so it can be extended).
    pub has_period: bool,
    /// The tenant's time zone: what the extension dates are in.
    pub time_zone: String,
}

/// A learner bound in a share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnerView {
    /// The code they hold (what an extension names).
    pub code_id: Uuid,
    pub principal: Uuid,
    pub email: String,
    pub hint: String,
    pub bound_at: String,
    pub accesses: i64,
    pub last_access: Option<String>,
    /// The tenant suspended this learner (every course of the tenant).
    pub suspended: bool,
    /// When their access ends, as a person reads it (`None`: for good).
    pub access_ends: Option<String>,
    /// It has ended.
    pub access_ended: bool,
}

/// One counted access.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub when: String,
    pub resource: String,
    pub bound_now: bool,
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
    use support::internal;
    const PAGE: i64 = 100;
    let (state, _, share, role) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ViewConsole,
    )
    .await?;
    let zone = support::zone(&state, share.tenant()).await?;
    let id = share.id;
    // One row more than the page: a page ending with the last learner
    // offers no (empty) next page.
    let mut rows = engine::read_models::learners(&state.reads, share.tenant(), id, after, PAGE + 1)
        .await
        .map_err(internal)?;
    let more = rows.len() as i64 > PAGE;
    rows.truncate(usize::try_from(PAGE).unwrap_or(usize::MAX));
    let next_after = more.then(|| rows.last().map(|r| r.code_id)).flatten();
    let records = match learner {
        None => None,
        Some(principal) => {
            let list = engine::read_models::records(
                &state.reads,
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
                .unwrap_or_else(|| crate::i18n::t(Msg::ThisLearner).into());
            Some((
                email,
                list.into_iter()
                    .map(|r| RecordView {
                        when: zone.when(r.granted_at),
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
                code_id: r.code_id,
                access_ends: r.access_ends.map(|at| zone.when(at)),
                access_ended: r.access_ended(),
                principal: r.principal,
                email: r.email,
                hint: r.hint,
                bound_at: zone.when(r.bound_at),
                accesses: r.accesses,
                last_access: r.last_access.map(|at| zone.when(at)),
                suspended: r.suspended,
            })
            .collect(),
        next_after,
        records,
        read_only: !role.allows(engine::tenants::Permission::ManageCourses),
        has_period: share.access_days.is_some(),
        time_zone: zone.name().to_owned(),
    })
}

/// Suspends a learner from every course of the tenant (`suspend` = `yes`),
/// or lets them back in (`no`). Their binding stays; audited.
#[server(prefix = "/api/admin", endpoint = "learners/suspend")]
pub async fn suspend_learner(
    tenant_id: Uuid,
    account_id: Uuid,
    suspend: String,
) -> Result<(), AppError> {
    let suspended = match suspend.as_str() {
        "yes" => true,
        "no" => false,
        _ => {
            return Err(AppError::invalid(
                "suspend",
                crate::i18n::t(Msg::ChooseToSuspendOrToRe),
            ));
        }
    };
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    Ok(service::team::set_learner_suspended(
        &state,
        &session,
        engine::tenants::TenantId(tenant_id),
        engine::accounts::AccountId(account_id),
        suspended,
    )
    .await?)
}

/// Extends the access of the learner holding `code_id` to `until` (a
/// `datetime-local` value in the tenant's zone). Audited.
#[server(prefix = "/api/admin", endpoint = "access/extend")]
pub async fn extend_access(tenant_id: Uuid, code_id: Uuid, until: String) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    let until = required_date(&state, tenant, &until).await?;
    engine::access_period::extend_one(&state.pool, tenant, admin.id, code_id, until)
        .await
        .map_err(AppError::outcome)?;
    Ok(())
}

/// Extends the access of everyone bound in `share_id` so far to `until`.
/// Audited.
#[server(prefix = "/api/admin", endpoint = "access/extend-all")]
pub async fn extend_access_all(
    tenant_id: Uuid,
    share_id: Uuid,
    until: String,
) -> Result<(), AppError> {
    let (state, admin, share, _) = support::member_share(
        tenant_id,
        share_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let until = required_date(&state, share.tenant(), &until).await?;
    engine::access_period::extend_all(&state.pool, share.tenant(), admin.id, share.id, until)
        .await
        .map_err(AppError::outcome)?;
    Ok(())
}

/// An extension's date, typed in the tenant's zone: required.
#[cfg(feature = "ssr")]
async fn required_date(
    state: &crate::state::Services,
    tenant: engine::tenants::TenantId,
    raw: &str,
) -> Result<time::OffsetDateTime, AppError> {
    let zone = support::zone(state, tenant).await?;
    support::parse_local(&zone, "until", raw)?
        .ok_or_else(|| AppError::outcome(engine::code_actions::CodeError::InvalidExtension))
}
