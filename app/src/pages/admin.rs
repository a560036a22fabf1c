//! The console's entry: the tenants the account administers, and one
//! tenant's overview. (Shares, codes and records arrive with the console.)

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::{components::Redirect, hooks::use_params_map};
use uuid::Uuid;

use crate::{
    admin::{my_tenants, tenant_overview},
    error::AppError,
};

#[component]
pub fn ConsoleHome() -> impl IntoView {
    let tenants = Resource::new(|| (), |_| my_tenants());
    view! {
        <Title text="Console"/>
        <h1>"Console"</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match tenants.await {
                    Ok(list) if list.is_empty() => view! {
                        <p>"You do not administer any tenant. Learners open courses from the link they were given."</p>
                    }.into_any(),
                    Ok(list) => view! {
                        <ul class="tenant-list">
                            {list.into_iter().map(|t| view! {
                                <li><a href=format!("/admin/t/{}", t.id)>{t.name}</a>" "<span class="muted">{t.slug}</span></li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(AppError::Unauthenticated) => view! { <Redirect path="/login?next=/admin"/> }.into_any(),
                    Err(error) => view! { <div class="flash error" role="alert">{error.to_string()}</div> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
pub fn TenantPage() -> impl IntoView {
    let params = use_params_map();
    let tenant = Resource::new(
        move || {
            params
                .read()
                .get("tenant")
                .and_then(|t| t.parse::<Uuid>().ok())
        },
        |id| async move {
            match id {
                Some(id) => tenant_overview(id).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match tenant.await {
                    Ok(t) => view! {
                        <Title text=t.name.clone()/>
                        <h1>{t.name}</h1>
                        <p class="muted">"Tenant "{t.slug}" · "{t.admins}" administrator(s)"</p>
                    }.into_any(),
                    Err(AppError::Unauthenticated) => view! { <Redirect path="/login?next=/admin"/> }.into_any(),
                    Err(error) => {
                        #[cfg(feature = "ssr")]
                        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                            response.set_status(error.status());
                        }
                        view! {
                            <Title text="Not available"/>
                            <h1>"Not available"</h1>
                            <div class="flash error" role="alert">{error.to_string()}</div>
                        }.into_any()
                    }
                }
            })}
        </Transition>
    }
}
