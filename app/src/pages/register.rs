//! Create an account. `?next=/path` returns there afterwards.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::Register,
    components::form::{Field, FormAlert},
    i18n::t,
    pages::login::urlencode,
};

#[component]
pub fn RegisterPage() -> impl IntoView {
    let action = ServerAction::<Register>::new();
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    let login_href = move || match query.read().get("next") {
        Some(next) => format!("/login?next={}", urlencode(&next)),
        None => "/login".to_owned(),
    };
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::CreateAnAccount)/>
        <section class="auth card">
            <h1>{t(Msg::CreateAnAccount)}</h1>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="next" value=next/>
                <Field name="email" label=t(Msg::Email) kind="email" autocomplete="email" error/>
                <Field name="display_name" label=t(Msg::YourName) autocomplete="name" maxlength=80 error/>
                <Field name="password" label=t(Msg::Password) kind="password" autocomplete="new-password"
                    minlength=10 hint=t(Msg::AtLeast10Characters) error/>
                <Field name="password_confirm" label=t(Msg::RepeatThePassword) kind="password"
                    autocomplete="new-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::CreateAccount)}</button>
            </ActionForm>
            <p class="muted">{t(Msg::AlreadyRegistered)} <a href=login_href>{t(Msg::SignIn)}</a></p>
        </section>
    }
}
