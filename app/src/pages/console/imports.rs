//! Imported codes in the console: the import form (under the share's
//! codes, `pages/console/share.rs` shows it) and an import's report page
//! (`/admin/t/{tenant}/s/{share}/imports/{batch}`).
//!
//! The form is a plain multipart post (`server/src/routes/console/
//! imports.rs`), answered by a redirect to the report, so it works without
//! JavaScript. Hydrated, the page stays while the browser sends the file
//! and polls the import's progress under the form's ticket, as issuing
//! does.

use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    console::imports::{ImportReportView, import_report},
    error::AppError,
    i18n::{Msg, import_rejection, lang, number, t},
};

/// The letters and digits a foreign format uses unless told otherwise.
const DEFAULT_ALPHABET: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The import form. `ticket` names its progress report.
#[component]
pub fn ImportForm(tenant: Uuid, share: Uuid, ticket: Uuid) -> impl IntoView {
    let importing = RwSignal::new(false);
    let progress = super::share::progress_of(tenant, ticket, importing.into());
    view! {
        <details class="import" id="import">
            <summary>{t(Msg::ImportCodesSummary)}</summary>
            <form method="post" enctype="multipart/form-data" class="form"
                action=format!("/admin/t/{tenant}/s/{share}/import")
                on:submit=move |_| importing.set(true)>
                <input type="hidden" name="ticket" value=ticket.to_string()/>
                <div class="field-row">
                    <div class="field">
                        <label for="import-label">{t(Msg::ImportBatchLabel)}</label>
                        <input id="import-label" name="label" maxlength="120"/>
                    </div>
                    <div class="field">
                        <label for="import-format">{t(Msg::ImportFormat)}</label>
                        <select id="import-format" name="format">
                            <option value="foreign" selected=true>{t(Msg::ImportFormatForeign)}</option>
                            <option value="ours">{t(Msg::ImportFormatOurs)}</option>
                        </select>
                    </div>
                </div>
                <div class="field">
                    <label for="import-alphabet">{t(Msg::ImportAlphabet)}</label>
                    <input id="import-alphabet" name="alphabet" value=DEFAULT_ALPHABET
                        maxlength="200" spellcheck="false"/>
                    <p class="hint">{t(Msg::ImportAlphabetHint)}</p>
                </div>
                <div class="field">
                    <label for="import-file">{t(Msg::ImportFile)}</label>
                    <input id="import-file" name="file" type="file" required=true
                        accept=".csv,.txt,text/csv,text/plain"/>
                    <p class="hint">{t(Msg::ImportFileHint)}</p>
                </div>
                <label class="check">
                    <input type="checkbox" name="header" value="yes"/>
                    {t(Msg::ImportHeader)}
                </label>
                <button type="submit" class="button secondary" disabled=move || importing.get()>
                    {move || if importing.get() { t(Msg::Importing) } else { t(Msg::ImportCodes) }}
                </button>
                {move || importing.get().then(|| {
                    super::share::written(progress.get(), Msg::Importing, "import-progress")
                })}
            </form>
        </details>
    }
}

fn number_u64(n: u64) -> String {
    number(i64::try_from(n).unwrap_or(i64::MAX))
}

#[component]
pub fn ImportReportPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let batch = param_id("batch");
    let data = Resource::new(
        move || (tenant(), share(), batch()),
        |ids| async move {
            match ids {
                (Some(t), Some(s), Some(b)) => import_report(t, s, b).await,
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
                match (data.await, tenant(), batch()) {
                    (Ok(view), Some(tenant), Some(batch)) => {
                        view! { <Report view tenant batch back=here/> }.into_any()
                    }
                    (Ok(_), _, _) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _, _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Report(view: ImportReportView, tenant: Uuid, batch: Uuid, back: String) -> impl IntoView {
    let language = lang();
    let listed = view.first_rejected.len() as u64;
    let more = view.rejected.saturating_sub(listed);
    view! {
        <Title text=t(Msg::ImportReport)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::ImportReport)}": " {view.share_title.clone()}</h1>
        {(!view.label.is_empty()).then(|| view! { <p class="muted">{view.label.clone()}</p> })}
        <p class="flash success" role="status" data-testid="import-summary">
            {language.format(Msg::ImportedOfLines, &[
                ("imported", &number_u64(view.imported)),
                ("lines", &number_u64(view.lines)),
            ])}
        </p>
        <p class="actions">
            <a class="button" href=format!("{back}/codes?batch={batch}")>{t(Msg::SeeTheImportedCodes)}</a>
            <a class="button secondary" href=back.clone()>{t(Msg::BackToTheShare)}</a>
        </p>
        {if view.rejected == 0 {
            view! { <p>{t(Msg::EveryLineImported)}</p> }.into_any()
        } else {
            view! {
                <h2>{t(Msg::LinesLeftOut)}</h2>
                <table class="table" data-testid="import-reasons">
                    <thead><tr><th>{t(Msg::ImportReason)}</th><th>{t(Msg::ImportLines)}</th></tr></thead>
                    <tbody>
                        {view.reasons.iter().map(|(reason, n)| view! {
                            <tr><td>{import_rejection(reason, language)}</td><td>{number_u64(*n)}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
                <ul class="rejected-lines" data-testid="rejected-lines">
                    {view.first_rejected.iter().map(|(line, reason)| view! {
                        <li>{format!("{}: {}", language.format(Msg::ImportLine, &[("line", line)]), import_rejection(reason, language))}</li>
                    }).collect_view()}
                </ul>
                {(more > 0).then(|| view! {
                    <p class="muted">{language.format(Msg::MoreLinesNotListed, &[("more", &number_u64(more))])}</p>
                })}
            }.into_any()
        }}
    }
}
