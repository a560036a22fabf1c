//! What the pages a mailed link opens (an invitation, a transfer's
//! confirmation) share: the link is for one address, so a visitor signed
//! out is offered to sign in or register with it and come back to the
//! same link.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_router::location::Location;

use crate::{i18n::t, pages::login::urlencode};

/// The page's own path and query: where signing in comes back to.
pub fn here(location: &Location) -> String {
    let search = location.search.get_untracked();
    match search.trim_start_matches('?') {
        "" => location.pathname.get_untracked(),
        query => format!("{}?{query}", location.pathname.get_untracked()),
    }
}

/// `message` ("sign in with … to …"), then "Sign in" and "Create account",
/// each coming back to `here`.
#[component]
pub fn SignInToUse(message: String, here: String) -> impl IntoView {
    let next = urlencode(&here);
    view! {
        <p>{message}</p>
        <p class="actions">
            <a class="button" href=format!("/login?next={next}")>{t(Msg::SignIn)}</a>
            <a class="button secondary" href=format!("/register?next={next}")>{t(Msg::CreateAccount)}</a>
        </p>
    }
}
