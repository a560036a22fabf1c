//! A share's learners and access records
//! (`/admin/t/{tenant}/s/{share}/learners`): who is bound with which code,
//! since when, how often they came; one learner's records with
//! `?learner=`; every record as a streamed CSV. A learner can be suspended
//! from every course of the tenant (and re-enabled): their binding stays.
//! Where the share gives access for a period, each learner's end shows,
//! and one learner or everyone can be extended to a date.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{FieldError, FormAlert},
    console::learners::{
        ExtendAccess, ExtendAccessAll, LearnerView, LearnersPage as Page, SuspendLearner,
        share_learners,
    },
    error::AppError,
    i18n::{lang, t},
};

#[component]
pub fn LearnersPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let query = use_query_map();
    let selection = move || {
        let q = query.read();
        (
            q.get("learner").and_then(|l| l.parse::<Uuid>().ok()),
            q.get("after").and_then(|a| a.parse::<Uuid>().ok()),
        )
    };
    let actions = Actions {
        suspend: ServerAction::new(),
        extend: ServerAction::new(),
        extend_all: ServerAction::new(),
    };
    let data = Resource::new(
        move || (tenant(), share(), selection(), actions.versions()),
        |(tenant, share, (learner, after), _)| async move {
            match (tenant, share) {
                (Some(t), Some(s)) => share_learners(t, s, learner, after).await,
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let (t, s) = (tenant(), share());
                let here = format!(
                    "/admin/t/{}/s/{}/learners",
                    t.map(|t| t.to_string()).unwrap_or_default(),
                    s.map(|s| s.to_string()).unwrap_or_default()
                );
                match (data.await, t, s) {
                    (Ok(page), Some(tenant), Some(share)) => view! { <Learners page tenant share actions/> }.into_any(),
                    (Ok(_), _, _) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _, _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// What an admin does from the page.
#[derive(Clone, Copy)]
struct Actions {
    suspend: ServerAction<SuspendLearner>,
    extend: ServerAction<ExtendAccess>,
    extend_all: ServerAction<ExtendAccessAll>,
}

impl Actions {
    /// Changes whenever one of them completed: the page reloads.
    fn versions(&self) -> (usize, usize, usize) {
        (
            self.suspend.version().get(),
            self.extend.version().get(),
            self.extend_all.version().get(),
        )
    }
}

#[component]
fn Learners(page: Page, tenant: Uuid, share: Uuid, actions: Actions) -> impl IntoView {
    let Actions {
        suspend,
        extend,
        extend_all,
    } = actions;
    let base = format!("/admin/t/{tenant}/s/{share}/learners");
    let error = Signal::derive(move || {
        suspend
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| extend.value().get().and_then(Result::err))
            .or_else(|| extend_all.value().get().and_then(Result::err))
    });
    let read_only = page.read_only;
    let has_period = page.has_period;
    let until_label = lang().format(Msg::ExtendUntil, &[("time_zone", &page.time_zone)]);
    let row_until_label = until_label.clone();
    view! {
        <Title text=lang().format(Msg::Learners, &[("share_title", &page.share_title)])/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::LearnersOf)} <a href=format!("/admin/t/{tenant}/s/{share}")>{page.share_title.clone()}</a></h1>
        <p class="actions">
            <a class="button secondary" href=format!("/admin/t/{tenant}/s/{share}/learners.csv") download="">{t(Msg::ExportTheLearnersCsv)}</a>
            <a class="button secondary" href=format!("/admin/t/{tenant}/s/{share}/records.csv") download="">{t(Msg::ExportEveryAccessRecordCsv)}</a>
        </p>
        {page.records.map(|(email, records)| view! {
            <section class="card">
                <h2>{t(Msg::AccessRecordsOf)} {email}</h2>
                {if records.is_empty() {
                    view! { <p class="muted">{t(Msg::NoAccessRecorded)}</p> }.into_any()
                } else {
                    view! {
                        <table class="data records">
                            <thead><tr><th>{t(Msg::When)}</th><th>{t(Msg::Resource)}</th><th>{t(Msg::Note)}</th></tr></thead>
                            <tbody>
                                {records.into_iter().map(|r| view! {
                                    <tr>
                                        <td class="nowrap">{r.when}</td>
                                        <td>{r.resource}</td>
                                        <td>{r.bound_now.then_some(t(Msg::FirstAccessCodeBound))}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any()
                }}
            </section>
        })}
        <FormAlert error/>
        <FieldError error field="until"/>
        {(has_period && !read_only && !page.learners.is_empty()).then(|| view! {
            <details class="card extend-all">
                <summary>{t(Msg::ExtendEveryone)}</summary>
                <ActionForm action=extend_all attr:class="form compact">
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <input type="hidden" name="share_id" value=share.to_string()/>
                    <label for="extend-all-until">{until_label}</label>
                    <input id="extend-all-until" type="datetime-local" name="until" required=true/>
                    <p class="hint">{t(Msg::ExtendEveryoneHint)}</p>
                    <button type="submit" class="button small">{t(Msg::Extend)}</button>
                </ActionForm>
            </details>
        })}
        {if page.learners.is_empty() {
            view! { <p class="muted">{t(Msg::NobodyIsBoundYet)}</p> }.into_any()
        } else {
            let base = base.clone();
            view! {
                <div class="table-wrap">
                    <table class="data learners">
                        <thead><tr><th>{t(Msg::Learner)}</th><th>{t(Msg::Code)}</th><th>{t(Msg::BoundSince)}</th><th>{t(Msg::Accesses4)}</th><th>{t(Msg::LastAccess)}</th>
                            {has_period.then(|| view! { <th>{t(Msg::AccessUntil)}</th> })}
                            <th>{t(Msg::AccessToYourCourses)}</th></tr></thead>
                        <tbody>
                            {page.learners.into_iter().map(|l| {
                                let access_end = has_period.then(|| view! {
                                    <AccessEnd learner=l.clone() tenant extend read_only until_label=row_until_label.clone()/>
                                });
                                view! {
                                <tr>
                                    <td><a href=format!("{base}?learner={}", l.principal)>{l.email.clone()}</a></td>
                                    <td><code>{l.hint}</code></td>
                                    <td class="nowrap">{l.bound_at}</td>
                                    <td>{l.accesses}</td>
                                    <td class="nowrap">{l.last_access.clone().unwrap_or_default()}</td>
                                    {access_end}
                                    <td>
                                        {l.suspended.then(|| view! { <span class="status status-revoked">{t(Msg::Suspended)}</span>" " })}
                                        {(!read_only).then(|| view! {
                                        <ActionForm action=suspend attr:class="inline-form">
                                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                            <input type="hidden" name="account_id" value=l.principal.to_string()/>
                                            <input type="hidden" name="suspend" value=if l.suspended { "no" } else { "yes" }/>
                                            <button type="submit" class=if l.suspended { "link-button" } else { "link-button danger-link" }
                                                aria-label=if l.suspended {
                                                    lang().format(Msg::ReEnable, &[("email", &l.email)])
                                                } else {
                                                    lang().format(Msg::Suspend, &[("email", &l.email)])
                                                }>
                                                {if l.suspended { t(Msg::ReEnable2) } else { t(Msg::Suspend2) }}
                                            </button>
                                        </ActionForm>
                                        })}
                                    </td>
                                </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
        {page.next_after.map(|after| view! { <p><a class="button secondary" href=format!("{base}?after={after}")>{t(Msg::NextPage)}</a></p> })}
    }
}

/// A learner's access end, and the form that extends it.
#[component]
fn AccessEnd(
    learner: LearnerView,
    tenant: Uuid,
    extend: ServerAction<ExtendAccess>,
    read_only: bool,
    until_label: String,
) -> impl IntoView {
    let shown = match (&learner.access_ends, learner.access_ended) {
        (Some(when), true) => lang().format(Msg::AccessEndedOnShort, &[("when", when)]),
        (Some(when), false) => when.clone(),
        (None, _) => t(Msg::ForGood).to_owned(),
    };
    let input_id = format!("extend-{}", learner.code_id);
    let label = lang().format(Msg::ExtendAccessOf, &[("learner", &learner.email)]);
    view! {
        <td class="nowrap" data-access-ended=learner.access_ended.to_string()>
            {shown}
            {(!read_only).then(|| view! {
                <details class="extend">
                    <summary aria-label=label>{t(Msg::Extend)}</summary>
                    <ActionForm action=extend attr:class="form compact">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="code_id" value=learner.code_id.to_string()/>
                        <label for=input_id.clone()>{until_label}</label>
                        <input id=input_id type="datetime-local" name="until" required=true/>
                        <button type="submit" class="button small">{t(Msg::Extend)}</button>
                    </ActionForm>
                </details>
            })}
        </td>
    }
}
