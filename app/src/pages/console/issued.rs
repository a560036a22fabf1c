//! The one page that shows a new batch's plain codes
//! (`/admin/t/{tenant}/s/{share}/batches/{batch}`): once, with the CSV
//! download (also once). Reloading shows that they are gone.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    admin::{IssuedView, issued_codes},
    error::AppError,
};

#[component]
pub fn IssuedPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let batch = param_id("batch");
    let data = Resource::new(
        move || (tenant(), share(), batch()),
        |ids| async move {
            match ids {
                (Some(t), Some(s), Some(b)) => issued_codes(t, s, b).await,
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/s/{}",
                    tenant().map(|t| t.to_string()).unwrap_or_default(),
                    share().map(|s| s.to_string()).unwrap_or_default()
                );
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => view! { <Issued view tenant back=here/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Issued(view: IssuedView, tenant: uuid::Uuid, back: String) -> impl IntoView {
    view! {
        <Title text="New codes"/>
        <ConsoleNav tenant/>
        <h1>"New codes for " {view.share_title.clone()}</h1>
        {match view.codes {
            Some(codes) => view! {
                <div class="flash warning" role="status">
                    "These codes are shown only now. Download the CSV or copy them before you leave this page: "
                    "afterwards only their first and last two characters remain."
                </div>
                <p class="actions">
                    <a class="button" href=view.csv_url.clone() download="">"Download CSV (once)"</a>
                    <a class="button secondary" href=back.clone()>"Back to the share"</a>
                </p>
                <p class="muted">{format!("{} codes for ", codes.len())}<code>{view.link.clone()}</code></p>
                <ol class="code-list">
                    {codes.into_iter().map(|c| view! { <li><code class="plain-code">{c}</code></li> }).collect_view()}
                </ol>
            }.into_any(),
            None => view! {
                <div class="flash info" role="status">
                    "These codes were already shown once. Plain codes are never stored: only their hints remain in the code table."
                </div>
                <p><a class="button" href=back>"Back to the share"</a></p>
            }.into_any(),
        }}
    }
}
