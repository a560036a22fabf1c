//! The page for unknown addresses (served with status 404).

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::t;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <Title text=t(Msg::PageNotFound)/>
        <section class="error-page">
            <h1>{t(Msg::PageNotFound)}</h1>
            <p>{t(Msg::ThereIsNothingAtThisAddress)}</p>
            <p><a class="button" href="/">{t(Msg::GoToTheHomePage)}</a></p>
        </section>
    }
}
