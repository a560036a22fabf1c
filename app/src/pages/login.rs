//! Sign in. `?next=/path` returns there afterwards (e.g. to a share link).

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::Login,
    components::form::{Field, FormAlert},
    i18n::t,
};

#[component]
pub fn LoginPage() -> impl IntoView {
    let action = ServerAction::<Login>::new();
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    let register_href = move || match query.read().get("next") {
        Some(next) => format!("/register?next={}", urlencode(&next)),
        None => "/register".to_owned(),
    };
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::SignIn)/>
        <section class="auth card">
            <h1>{t(Msg::SignIn)}</h1>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="next" value=next/>
                <Field name="email" label=t(Msg::Email) kind="email" autocomplete="username" error/>
                <Field name="password" label=t(Msg::Password) kind="password" autocomplete="current-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::SignIn)}</button>
            </ActionForm>
            <p class="muted"><a href="/forgot-password">{t(Msg::ForgotYourPassword)}</a></p>
            <p class="muted">{t(Msg::NewHere)} <a href=register_href>{t(Msg::CreateAnAccount)}</a></p>
        </section>
    }
}

/// Percent-encodes a query value (only what a local path can contain).
pub fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
