//! The wasm entry point: hydrates the server-rendered page so that it
//! becomes interactive.

/// The build this wasm came from (`ADMITONE_BUILD` when it was compiled),
/// shown as `<html data-build>` when the bundle starts: which bundle a
/// browser is running, for support and for the deploy test
/// (`end2end/tests/deploy.spec.ts`).
const BUILD: Option<&str> = option_env!("ADMITONE_BUILD");

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    if let (Some(build), Some(html)) = (BUILD, leptos::prelude::document().document_element()) {
        // A data attribute that cannot be set changes nothing a person sees.
        let _ = html.set_attribute("data-build", build);
    }
    let Some(body) = leptos::prelude::document().body() else {
        return;
    };
    // Hydrated asynchronously, not with `hydrate_body`: a page loaded on
    // demand has its view in a chunk of its own (see `app::pages::lazy`),
    // which the router fetches before it hydrates that page. Only then is
    // the page interactive, and marked so.
    wasm_bindgen_futures::spawn_local(async move {
        let owner = leptos::mount::hydrate_from_async(body, app::App).await;
        owner.forget();
        app::components::hydration::mark_hydrated();
    });
}
