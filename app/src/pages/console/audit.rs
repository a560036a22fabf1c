//! The tenant's audit log (`/admin/t/{tenant}/audit`): who did what, when,
//! to what, and why; filterable by action, newest first, keyset pages.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    admin::audit::{AuditPage, audit_log},
    error::AppError,
    i18n::{audit_action, t},
};

const ACTIONS: [(&str, &str, &str); 6] = [
    ("", "Everything", "全部"),
    ("share.", "Shares", "课程分享"),
    ("resource.", "Resources", "资源"),
    ("batch.", "Code batches", "兑换码批次"),
    ("code.", "Codes (revoke, unbind)", "兑换码（作废、解绑）"),
    ("code.unbound", "Unbinds only", "仅解绑"),
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
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
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
        <Title text=t("Audit log", "审计日志")/>
        <ConsoleNav tenant/>
        <h1>{t("Audit log", "审计日志")}</h1>
        <form method="get" action=base class="filters">
            <div class="field">
                <label for="action">{t("Show", "显示")}</label>
                <select id="action" name="action">
                    {ACTIONS.iter().map(|(value, en, zh)| view! {
                        <option value=*value selected=action.as_deref().unwrap_or("") == *value>{t(en, zh)}</option>
                    }).collect_view()}
                </select>
            </div>
            <button type="submit" class="button secondary">{t("Filter", "筛选")}</button>
        </form>
        {if page.entries.is_empty() {
            view! { <p class="muted">{t("Nothing recorded yet.", "暂无记录。")}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data audit">
                        <thead><tr><th>{t("When", "时间")}</th><th>{t("Who", "操作人")}</th><th>{t("What", "操作")}</th><th>{t("On", "对象")}</th><th>{t("Why", "原因")}</th><th>{t("Details", "详情")}</th></tr></thead>
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
        {next.map(|href| view! { <p><a class="button secondary" href=href>{t("Older entries", "更早的记录")}</a></p> })}
    }
}
