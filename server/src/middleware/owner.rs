//! Each request runs under a reactive owner of its own.
//!
//! Leptos keeps "the current owner" (where `use_context` looks) in a
//! thread-local. `Owner::new_root` sets it and never puts the previous one
//! back, so every page render (leptos_integration_utils' `build_response`
//! makes a root per page) leaves its root current on the worker thread
//! until something else is set there. leptos_axum's handlers for server
//! functions and static files make their owner with `Owner::new()`: a
//! child of that leftover page root. A sign-in sent from an English
//! browser read the Chinese page's language and remembered it for the
//! account's notices, and the site icon took a rendering page's response
//! headers, so the page went out without its script policy
//! (`platform::server_functions::a_server_function_reads_its_own_request_*`
//! and `platform::headers::pages_keep_their_own_policy_*` saw them every
//! run).
//!
//! Polling every request inside a fresh root of its own makes every owner
//! leptos makes for it a child of that root, which holds nothing but what
//! the request itself provides. The root is taken off the thread at once
//! (it is current only while the request's future is polled), so it does
//! not become the next leftover.

use axum::{extract::Request, middleware::Next, response::Response};
use leptos::reactive::{computed::ScopedFuture, owner::Owner};

pub async fn own_owner(request: Request, next: Next) -> Response {
    // `new_root` makes the root current on this thread ...
    let root = Owner::new_root(None);
    // ... where `ScopedFuture` takes it, to set it around each poll ...
    let answer = ScopedFuture::new_untracked(next.run(request));
    // ... and where it must not stay.
    root.unset();
    answer.await
}
