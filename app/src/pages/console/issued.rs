//! The one page that shows a new batch's plain codes
//! (`/admin/t/{tenant}/s/{share}/batches/{batch}`): once, with the CSV
//! download (also once). Reloading shows that they are gone.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    console::issued::{IssuedView, issued_codes},
    error::AppError,
    i18n::{Lang, lang, t},
};

#[component]
pub fn IssuedPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let batch = param_id("batch");
    let data = Resource::new(
        move || (tenant(), share(), batch()),
        |ids| async move {
            match ids {
                (Some(t), Some(s), Some(b)) => issued_codes(t, s, b).await,
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
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => view! { <Issued view tenant back=here/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Issued(view: IssuedView, tenant: uuid::Uuid, back: String) -> impl IntoView {
    view! {
        <Title text=t(Msg::NewCodes)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::NewCodesFor)} {view.share_title.clone()}</h1>
        {match view.codes {
            Some(cards) => {
                let shown = cards.len();
                let printable = cards.iter().any(|c| c.qr_svg.is_some());
                let title = view.share_title.clone();
                let link = view.link.clone();
                // The cards speak the learners' language, which need not be
                // the console's: switched in place (a reload would find the
                // codes gone).
                let card_lang = RwSignal::new(lang());
                view! {
                <div class="flash warning" role="status">
                    {t(Msg::TheseCodesAreShownOnlyNow)}
                    {t(Msg::AfterwardsOnlyTheirFirstAndLast)}
                </div>
                <p class="actions no-print">
                    <a class="button" href=view.csv_url.clone() download="">{t(Msg::DownloadCsvOnce)}</a>
                    {printable.then(|| view! { <PrintButton/> })}
                    <a class="button secondary" href=back.clone()>{t(Msg::BackToTheShare)}</a>
                </p>
                <p class="muted no-print">{lang().format(Msg::CodesFor, &[("total", &view.total)])}<code>{view.link.clone()}</code>
                    {(shown < view.total).then(|| lang().format(Msg::TheFirstAreListedTheCsv, &[("shown", &shown), ("total", &view.total)]))}
                </p>
                <ol class="code-list no-print">
                    {cards.iter().map(|c| view! { <li><code class="plain-code">{c.code.clone()}</code></li> }).collect_view()}
                </ol>
                {printable.then(|| view! {
                    <section class="code-cards" aria-label=t(Msg::PrintableCodeCards)>
                        <h2 class="no-print">{t(Msg::CardsToPrint)}</h2>
                        <p class="muted no-print">{t(Msg::OneCardPerLearnerTheLink)}</p>
                        <CardLanguage card_lang/>
                        {cards.into_iter().map(|c| view! {
                            <article class="code-card" lang=move || card_lang.get().tag()>
                                <h3>{title.clone()}</h3>
                                <div class="qr" inner_html=c.qr_svg.unwrap_or_default()></div>
                                <p class="card-link">{link.clone()}</p>
                                <p class="card-code"><code>{c.code}</code></p>
                                <p class="card-help">{move || card_help(card_lang.get())}</p>
                            </article>
                        }).collect_view()}
                    </section>
                })}
            }.into_any()
            }
            None => view! {
                <div class="flash info" role="status">
                    {t(Msg::TheseCodesWereAlreadyShownOnce)}
                </div>
                <p><a class="button" href=back>{t(Msg::BackToTheShare)}</a></p>
            }.into_any(),
        }}
    }
}

/// What a card tells its learner, in the cards' language.
fn card_help(lang: Lang) -> &'static str {
    lang.text(Msg::SignInThenEnterTheCode)
}

/// Chooses the cards' language (every language of the interface), the
/// page's own by default. Needs the hydrated page.
#[component]
fn CardLanguage(card_lang: RwSignal<Lang>) -> impl IntoView {
    let page_lang = lang();
    view! {
        <p class="no-print">
            <label for="card-lang">{t(Msg::LanguageOfTheCards)}</label>
            " "
            <select
                id="card-lang"
                on:change=move |ev| {
                    if let Some(chosen) = Lang::parse(&event_target_value(&ev)) {
                        card_lang.set(chosen);
                    }
                }
            >
                {Lang::ALL
                    .into_iter()
                    .map(|l| view! { <option value=l.tag() selected=l == page_lang>{l.name()}</option> })
                    .collect_view()}
            </select>
        </p>
    }
}

/// Prints the page (its print style shows the cards only). Needs the
/// hydrated page; without JavaScript the browser's own Print does the same.
#[component]
fn PrintButton() -> impl IntoView {
    let print = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let _ = leptos::prelude::window().print();
        }
    };
    view! { <button type="button" class="button secondary" on:click=print>{t(Msg::PrintCodeCards)}</button> }
}
