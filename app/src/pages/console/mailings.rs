//! A mailable batch's codes sent by mail
//! (`/admin/t/{tenant}/s/{share}/batches/{batch}/mail`): paste a list (or
//! a CSV), check it (what would be sent, what is wrong with it, nothing
//! sent), send it; then each recipient's state (queued, sent, failed,
//! redeemed, revoked) with the SMTP server's answer, and resend or
//! revoke-and-resend for one of them.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{FieldError, FormAlert},
    console::mailings::{
        MailingView, RecipientRow, ResendMail, RevokeAndResendMail, SendByMail, SendReportView,
        mailing,
    },
    error::AppError,
    i18n::{Lang, Msg, lang, number, t},
};

#[component]
pub fn MailingPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let batch = param_id("batch");
    let query = use_query_map();
    let after = move || query.read().get("after");
    let send = ServerAction::<SendByMail>::new();
    let resend = ServerAction::<ResendMail>::new();
    let revoke = ServerAction::<RevokeAndResendMail>::new();
    // Bumped by the Refresh link: recipients change as mails go and codes
    // are redeemed, and a link to the page itself would not read it again.
    let refresh = RwSignal::new(0u32);
    // One row action speaks at a time: starting one clears what the other
    // said (an old refusal must not stand beside a new success).
    Effect::new(move |_| {
        if resend.pending().get() {
            revoke.value().set(None);
        }
    });
    Effect::new(move |_| {
        if revoke.pending().get() {
            resend.value().set(None);
        }
    });
    let data = Resource::new(
        move || {
            (
                (tenant(), share(), batch(), after()),
                (
                    send.version().get(),
                    resend.version().get(),
                    revoke.version().get(),
                    refresh.get(),
                ),
            )
        },
        |((tenant, share, batch, after), _)| async move {
            match (tenant, share, batch) {
                (Some(t), Some(s), Some(b)) => mailing(t, s, b, after).await,
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/s/{}",
                    tenant().map(|t| t.to_string()).unwrap_or_default(),
                    share().map(|s| s.to_string()).unwrap_or_default()
                );
                match (data.await, tenant(), share(), batch()) {
                    (Ok(view), Some(tenant), Some(share), Some(batch)) => view! {
                        <Mailing view ids=Ids { tenant, share, batch } back=here actions=Actions { send, resend, revoke, refresh }/>
                    }.into_any(),
                    (Ok(_), ..) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), ..) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[derive(Clone, Copy)]
struct Ids {
    tenant: Uuid,
    share: Uuid,
    batch: Uuid,
}

/// The page's actions, and its refresh counter.
#[derive(Clone, Copy)]
struct Actions {
    send: ServerAction<SendByMail>,
    resend: ServerAction<ResendMail>,
    revoke: ServerAction<RevokeAndResendMail>,
    refresh: RwSignal<u32>,
}

#[component]
fn Mailing(view: MailingView, ids: Ids, back: String, actions: Actions) -> impl IntoView {
    let Ids {
        tenant,
        share,
        batch,
    } = ids;
    let Actions {
        send,
        resend,
        revoke,
        refresh,
    } = actions;
    let error = Signal::derive(move || send.value().get().and_then(Result::err));
    let row_error = Signal::derive(move || {
        resend
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| revoke.value().get().and_then(Result::err))
    });
    let report = move || send.value().get().and_then(Result::ok);
    let redone = move || match (resend.value().get(), revoke.value().get()) {
        (Some(Ok(done)), _) => Some(done.said(false)),
        (_, Some(Ok(done))) => Some(done.said(true)),
        _ => None,
    };
    let name = if view.batch_label.is_empty() {
        t(Msg::NoLabelBatch).to_owned()
    } else {
        view.batch_label.clone()
    };
    let may_send = view.may_send && view.mailable;
    let here = format!("/admin/t/{tenant}/s/{share}/batches/{batch}/mail");
    view! {
        <Title text=t(Msg::SendCodesByMail)/>
        <ConsoleNav tenant/>
        <p><a href=back>{t(Msg::BackToTheShare)}</a></p>
        <h1>{t(Msg::SendCodesByMail)}</h1>
        <p class="muted" data-free=view.free.to_string()>
            {lang().format(Msg::MailingBatchFree, &[
                ("batch_name", &name),
                ("count", &number(i64::from(view.count))),
                ("free", &number(view.free)),
            ])}
        </p>
        {(!view.mailable).then(|| view! {
            <div class="flash error" role="alert">{t(Msg::MailingNotMailableBatch)}</div>
        })}
        {may_send.then(|| view! {
            <section class="card">
                <h2>{t(Msg::MailingTheList)}</h2>
                <FormAlert error/>
                <ActionForm action=send attr:class="form mailing-form">
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <input type="hidden" name="share_id" value=share.to_string()/>
                    <input type="hidden" name="batch_id" value=batch.to_string()/>
                    <div class="field">
                        <label for="addresses">{t(Msg::MailingAddresses)}</label>
                        <textarea id="addresses" name="addresses" rows="8" required=true
                            spellcheck="false" autocomplete="off"
                            aria-describedby="addresses-hint addresses-error"></textarea>
                        <p class="hint" id="addresses-hint">{t(Msg::MailingAddressesHint)}</p>
                        <FieldError error field="addresses"/>
                    </div>
                    <label class="check">
                        <input type="checkbox" name="addressed" value="yes" checked=true/>
                        {t(Msg::MailingAddressed)}
                    </label>
                    <div class="field">
                        <label for="mail-lang">{t(Msg::MailingLanguage)}</label>
                        <select id="mail-lang" name="lang">
                            <option value="" selected=true>{t(Msg::MailingEachRecipientsOwn)}</option>
                            {Lang::ALL.iter().map(|l| view! {
                                <option value=l.tag()>{l.name()}</option>
                            }).collect_view()}
                        </select>
                    </div>
                    <div class="actions">
                        <button type="submit" name="intent" value="check" class="button secondary"
                            disabled=move || send.pending().get()>{t(Msg::MailingCheck)}</button>
                        <button type="submit" name="intent" value="send" class="button"
                            disabled=move || send.pending().get()>{t(Msg::MailingSend)}</button>
                    </div>
                </ActionForm>
                {move || report().map(|r| view! { <Report report=r/> })}
                <ListFile tenant share batch/>
            </section>
        })}
        <section class="card">
            <h2>{t(Msg::MailingRecipients)}</h2>
            // Without JavaScript the link loads the page again; hydrated, it
            // reads the recipients again in place.
            <p><a href=here.clone() class="button small secondary" on:click=move |ev| {
                ev.prevent_default();
                refresh.update(|n| *n = n.wrapping_add(1));
            }>{t(Msg::Refresh)}</a></p>
            {move || redone().map(|said| view! { <div class="flash success" role="status">{said}</div> })}
            <FormAlert error=row_error/>
            <FieldError error=row_error field="confirm"/>
            {if view.recipients.is_empty() {
                view! { <p class="muted empty">{t(Msg::NoneYet)}</p> }.into_any()
            } else {
                let may_act = view.may_send;
                view! {
                    <div class="table-wrap">
                        <table class="data recipients">
                            <thead><tr>
                                <th>{t(Msg::Email)}</th><th>{t(Msg::Code)}</th>
                                <th>{t(Msg::Status)}</th><th>{t(Msg::MailingMailed)}</th>
                                {may_act.then(|| view! { <th>{t(Msg::Actions)}</th> })}
                            </tr></thead>
                            <tbody>
                                {view.recipients.into_iter().map(|row| view! {
                                    <Recipient row tenant may_act resend revoke/>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
            {view.next_after.map(|after| view! {
                <p><a href=format!("{here}?after={}", urlencoding_lite(&after))>{t(Msg::NextPage)}</a></p>
            })}
        </section>
    }
}

/// The address a page starts after, as a query value (`@` and `+` are
/// what addresses hold that a query would read otherwise).
fn urlencoding_lite(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' | '~' => c.to_string(),
            other => {
                let mut buf = [0u8; 4];
                other
                    .encode_utf8(&mut buf)
                    .bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect()
            }
        })
        .collect()
}

/// The list as a file (a CSV of thousands, as exported from a shop or a
/// spreadsheet): a plain multipart post, so it works without JavaScript,
/// answered by this page again with what came of it
/// (`server/src/routes/console/mailing_file.rs`). Its controls are named
/// apart from the pasted list's (a screen reader, and a test, tell "Check
/// the file" from "Check the list").
#[component]
fn ListFile(tenant: Uuid, share: Uuid, batch: Uuid) -> impl IntoView {
    view! {
        <form method="post" enctype="multipart/form-data" class="form mailing-file" id="list-file"
            action=format!("/admin/t/{tenant}/s/{share}/batches/{batch}/mail/file")>
            <h3>{t(Msg::MailingListFile)}</h3>
            <div class="field">
                <label for="list-file-input">{t(Msg::MailingFile)}</label>
                <input id="list-file-input" name="file" type="file" required=true
                    accept=".csv,.txt,text/csv,text/plain" aria-describedby="list-file-hint"/>
                <p class="hint" id="list-file-hint">{t(Msg::MailingFileHint)}</p>
            </div>
            <label class="check">
                <input type="checkbox" name="addressed" value="yes" checked=true/>
                {t(Msg::MailingAddressed)}
            </label>
            <div class="field">
                <label for="file-lang">{t(Msg::MailingLanguage)}</label>
                <select id="file-lang" name="lang">
                    <option value="" selected=true>{t(Msg::MailingEachRecipientsOwn)}</option>
                    {Lang::ALL.iter().map(|l| view! {
                        <option value=l.tag()>{l.name()}</option>
                    }).collect_view()}
                </select>
            </div>
            <div class="actions">
                <button type="submit" name="intent" value="check" class="button secondary">{t(Msg::MailingCheckFile)}</button>
                <button type="submit" name="intent" value="send" class="button">{t(Msg::MailingSendFile)}</button>
            </div>
        </form>
    }
}

#[component]
fn Report(report: SendReportView) -> impl IntoView {
    view! {
        <div class="flash success mailing-report" role="status"
            data-checked=report.checked_only.to_string() data-to-send=report.to_send.to_string() data-sent=report.sent.to_string()>
            {report.said().into_iter().map(|line| view! { <p>{line}</p> }).collect_view()}
        </div>
    }
}

#[component]
fn Recipient(
    row: RecipientRow,
    tenant: Uuid,
    may_act: bool,
    resend: ServerAction<ResendMail>,
    revoke: ServerAction<RevokeAndResendMail>,
) -> impl IntoView {
    let state = crate::i18n::recipient_state(&row.state);
    let live = matches!(row.state.as_str(), "queued" | "sent" | "failed");
    let redeemed = row.state == "redeemed";
    let code = row.code_id.to_string();
    let resend_label = lang().format(Msg::MailingResendTo, &[("email", &row.email)]);
    let revoke_label = lang().format(Msg::MailingRevokeAndResendTo, &[("email", &row.email)]);
    let resend_form = (may_act && live).then(|| {
        let code = code.clone();
        view! {
            <ActionForm action=resend attr:class="inline-form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="code_id" value=code/>
                <button type="submit" class="button small secondary" aria-label=resend_label
                    disabled=move || resend.pending().get()>
                    {t(Msg::MailingResend)}
                </button>
            </ActionForm>
        }
    });
    let revoke_form = (may_act && !redeemed).then(|| view! {
        <details class="confirm-action">
            <summary aria-label=revoke_label>{t(Msg::MailingRevokeAndResend)}</summary>
            <ActionForm action=revoke attr:class="form compact">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="code_id" value=code/>
                <label class="check">
                    <input type="checkbox" name="confirm" value="yes" required=true/>
                    {t(Msg::ConfirmTheMailedCodeStopsWorking)}
                </label>
                <button type="submit" class="button small danger" disabled=move || revoke.pending().get()>
                    {t(Msg::MailingRevokeAndResend)}
                </button>
            </ActionForm>
        </details>
    });
    let email = row.email.clone();
    view! {
        <tr data-recipient=row.email data-state=row.state>
            <td>{email}</td>
            <td class="nowrap">"…"{row.hint}</td>
            <td>
                {state}
                {row.error.map(|e| view! { <br/><span class="muted smtp-error">{e}</span> })}
            </td>
            <td class="nowrap">{row.mailed}{row.sent.map(|s| view! { <br/><span class="muted">{s}</span> })}</td>
            {may_act.then(|| view! { <td>{resend_form}{revoke_form}</td> })}
        </tr>
    }
}
