//! A visible sign that the wasm layer has taken over the page.
//!
//! Clicks made before hydration are lost, so end-to-end tests (and any
//! script) wait for `<body data-hydrated>` before they interact.

use leptos::prelude::*;

/// Sets `data-hydrated="true"` on `<body>`. The wasm entry point calls it
/// once hydration is done, the chunk of a page loaded on demand included
/// (an effect would run before that chunk arrives); the server never does.
pub fn mark_hydrated() {
    if let Some(body) = document().body() {
        // Failing to set a data attribute is harmless: only tests read it.
        let _ = body.set_attribute("data-hydrated", "true");
    }
}
