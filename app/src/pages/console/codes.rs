//! A share's code table (`/admin/t/{tenant}/s/{share}/codes`): filter by
//! state and batch, search by hint or email, keyset pages, and the actions
//! on one code (revoke; unbind with a reason).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    admin::{CodeRow, CodeTable, ReplaceCode, RevokeCode, UnbindCode, list_code_page},
    components::form::FormAlert,
    error::AppError,
};

#[derive(Clone, Debug, PartialEq, Eq)]
struct Query {
    state: Option<String>,
    batch: Option<Uuid>,
    q: Option<String>,
    after: Option<Uuid>,
}

#[component]
pub fn CodesPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let query = use_query_map();
    let current = move || {
        let q = query.read();
        Query {
            state: q.get("state").filter(|s| !s.is_empty()),
            batch: q.get("batch").and_then(|b| b.parse().ok()),
            q: q.get("q").filter(|s| !s.is_empty()),
            after: q.get("after").and_then(|a| a.parse().ok()),
        }
    };
    let revoke = ServerAction::<RevokeCode>::new();
    let unbind = ServerAction::<UnbindCode>::new();
    let replace = ServerAction::<ReplaceCode>::new();
    let data = Resource::new(
        move || {
            (
                tenant(),
                share(),
                current(),
                revoke.version().get(),
                unbind.version().get(),
            )
        },
        |(tenant, share, query, _, _)| async move {
            match (tenant, share) {
                (Some(t), Some(s)) => {
                    list_code_page(t, s, query.state, query.batch, query.q, query.after).await
                }
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let (t, s) = (tenant(), share());
                let here = format!(
                    "/admin/t/{}/s/{}/codes",
                    t.map(|t| t.to_string()).unwrap_or_default(),
                    s.map(|s| s.to_string()).unwrap_or_default()
                );
                match (data.await, t, s) {
                    (Ok(table), Some(tenant), Some(share)) => view! {
                        <Table table tenant share query=current() revoke unbind replace/>
                    }.into_any(),
                    (Ok(_), _, _) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _, _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Table(
    table: CodeTable,
    tenant: Uuid,
    share: Uuid,
    query: Query,
    revoke: ServerAction<RevokeCode>,
    unbind: ServerAction<UnbindCode>,
    replace: ServerAction<ReplaceCode>,
) -> impl IntoView {
    let base = format!("/admin/t/{tenant}/s/{share}/codes");
    let error = Signal::derive(move || {
        unbind
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| revoke.value().get().and_then(Result::err))
            .or_else(|| replace.value().get().and_then(Result::err))
    });
    let next = table.next_after.map(|after| {
        let mut href = format!("{base}?after={after}");
        if let Some(state) = &query.state {
            href.push_str(&format!("&state={state}"));
        }
        if let Some(batch) = query.batch {
            href.push_str(&format!("&batch={batch}"));
        }
        if let Some(q) = &query.q {
            href.push_str(&format!("&q={}", crate::pages::login::urlencode(q)));
        }
        href
    });
    let state_option = |value: &'static str, label: &'static str| {
        let selected = query.state.as_deref() == Some(value);
        view! { <option value=value selected=selected>{label}</option> }
    };
    view! {
        <Title text=format!("Codes · {}", table.share_title)/>
        <ConsoleNav tenant/>
        <h1>"Codes of " <a href=format!("/admin/t/{tenant}/s/{share}")>{table.share_title.clone()}</a></h1>
        <form method="get" action=base.clone() class="filters">
            <div class="field">
                <label for="state">"State"</label>
                <select id="state" name="state">
                    {state_option("", "Any")}
                    {state_option("unused", "Unused")}
                    {state_option("bound", "Bound")}
                    {state_option("revoked", "Revoked")}
                </select>
            </div>
            <div class="field">
                <label for="batch">"Batch"</label>
                <select id="batch" name="batch">
                    <option value="">"Any"</option>
                    {table.batches.iter().map(|b| {
                        let label = if b.label.is_empty() { format!("{} ({})", b.created, b.count) } else { b.label.clone() };
                        view! { <option value=b.id.to_string() selected=query.batch == Some(b.id)>{label}</option> }
                    }).collect_view()}
                </select>
            </div>
            <div class="field">
                <label for="q">"Hint or email"</label>
                <input id="q" name="q" type="search" value=query.q.clone().unwrap_or_default() placeholder="AB…YZ or ada@"/>
            </div>
            <button type="submit" class="button secondary">"Filter"</button>
        </form>
        <FormAlert error/>
        {if table.codes.is_empty() {
            view! { <p class="muted">"No codes match."</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data codes">
                        <thead><tr><th>"Hint"</th><th>"State"</th><th>"Learner"</th><th>"First access"</th><th>"Accesses"</th><th>"Batch"</th><th>"Actions"</th></tr></thead>
                        <tbody>
                            {table.codes.into_iter().map(|code| view! { <Row code tenant revoke unbind replace/> }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
        {next.map(|href| view! { <p><a class="button secondary" href=href>"Next page"</a></p> })}
    }
}

#[component]
fn Row(
    code: CodeRow,
    tenant: Uuid,
    revoke: ServerAction<RevokeCode>,
    unbind: ServerAction<UnbindCode>,
    replace: ServerAction<ReplaceCode>,
) -> impl IntoView {
    let unused = code.state == "unused";
    let revoke_label = format!("Revoke code {}", code.hint);
    let replace_label = format!("Replace lost code {}", code.hint);
    let bound = code.state == "bound";
    let live = code.state != "revoked";
    let reason_id = format!("reason-{}", code.id);
    let after_id = format!("after-{}", code.id);
    view! {
        <tr data-code=code.id.to_string() data-state=code.state.clone()>
            <td><code>{code.hint.clone()}</code></td>
            <td><span class=format!("status status-{}", code.state)>{code.state.clone()}</span></td>
            <td>{code.bound_email.clone().unwrap_or_default()}</td>
            <td>{code.first_used.clone().unwrap_or_default()}</td>
            <td>{code.access_count}</td>
            <td>{code.batch.clone()}</td>
            <td class="row-actions">
                {live.then(|| view! {
                    <ActionForm action=revoke attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="code_id" value=code.id.to_string()/>
                        <button type="submit" class="link-button danger-link"
                            aria-label=revoke_label>"Revoke"</button>
                    </ActionForm>
                })}
                {unused.then(|| view! {
                    <ActionForm action=replace attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="code_id" value=code.id.to_string()/>
                        <button type="submit" class="link-button"
                            aria-label=replace_label>"Replace"</button>
                    </ActionForm>
                })}
                {bound.then(|| view! {
                    <details class="unbind">
                        <summary>"Unbind…"</summary>
                        <ActionForm action=unbind attr:class="form compact">
                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                            <input type="hidden" name="code_id" value=code.id.to_string()/>
                            <label for=reason_id.clone()>"Reason (the learner loses access)"</label>
                            <input id=reason_id name="reason" required=true maxlength="500"/>
                            <label for=after_id.clone()>"Afterwards the code"</label>
                            <select id=after_id name="after">
                                <option value="usable">"can be used again"</option>
                                <option value="revoked">"stays revoked"</option>
                            </select>
                            <button type="submit" class="button small danger">"Unbind"</button>
                        </ActionForm>
                    </details>
                })}
            </td>
        </tr>
    }
}
