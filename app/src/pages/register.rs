//! Create an account. `?next=/path` returns there afterwards.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::Register,
    components::form::{Field, FormAlert},
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
        <Title text="Create an account"/>
        <section class="auth card">
            <h1>"Create an account"</h1>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="next" value=next/>
                <Field name="email" label="Email" kind="email" autocomplete="email" error/>
                <Field name="display_name" label="Your name" autocomplete="name" maxlength=80 error/>
                <Field name="password" label="Password" kind="password" autocomplete="new-password"
                    minlength=10 hint="At least 10 characters." error/>
                <Field name="password_confirm" label="Repeat the password" kind="password"
                    autocomplete="new-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>"Create account"</button>
            </ActionForm>
            <p class="muted">"Already registered? " <a href=login_href>"Sign in"</a></p>
        </section>
    }
}
