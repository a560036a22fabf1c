//! The console's entry: the tenants the account administers (each one's
//! pages are in `pages::console`).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Redirect;

use crate::{admin::dashboard::my_tenants, error::AppError, i18n::t};

#[component]
pub fn ConsoleHome() -> impl IntoView {
    let tenants = Resource::new(|| (), |_| my_tenants());
    view! {
        <Title text=t("Console", "管理后台")/>
        <h1>{t("Console", "管理后台")}</h1>
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
            {move || Suspend::new(async move {
                match tenants.await {
                    Ok(list) if list.is_empty() => view! {
                        <p>{t("You do not administer any tenant. Learners open courses from the link they were given.", "你还没有可管理的机构。学员通过收到的链接打开课程。")}</p>
                    }.into_any(),
                    Ok(list) => view! {
                        <ul class="tenant-list">
                            {list.into_iter().map(|t| view! {
                                <li><a href=format!("/admin/t/{}", t.id)>{t.name}</a>" "<span class="muted">{t.slug}</span></li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(AppError::Unauthenticated) => view! { <Redirect path="/login?next=/admin"/> }.into_any(),
                    Err(error) => view! { <div class="flash error" role="alert">{error.sentence()}</div> }.into_any(),
                }
            })}
        </Transition>
    }
}
