//! Each request runs under a reactive owner of its own.
//!
//! Leptos keeps "the current owner" (where `use_context` looks) in a
//! thread-local, and leptos_axum's server-function handler makes its owner
//! with `Owner::new()`: a child of whatever owner the worker thread had
//! current. A page rendering on that thread was that owner often enough:
//! a sign-in sent from an English browser read the Chinese page's
//! language and remembered it for the account's notices
//! (`platform::server_functions::a_server_function_reads_its_own_request_*`
//! saw it every run). Pages render under a root of their own already;
//! polling every request inside a fresh root makes every owner leptos
//! makes for it a child of that root, which holds nothing but what the
//! request itself provides.
//!
//! (Static files of the site root had the same fault, worse: they took a
//! rendering page's response headers. They are served without leptos:
//! `startup::site_files_or_not_found`.)

use axum::{extract::Request, middleware::Next, response::Response};
use leptos::reactive::{computed::ScopedFuture, owner::Owner};

pub async fn own_owner(request: Request, next: Next) -> Response {
    let root = Owner::new_root(None);
    let answer = root.with(|| ScopedFuture::new_untracked(next.run(request)));
    answer.await
}
