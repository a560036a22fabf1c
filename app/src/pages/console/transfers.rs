//! Learners' transfer requests (`/admin/t/{tenant}/transfers`): the ones
//! whose receiving account confirmed wait here for an admin, who approves
//! (the code moves now) or refuses with a reason both learners read. The
//! latest other requests follow, with what became of them.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::FormAlert,
    console::transfers::{ApproveTransfer, RefuseTransfer, TransferRow, TransfersView, transfers},
    error::AppError,
    i18n::{lang, t, transfer_status},
};

#[component]
pub fn TransfersPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let approve = ServerAction::<ApproveTransfer>::new();
    let refuse = ServerAction::<RefuseTransfer>::new();
    let data = Resource::new(
        move || (tenant(), approve.version().get(), refuse.version().get()),
        |(tenant, _, _)| async move {
            match tenant {
                Some(t) => transfers(t).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!("/admin/t/{}/transfers", tenant().map(|t| t.to_string()).unwrap_or_default());
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => view! { <Transfers view tenant approve refuse/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Transfers(
    view: TransfersView,
    tenant: Uuid,
    approve: ServerAction<ApproveTransfer>,
    refuse: ServerAction<RefuseTransfer>,
) -> impl IntoView {
    let error = Signal::derive(move || {
        approve
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| refuse.value().get().and_then(Result::err))
    });
    let may_decide = view.may_decide;
    view! {
        <Title text=t(Msg::TransferRequests)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::TransferRequests)}</h1>
        <p class="muted">{t(Msg::ALearnerWhoHoldsACode)}</p>
        <FormAlert error/>
        <section class="card transfers-waiting">
            <h2>{t(Msg::WaitingForYourDecision)}</h2>
            {if view.waiting.is_empty() {
                view! { <p class="muted empty">{t(Msg::NoRequestIsWaiting)}</p> }.into_any()
            } else {
                view.waiting.into_iter().map(|row| view! {
                    <Waiting row tenant may_decide approve refuse/>
                }).collect_view().into_any()
            }}
        </section>
        <section class="card">
            <h2>{t(Msg::LatestRequests)}</h2>
            {if view.others.is_empty() {
                view! { <p class="muted empty">{t(Msg::NoneYet)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="data transfers">
                            <thead><tr>
                                <th>{t(Msg::Course)}</th><th>{t(Msg::From)}</th><th>{t(Msg::To)}</th>
                                <th>{t(Msg::Asked)}</th><th>{t(Msg::Status)}</th>
                            </tr></thead>
                            <tbody>
                                {view.others.into_iter().map(|row| view! {
                                    <tr data-transfer=row.id.to_string() data-status=row.status.as_str()>
                                        <td>{row.course}<br/><span class="muted">"…"{row.code_hint}</span></td>
                                        <td>{row.from_email}</td>
                                        <td>{row.to_email}</td>
                                        <td class="nowrap">{row.asked}</td>
                                        <td>
                                            {transfer_status(row.status)}
                                            {row.decided.map(|at| view! { <br/><span class="muted nowrap">{at}</span> })}
                                            {row.decided_by.map(|by| view! { <br/><span class="muted">{by}</span> })}
                                            {row.reason.map(|r| view! { <br/><q>{r}</q> })}
                                        </td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn Waiting(
    row: TransferRow,
    tenant: Uuid,
    may_decide: bool,
    approve: ServerAction<ApproveTransfer>,
    refuse: ServerAction<RefuseTransfer>,
) -> impl IntoView {
    let summary = lang().format(
        Msg::AsksToMoveTheirCodeEnding,
        &[
            ("from_email", &row.from_email),
            ("hint", &row.code_hint),
            ("course", &row.course),
            ("to_email", &row.to_email),
        ],
    );
    let id = row.id.to_string();
    let (approve_id, refuse_id) = (id.clone(), id.clone());
    view! {
        <article class="transfer" data-transfer=id data-status=row.status.as_str()>
            <p class="transfer-summary">{summary}</p>
            <p class="muted">
                {lang().format(Msg::AskedConfirmedByTheReceivingAccount, &[("asked", &row.asked), ("confirmed", &row.confirmed.clone().unwrap_or_default())])}
            </p>
            {(!row.note.is_empty()).then(|| view! { <blockquote class="note">{row.note.clone()}</blockquote> })}
            {may_decide.then(|| view! {
                <div class="transfer-actions">
                    <ActionForm action=approve attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="transfer_id" value=approve_id/>
                        <label>{t(Msg::NoteOptional)}" "<input type="text" name="reason" maxlength="500"/></label>
                        <button type="submit" class="button">{t(Msg::ApproveTheMove)}</button>
                    </ActionForm>
                    <ActionForm action=refuse attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="transfer_id" value=refuse_id/>
                        <label>{t(Msg::ReasonShownToBothLearners)}" "<input type="text" name="reason" required=true maxlength="500"/></label>
                        <button type="submit" class="button secondary danger">{t(Msg::Refuse)}</button>
                    </ActionForm>
                </div>
            })}
        </article>
    }
}
