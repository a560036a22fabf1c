//! A share's code table (`/admin/t/{tenant}/s/{share}/codes`): filter by
//! state and batch, search by hint or email, keyset pages, and the actions
//! on one code (revoke; unbind with a reason; revoke and replace a leaked
//! bound code).

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use model::CodeState;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{FieldError, FormAlert},
    console::codes::{
        CodeQuery, CodeRow, CodeTable, FindCode, ReplaceCode, RevokeAndReplace, RevokeCode,
        SetCodeExpiry, UnbindCode, list_code_page,
    },
    error::AppError,
    i18n::{code_state, lang, t},
};

#[component]
pub fn CodesPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let query = use_query_map();
    let current = move || {
        let q = query.read();
        let id = |name: &str| q.get(name).and_then(|v| v.parse::<Uuid>().ok());
        CodeQuery {
            state: q.get("state").filter(|s| !s.is_empty()),
            batch: id("batch"),
            q: q.get("q").filter(|s| !s.is_empty()),
            code: id("code"),
            after: id("after"),
            before: id("before"),
        }
    };
    let revoke = ServerAction::<RevokeCode>::new();
    let unbind = ServerAction::<UnbindCode>::new();
    let replace = ServerAction::<ReplaceCode>::new();
    let expiry = ServerAction::<SetCodeExpiry>::new();
    let reissue = ServerAction::<RevokeAndReplace>::new();
    let data = Resource::new(
        move || {
            (
                tenant(),
                share(),
                current(),
                revoke.version().get(),
                unbind.version().get(),
                expiry.version().get(),
                reissue.version().get(),
            )
        },
        |(tenant, share, query, _, _, _, _)| async move {
            match (tenant, share) {
                (Some(t), Some(s)) => {
                    list_code_page(
                        t,
                        s,
                        query.state,
                        query.batch,
                        query.q,
                        query.code,
                        query.after,
                        query.before,
                    )
                    .await
                }
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let (tn, sh) = (tenant(), share());
                let here = format!(
                    "/admin/t/{}/s/{}/codes",
                    tn.map(|id| id.to_string()).unwrap_or_default(),
                    sh.map(|id| id.to_string()).unwrap_or_default()
                );
                match (data.await, tn, sh) {
                    (Ok(table), Some(tenant), Some(share)) => view! {
                        <Table table tenant share query=current() actions=Actions { revoke, unbind, replace, expiry, reissue }/>
                    }.into_any(),
                    (Ok(_), _, _) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _, _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// What an admin does to one code, from its row.
#[derive(Clone, Copy)]
struct Actions {
    revoke: ServerAction<RevokeCode>,
    unbind: ServerAction<UnbindCode>,
    replace: ServerAction<ReplaceCode>,
    expiry: ServerAction<SetCodeExpiry>,
    /// Revoke and replace (a leaked bound code).
    reissue: ServerAction<RevokeAndReplace>,
}

#[component]
fn Table(
    table: CodeTable,
    tenant: Uuid,
    share: Uuid,
    query: CodeQuery,
    actions: Actions,
) -> impl IntoView {
    let Actions {
        revoke,
        unbind,
        replace,
        expiry,
        reissue,
    } = actions;
    let base = format!("/admin/t/{tenant}/s/{share}/codes");
    let error = Signal::derive(move || {
        unbind
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| revoke.value().get().and_then(Result::err))
            .or_else(|| replace.value().get().and_then(Result::err))
            .or_else(|| expiry.value().get().and_then(Result::err))
            .or_else(|| reissue.value().get().and_then(Result::err))
    });
    let filters = query.filters();
    let page_link = |cursor: String| {
        if filters.is_empty() {
            format!("{base}?{cursor}")
        } else {
            format!("{base}?{filters}&{cursor}")
        }
    };
    let next = table
        .next_after
        .map(|after| page_link(format!("after={after}")));
    let previous = table
        .previous_before
        .map(|before| page_link(format!("before={before}")));
    let csv = if filters.is_empty() {
        format!("{base}.csv")
    } else {
        format!("{base}.csv?{filters}")
    };
    let shown = table.codes.len() as i64;
    let totals = if table.total == 0 {
        String::new()
    } else {
        let last = table.first_row + shown - 1;
        lang().format(
            Msg::OfCodes,
            &[
                ("first_row", &table.first_row),
                ("last", &last),
                ("total", &table.total),
            ],
        )
    };
    let find = ServerAction::<FindCode>::new();
    let find_error = Signal::derive(move || find.value().get().and_then(Result::err));
    let state_option = |state: Option<CodeState>| {
        let value = state.map_or("", CodeState::as_str);
        let selected = query.state.as_deref().unwrap_or("") == value;
        let label = state.map_or(t(Msg::Any), code_state);
        view! { <option value=value selected=selected>{label}</option> }
    };
    view! {
        <Title text=lang().format(Msg::Codes, &[("share_title", &table.share_title)])/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::CodesOf)}<a href=format!("/admin/t/{tenant}/s/{share}")>{table.share_title.clone()}</a></h1>
        <form method="get" action=base.clone() class="filters">
            <div class="field">
                <label for="state">{t(Msg::State)}</label>
                <select id="state" name="state">
                    {state_option(None)}
                    {CodeState::ALL.iter().map(|&state| state_option(Some(state))).collect_view()}
                </select>
            </div>
            <div class="field">
                <label for="batch">{t(Msg::Batch)}</label>
                <select id="batch" name="batch">
                    <option value="">{t(Msg::Any)}</option>
                    {table.batches.iter().map(|b| {
                        let label = if b.label.is_empty() { format!("{} ({})", b.created, b.count) } else { b.label.clone() };
                        view! { <option value=b.id.to_string() selected=query.batch == Some(b.id)>{label}</option> }
                    }).collect_view()}
                </select>
            </div>
            <div class="field">
                <label for="q">{t(Msg::HintOrEmail)}</label>
                <input id="q" name="q" type="search" value=query.q.clone().unwrap_or_default() placeholder=t(Msg::AbYzOrAda)/>
            </div>
            <button type="submit" class="button secondary">{t(Msg::Filter)}</button>
        </form>
        <ActionForm action=find attr:class="filters find-code">
            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
            <div class="field">
                <label for="find-code">{t(Msg::FindAFullCode)}</label>
                <input id="find-code" name="code" required=true autocomplete="off" spellcheck="false"
                    placeholder="ABCD-2345-WXYZ"/>
            </div>
            <button type="submit" class="button secondary">{t(Msg::Find)}</button>
        </ActionForm>
        <FieldError error=find_error field="code"/>
        {query.code.map(|_| view! {
            <p class="muted">{t(Msg::ShowingTheCodeYouLookedUp)}
                <a href=base.clone()>{t(Msg::ShowAllCodes)}</a></p>
        })}
        <p class="table-summary">
            <span>{totals}</span>" "
            <a href=csv download="">{t(Msg::DownloadTheseCodesCsv)}</a>
        </p>
        <FormAlert error/>
        <FieldError error field="reason"/>
        <FieldError error field="after"/>
        <FieldError error field="confirm"/>
        <FieldError error field="expires_at"/>
        {if table.codes.is_empty() {
            view! { <p class="muted">{t(Msg::NoCodesMatch)}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data codes">
                        <thead><tr>
                            <th>{t(Msg::Hint)}</th>
                            <th>{t(Msg::State)}</th>
                            <th>{t(Msg::Learner)}</th>
                            <th>{t(Msg::FirstAccess)}</th>
                            <th>{t(Msg::Accesses4)}</th>
                            <th>{t(Msg::Batch)}</th>
                            <th>{t(Msg::Expires)}</th>
                            <th>{t(Msg::Actions)}</th>
                        </tr></thead>
                        <tbody>
                            {table.codes.into_iter().map(|code| view! {
                                <Row code tenant actions time_zone=table.time_zone.clone() read_only=table.read_only/>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
        {(previous.is_some() || next.is_some()).then(|| view! {
            <nav class="pager" aria-label=t(Msg::Pages)>
                {previous.map(|href| view! { <a class="button secondary" href=href rel="prev">{t(Msg::PreviousPage)}</a> })}
                {next.map(|href| view! { <a class="button secondary" href=href rel="next">{t(Msg::NextPage)}</a> })}
            </nav>
        })}
    }
}

#[component]
fn Row(
    code: CodeRow,
    tenant: Uuid,
    actions: Actions,
    /// The tenant's time zone, for the expiry input's label.
    time_zone: String,
    /// Support: the row has no actions.
    read_only: bool,
) -> impl IntoView {
    let Actions {
        revoke,
        unbind,
        replace,
        expiry,
        reissue,
    } = actions;
    // An unused code's date can change (an expired one's too: that is how
    // it comes back); a bound code keeps working whatever its date.
    let datable = !read_only && matches!(code.state, CodeState::Unused | CodeState::Expired);
    let expiry_label = lang().format(Msg::ChangeExpiryOfCode, &[("hint", &code.hint)]);
    let expiry_input_id = format!("expires-{}", code.id);
    // Support reads the table; the actions are the others' (the server
    // refuses them anyway).
    let unused = !read_only && code.state == CodeState::Unused;
    let revoke_label = lang().format(Msg::RevokeCode, &[("hint", &code.hint)]);
    let replace_label = lang().format(Msg::ReplaceLostCode, &[("hint", &code.hint)]);
    let confirm_id = format!("confirm-{}", code.id);
    let learner = code.bound_email.clone().unwrap_or_default();
    let confirm_text = lang().format(Msg::IUnderstandThatLosesAccessTo, &[("learner", &learner)]);
    let bound = !read_only && code.state == CodeState::Bound;
    let revoke_confirm_text =
        lang().format(Msg::IUnderstandThatLosesAccessTo2, &[("learner", &learner)]);
    let live = !read_only && code.state != CodeState::Revoked;
    let revoke_bound_label = revoke_label.clone();
    let revoke_button_label = revoke_label.clone();
    let reason_id = format!("reason-{}", code.id);
    let after_id = format!("after-{}", code.id);
    let reissue_reason_id = format!("reissue-reason-{}", code.id);
    let reissue_label = lang().format(Msg::RevokeAndReplaceCode, &[("hint", &code.hint)]);
    let reissue_confirm_text = lang().format(
        Msg::TheCodeStopsWorkingFor,
        &[("hint", &code.hint), ("learner", &learner)],
    );
    view! {
        <tr data-code=code.id.to_string() data-state=code.state.as_str()>
            <td><code>{code.hint.clone()}</code></td>
            <td><span class=format!("status status-{}", code.state)>{code_state(code.state)}</span></td>
            <td>
                {code.bound_email.clone().unwrap_or_default()}
                // Who else the code concerns: the one address it binds to
                // (while nobody holds it), the learner a refund released.
                {code.addressed_to.clone().filter(|_| code.bound_email.is_none() && code.state != CodeState::Revoked).map(|address| view! {
                    <span class="muted code-addressed">{lang().format(Msg::CodeAddressedTo, &[("address", &address)])}</span>
                })}
                {code.former_email.clone().map(|former| view! {
                    <span class="muted code-former">{lang().format(Msg::CodeReleasedFrom, &[("learner", &former)])}</span>
                })}
            </td>
            <td>{code.first_used.clone().unwrap_or_default()}</td>
            <td>{code.access_count}</td>
            <td>{code.batch.clone()}</td>
            <td>{code.expires.clone().unwrap_or_else(|| t(Msg::Never).to_owned())}</td>
            <td class="row-actions">
                // An unused code goes in one click; a bound one takes the
                // learner's access away, so it asks first, like unbinding.
                {(live && !bound).then(|| view! {
                    <ActionForm action=revoke attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="code_id" value=code.id.to_string()/>
                        <button type="submit" class="link-button danger-link"
                            aria-label=revoke_label>{t(Msg::Revoke)}</button>
                    </ActionForm>
                })}
                {(live && bound).then(|| view! {
                    <details class="confirm-action">
                        <summary aria-label=revoke_bound_label>{t(Msg::Revoke2)}</summary>
                        <ActionForm action=revoke attr:class="form compact">
                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                            <input type="hidden" name="code_id" value=code.id.to_string()/>
                            <label class="check">
                                <input type="checkbox" name="confirm" value="yes" required=true/>
                                " "{revoke_confirm_text}
                            </label>
                            <button type="submit" class="button small danger"
                                aria-label=revoke_button_label>{t(Msg::Revoke)}</button>
                        </ActionForm>
                    </details>
                })}
                {unused.then(|| view! {
                    <ActionForm action=replace attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <input type="hidden" name="code_id" value=code.id.to_string()/>
                        <button type="submit" class="link-button"
                            aria-label=replace_label>{t(Msg::Replace)}</button>
                    </ActionForm>
                })}
                {datable.then(|| view! {
                    <details class="expiry">
                        <summary aria-label=expiry_label>{t(Msg::ExpiryDate)}</summary>
                        <ActionForm action=expiry attr:class="form compact">
                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                            <input type="hidden" name="code_id" value=code.id.to_string()/>
                            <label for=expiry_input_id.clone()>{lang().format(Msg::CodeExpiresAt, &[("time_zone", &time_zone)])}</label>
                            <input id=expiry_input_id type="datetime-local" name="expires_at" value=code.expires_input.clone()/>
                            <p class="hint">{t(Msg::EmptyTheBatchDateApplies)}</p>
                            <button type="submit" class="button small">{t(Msg::Save)}</button>
                        </ActionForm>
                    </details>
                })}
                {bound.then(|| view! {
                    <details class="unbind">
                        <summary>{t(Msg::Unbind)}</summary>
                        <ActionForm action=unbind attr:class="form compact">
                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                            <input type="hidden" name="code_id" value=code.id.to_string()/>
                            <label for=reason_id.clone()>{t(Msg::ReasonTheLearnerLosesAccess)}</label>
                            <input id=reason_id name="reason" required=true maxlength="500"/>
                            <label for=after_id.clone()>{t(Msg::AfterwardsTheCode)}</label>
                            <select id=after_id name="after">
                                <option value="usable">{t(Msg::CanBeUsedAgain)}</option>
                                <option value="revoked">{t(Msg::StaysRevoked)}</option>
                            </select>
                            <label class="check">
                                <input id=confirm_id type="checkbox" name="confirm" value="yes" required=true/>
                                " "{confirm_text}
                            </label>
                            <button type="submit" class="button small danger">{t(Msg::Unbind2)}</button>
                        </ActionForm>
                    </details>
                    // A leaked code: the text stops working, the learner
                    // keeps their access under a new code.
                    <details class="reissue">
                        <summary aria-label=reissue_label>{t(Msg::RevokeAndReplace)}</summary>
                        <ActionForm action=reissue attr:class="form compact">
                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                            <input type="hidden" name="code_id" value=code.id.to_string()/>
                            <label for=reissue_reason_id.clone()>{t(Msg::ReasonTheLearnerReadsIt)}</label>
                            <input id=reissue_reason_id name="reason" required=true maxlength="500"
                                value=t(Msg::ItsTextWasSharedWith)/>
                            <label class="check">
                                <input type="checkbox" name="confirm" value="yes" required=true/>
                                " "{reissue_confirm_text}
                            </label>
                            <button type="submit" class="button small danger">{t(Msg::RevokeAndReplace)}</button>
                        </ActionForm>
                    </details>
                })}
            </td>
        </tr>
    }
}
