//! The admin console: a tenant's dashboard, a share's editor, the one-time
//! page of a new batch, the code table and the audit log. Every page is
//! server rendered and works without JavaScript (forms post to server
//! functions and come back); hydrated, forms update in place.

pub mod audit;
pub mod chart;
pub mod codes;
pub mod dashboard;
pub mod home;
pub mod imports;
pub mod issued;
pub mod learners;
pub mod mailings;
pub mod sales;
pub mod share;
pub mod shops;
pub mod team;
pub mod tokens;
pub mod transfers;
mod upload;
pub mod webhooks;

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
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
        <nav class="console-nav" aria-label=t(Msg::Console)>
            <a href=format!("/admin/t/{tenant}")>{t(Msg::Dashboard)}</a>
            <a href=format!("/admin/t/{tenant}/team")>{t(Msg::Team)}</a>
            <a href=format!("/admin/t/{tenant}/transfers")>{t(Msg::Transfers)}</a>
            <a href=format!("/admin/t/{tenant}/audit")>{t(Msg::AuditLog)}</a>
            <a href=format!("/admin/t/{tenant}/tokens")>{t(Msg::ApiTokens)}</a>
            <a href=format!("/admin/t/{tenant}/webhooks")>{t(Msg::Webhooks)}</a>
            <a href=format!("/admin/t/{tenant}/shops")>{t(Msg::Shops)}</a>
            <a href="/api/v1/docs">{t(Msg::ApiDocs)}</a>
            <a href="/admin">{t(Msg::AllTenants)}</a>
        </nav>
    }
}

/// What a console page shows when its data did not load.
#[component]
pub fn ConsoleError(error: AppError, here: String) -> impl IntoView {
    match error {
        AppError::Unauthenticated => {
            view! { <crate::components::SignInFirst next=here/> }.into_any()
        }
        AppError::NotFound => view! { <crate::pages::not_found::NotFound/> }.into_any(),
        error => view! {
            <Title text=t(Msg::NotAvailable)/>
            <h1>{t(Msg::NotAvailable)}</h1>
            <crate::components::ErrorFlash error/>
        }
        .into_any(),
    }
}
