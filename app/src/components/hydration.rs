//! A visible sign that the wasm layer has taken over the page.
//!
//! Clicks made before hydration are lost, so end-to-end tests (and any
//! script) wait for `<body data-hydrated>` before they interact.

use leptos::prelude::*;

/// Sets `data-hydrated="true"` on `<body>` once the page is interactive.
/// Effects never run during server rendering, so the attribute appears only
/// in the browser, after hydration.
pub fn mark_hydrated() {
    Effect::new(move |_| {
        if let Some(body) = document().body() {
            // Failing to set a data attribute is harmless: only tests read it.
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
}
