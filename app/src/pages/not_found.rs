//! The page for unknown addresses (served with status 404).

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <Title text="Page not found"/>
        <section class="error-page">
            <h1>"Page not found"</h1>
            <p>"There is nothing at this address. Check the link you were given, or go back home."</p>
            <p><a class="button" href="/">"Go to the home page"</a></p>
        </section>
    }
}
