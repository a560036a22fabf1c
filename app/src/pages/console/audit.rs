//! The tenant's audit log (`/admin/t/{tenant}/audit`): who did what, when,
//! to what, and why; filterable by action, newest first, keyset pages.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    console::audit::{AuditPage, audit_log},
    error::AppError,
    i18n::{audit_action, t},
};

const ACTIONS: [(&str, Msg); 6] = [
    ("", Msg::AuditFilterEverything),
    ("share.", Msg::AuditFilterShares),
    ("resource.", Msg::AuditFilterResources),
    ("batch.", Msg::AuditFilterBatches),
    ("code.", Msg::AuditFilterCodes),
    ("code.unbound", Msg::AuditFilterUnbinds),
];

#[component]
pub fn AuditLogPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        (q.get("action").filter(|a| !a.is_empty()), q.get("before"))
    };
    let data = Resource::new(
        move || (tenant(), filter()),
        |(tenant, (action, before))| async move {
            match tenant {
                Some(t) => audit_log(t, action, before).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!("/admin/t/{}/audit", tenant().map(|t| t.to_string()).unwrap_or_default());
                match (data.await, tenant()) {
                    (Ok(page), Some(tenant)) => view! { <Log page tenant action=filter().0/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Log(page: AuditPage, tenant: Uuid, action: Option<String>) -> impl IntoView {
    let base = format!("/admin/t/{tenant}/audit");
    let next = page.next.map(|cursor| {
        let mut href = format!("{base}?before={cursor}");
        if let Some(action) = &action {
            href.push_str(&format!("&action={action}"));
        }
        href
    });
    view! {
        <Title text=t(Msg::AuditLog)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::AuditLog)}</h1>
        <form method="get" action=base class="filters">
            <div class="field">
                <label for="action">{t(Msg::Show)}</label>
                <select id="action" name="action">
                    {ACTIONS.iter().map(|(value, label)| view! {
                        <option value=*value selected=action.as_deref().unwrap_or("") == *value>{t(*label)}</option>
                    }).collect_view()}
                </select>
            </div>
            <button type="submit" class="button secondary">{t(Msg::Filter)}</button>
        </form>
        {if page.entries.is_empty() {
            view! { <p class="muted">{t(Msg::NothingRecordedYet)}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data audit">
                        <thead><tr><th>{t(Msg::When)}</th><th>{t(Msg::Who)}</th><th>{t(Msg::What)}</th><th>{t(Msg::On)}</th><th>{t(Msg::Why)}</th><th>{t(Msg::Details)}</th></tr></thead>
                        <tbody>
                            {page.entries.into_iter().map(|e| {
                                let action = e.action.clone();
                                view! {
                                <tr data-action=action>
                                    <td class="nowrap">{e.when}</td>
                                    <td>{e.actor}</td>
                                    <td>{audit_action(&e.action)}</td>
                                    <td>{e.target}</td>
                                    <td>{e.reason.unwrap_or_default()}</td>
                                    <td class="details"><code>{e.details}</code></td>
                                </tr>
                            }}).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
        {next.map(|href| view! { <p><a class="button secondary" href=href>{t(Msg::OlderEntries)}</a></p> })}
    }
}
