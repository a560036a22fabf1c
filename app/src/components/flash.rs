//! One-time messages ("You have signed out.") left by a server function for
//! the next page, read from the session when a page renders.

use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::{
    auth::{FlashKind, Logout, take_flash},
    error::AppError,
};

/// A page for the signed-in only, asked for by someone signed out: to the
/// sign-in page and back to `next` afterwards (its status, rendered on the
/// server, is the error's: 401).
#[component]
pub fn SignInFirst(#[prop(into)] next: String) -> impl IntoView {
    AppError::Unauthenticated.set_response_status();
    let path = format!("/login?next={}", crate::pages::login::urlencode(&next));
    view! { <leptos_router::components::Redirect path/> }
}

/// An error a page shows instead of what it could not load: the alert every
/// page shows it in, and, rendered on the server, the page's status
/// ([`AppError::set_response_status`]).
#[component]
pub fn ErrorFlash(error: AppError) -> impl IntoView {
    error.set_response_status();
    view! { <div class="flash error" role="alert">{error.sentence()}</div> }
}

#[component]
pub fn FlashMessage() -> impl IntoView {
    let location = use_location();
    let logout = expect_context::<ServerAction<Logout>>();
    let flash = Resource::new(
        move || {
            (
                location.pathname.get(),
                location.search.get(),
                logout.version().get(),
            )
        },
        |_| take_flash(),
    );
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                // A message that cannot be read is not shown; the page's
                // status still says what went wrong.
                let taken = flash.await.inspect_err(AppError::set_response_status);
                taken.ok().flatten().map(|flash| {
                    let class = match flash.kind {
                        FlashKind::Success => "flash success",
                        FlashKind::Info => "flash info",
                        FlashKind::Error => "flash error",
                    };
                    let role = if flash.kind == FlashKind::Error { "alert" } else { "status" };
                    view! { <div class=class role=role>{flash.message}</div> }
                })
            })}
        </Transition>
    }
}
