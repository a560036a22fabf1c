//! The admin console: a tenant's dashboard, a share's editor, the one-time
//! page of a new batch, the code table and the audit log. Every page is
//! server rendered and works without JavaScript (forms post to server
//! functions and come back); hydrated, forms update in place.

pub mod audit;
pub mod chart;
pub mod codes;
pub mod dashboard;
pub mod issued;
pub mod learners;
pub mod share;
pub mod team;
pub mod tokens;
mod upload;
pub mod webhooks;

/// The upload form's refusals, also worded by the plain form's route
/// (the module itself is private: only the share page uses the widget).
pub use upload::upload_refusal;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::{components::Redirect, hooks::use_params_map};
use uuid::Uuid;

use crate::{error::AppError, i18n::t};

/// A path parameter as a uuid (a malformed one is simply "not found").
pub fn param_id(name: &'static str) -> impl Fn() -> Option<Uuid> + Copy + Send + Sync {
    let params = use_params_map();
    move || params.read().get(name).and_then(|v| v.parse().ok())
}

/// The console's tabs for one tenant.
#[component]
pub fn ConsoleNav(tenant: Uuid) -> impl IntoView {
    view! {
        <nav class="console-nav" aria-label=t("Console", "管理后台")>
            <a href=format!("/admin/t/{tenant}")>{t("Dashboard", "概览")}</a>
            <a href=format!("/admin/t/{tenant}/team")>{t("Team", "团队")}</a>
            <a href=format!("/admin/t/{tenant}/audit")>{t("Audit log", "审计日志")}</a>
            <a href=format!("/admin/t/{tenant}/tokens")>{t("API tokens", "API 令牌")}</a>
            <a href=format!("/admin/t/{tenant}/webhooks")>{t("Webhooks", "Webhook")}</a>
            <a href="/api/v1/docs">{t("API docs", "API 文档")}</a>
            <a href="/admin">{t("All tenants", "全部机构")}</a>
        </nav>
    }
}

/// What a console page shows when its data did not load.
#[component]
pub fn ConsoleError(error: AppError, here: String) -> impl IntoView {
    match error {
        AppError::Unauthenticated => view! {
            <Redirect path=format!("/login?next={}", crate::pages::login::urlencode(&here))/>
        }
        .into_any(),
        AppError::NotFound => view! { <crate::pages::not_found::NotFound/> }.into_any(),
        error => view! {
            <Title text=t("Not available", "无法访问")/>
            <h1>{t("Not available", "无法访问")}</h1>
            <div class="flash error" role="alert">{error.sentence()}</div>
        }
        .into_any(),
    }
}
