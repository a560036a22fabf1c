//! A tenant's dashboard (`/admin/t/{tenant}`): figures, the activity
//! chart, the shares, and a form to create one.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{ConsoleError, ConsoleNav, chart::ActivityChart, param_id};
use crate::{
    admin::{CreateShare, DashboardView, dashboard},
    components::form::{Field, FormAlert},
    error::AppError,
};

#[component]
pub fn DashboardPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let data = Resource::new(tenant, |id| async move {
        match id {
            Some(id) => dashboard(id).await,
            None => Err(AppError::NotFound),
        }
    });
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let here = format!("/admin/t/{}", tenant().map(|t| t.to_string()).unwrap_or_default());
                match data.await {
                    Ok(view) => view! { <Dashboard view/> }.into_any(),
                    Err(error) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Dashboard(view: DashboardView) -> impl IntoView {
    let tenant = view.tenant.id;
    let tiles = [
        ("Shares", view.shares_count),
        ("Codes issued", view.issued),
        ("Bound", view.bound),
        ("Revoked", view.revoked),
        ("Accesses, 7 days", view.accesses_7d),
    ];
    view! {
        <Title text=view.tenant.name.clone()/>
        <ConsoleNav tenant/>
        <h1>{view.tenant.name.clone()}</h1>
        <ul class="tiles">
            {tiles.into_iter().map(|(label, n)| view! {
                <li class="tile"><span class="tile-value">{n}</span><span class="tile-label">{label}</span></li>
            }).collect_view()}
        </ul>
        {(!view.leaks.is_empty()).then(|| view! {
            <section class="card leak-alert" role="status">
                <h2>"Codes other accounts keep trying"</h2>
                <p class="muted">"These codes are bound, yet other accounts enter them: they were probably passed around. The learner keeps access; consider contacting them, or unbind and revoke the code."</p>
                <div class="table-wrap">
                    <table class="data">
                        <thead><tr><th>"Code"</th><th>"Share"</th><th>"Attempts"</th><th>"Last attempt"</th></tr></thead>
                        <tbody>
                            {view.leaks.iter().map(|l| view! {
                                <tr class="leak">
                                    <td><a href=format!("/admin/t/{tenant}/s/{}/codes?q={}", l.share_id, crate::pages::login::urlencode(&l.hint))><code>{l.hint.clone()}</code></a></td>
                                    <td>{l.share_title.clone()}</td>
                                    <td>{l.attempts}</td>
                                    <td>{l.last_attempt.clone()}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </section>
        })}
        <ActivityChart days=view.days/>
        <section class="card">
            <h2>"Shares"</h2>
            {if view.shares.is_empty() {
                view! { <p class="muted">"No shares yet: create the first one below."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="data">
                            <thead><tr><th>"Title"</th><th>"Status"</th><th>"Issued"</th><th>"Bound"</th><th>"Revoked"</th><th>"Link"</th></tr></thead>
                            <tbody>
                                {view.shares.into_iter().map(|s| view! {
                                    <tr>
                                        <td><a href=format!("/admin/t/{tenant}/s/{}", s.id)>{s.title}</a></td>
                                        <td><span class=format!("status status-{}", s.status)>{s.status.clone()}</span></td>
                                        <td>{s.issued}</td>
                                        <td>{s.bound}</td>
                                        <td>{s.revoked}</td>
                                        <td><code>{format!("/s/{}", s.slug)}</code></td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
        <NewShareForm tenant/>
    }
}

#[component]
fn NewShareForm(tenant: uuid::Uuid) -> impl IntoView {
    let action = ServerAction::<CreateShare>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>"New share"</h2>
            <p class="muted">"A share starts as a draft: learners see it once you make it active."</p>
            <FormAlert error/>
            <ActionForm action=action attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="title" label="Title" error maxlength=200/>
                <OptionalField name="slug" label="Link name (optional)" hint="Lower-case letters, digits and dashes; made from the title when empty." error/>
                <div class="field">
                    <label for="description">"Description (optional)"</label>
                    <textarea id="description" name="description" rows="3" maxlength="10000"></textarea>
                </div>
                <button type="submit" class="button" disabled=move || action.pending().get()>"Create share"</button>
            </ActionForm>
        </section>
    }
}

/// A labelled text input that may stay empty.
#[component]
pub fn OptionalField(
    name: &'static str,
    label: &'static str,
    #[prop(into)] error: Signal<Option<AppError>>,
    #[prop(optional)] hint: Option<&'static str>,
    #[prop(optional, into)] value: String,
    #[prop(default = "text")] kind: &'static str,
) -> impl IntoView {
    let hint_id = format!("{name}-hint");
    view! {
        <div class="field">
            <label for=name>{label}</label>
            <input id=name name=name type=kind value=value
                aria-invalid=crate::components::form::invalid(error, name)
                aria-describedby=format!("{hint_id} {name}-error")/>
            {hint.map(|hint| view! { <p class="hint" id=hint_id>{hint}</p> })}
            <crate::components::form::FieldError error field=name/>
        </div>
    }
}
