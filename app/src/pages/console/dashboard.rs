//! A tenant's dashboard (`/admin/t/{tenant}`): figures, the activity
//! chart, the shares, and a form to create one.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;

use super::{ConsoleError, ConsoleNav, chart::ActivityChart, param_id};
use crate::{
    components::form::{Field, FormAlert},
    console::{
        dashboard::{DashboardView, dashboard},
        share::CreateShare,
    },
    error::AppError,
    i18n::{share_status, t},
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
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
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
        (t(Msg::Shares), view.shares_count),
        (t(Msg::CodesIssued), view.issued),
        (t(Msg::Bound), view.bound),
        (t(Msg::Revoked), view.revoked),
        (t(Msg::Accesses7Days), view.accesses_7d),
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
                <h2>{t(Msg::CodesOtherAccountsKeepTrying)}</h2>
                <p class="muted">{t(Msg::TheseCodesAreBoundYetOther)}</p>
                <div class="table-wrap">
                    <table class="data">
                        <thead><tr><th>{t(Msg::Code)}</th><th>{t(Msg::Share)}</th><th>{t(Msg::Attempts)}</th><th>{t(Msg::LastAttempt)}</th></tr></thead>
                        <tbody>
                            {view.leaks.iter().map(|l| view! {
                                <tr class="leak">
                                    <td><a href=format!("/admin/t/{tenant}/s/{}/codes?code={}", l.share_id, l.code_id)><code>{l.hint.clone()}</code></a></td>
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
            <h2>{t(Msg::Shares)}</h2>
            {if view.shares.is_empty() {
                view! { <p class="muted">{t(Msg::NoSharesYetCreateTheFirst)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="data">
                            <thead><tr><th>{t(Msg::Title)}</th><th>{t(Msg::Status)}</th><th>{t(Msg::Issued)}</th><th>{t(Msg::Bound)}</th><th>{t(Msg::Revoked)}</th><th>{t(Msg::Link)}</th></tr></thead>
                            <tbody>
                                {view.shares.into_iter().map(|s| view! {
                                    <tr>
                                        <td><a href=format!("/admin/t/{tenant}/s/{}", s.id)>{s.title}</a></td>
                                        <td><span class=format!("status status-{}", s.status)>{share_status(s.status)}</span></td>
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
            <h2>{t(Msg::NewShare)}</h2>
            <p class="muted">{t(Msg::AShareStartsAsADraft)}</p>
            <FormAlert error/>
            <ActionForm action=action attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="title" label=t(Msg::Title) error maxlength=200/>
                <OptionalField name="slug" label=t(Msg::LinkNameOptional) hint=t(Msg::LowerCaseLettersDigitsAndDashes2) error/>
                <div class="field">
                    <label for="description">{t(Msg::DescriptionOptional)}</label>
                    <textarea id="description" name="description" rows="3" maxlength="10000"></textarea>
                </div>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::CreateShare)}</button>
            </ActionForm>
        </section>
    }
}

/// A labelled text input that may stay empty.
#[component]
pub fn OptionalField(
    name: &'static str,
    #[prop(into)] label: String,
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
