//! Registration (`/register`, `?next=/path` to come back there) starts
//! from an address alone; the mailed link opens `/register/finish?token=…`,
//! where the person chooses a name and a password and the account is made.
//!
//! The first form answers the same for every address (the next page says
//! "we sent you a mail"): whether an address has an account is told only
//! to its mailbox. The finish page checks its link first and shows the
//! form only while the link works.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::{FinishRegistration, Register, signup_link},
    components::{
        ErrorFlash,
        form::{Field, FormAlert},
    },
    i18n::{lang, t},
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
            <p>{t(Msg::EnterYourEmailAddressWeMail)}</p>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="next" value=next/>
                <Field name="email" label=t(Msg::Email) kind="email" autocomplete="email" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::EmailMeALink)}</button>
            </ActionForm>
            <p class="muted">{t(Msg::AlreadyRegistered)} <a href=login_href>{t(Msg::SignIn)}</a></p>
        </section>
    }
}

#[component]
pub fn FinishRegistrationPage() -> impl IntoView {
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    let open = Resource::new(token, signup_link);
    let action = ServerAction::<FinishRegistration>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::FinishCreatingYourAccount)/>
        <section class="auth card">
            <h1>{t(Msg::FinishCreatingYourAccount)}</h1>
            <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
                {move || Suspend::new(async move {
                    match open.await {
                        Ok(Some(email)) => view! {
                            <p>{lang().format(Msg::ChooseYourNameAndAPassword, &[("email", &email)])}</p>
                            <FormAlert error/>
                            <ActionForm action=action attr:class="form">
                                <input type="hidden" name="token" value=token/>
                                // For password managers: the account this password is for.
                                <input type="hidden" name="username" autocomplete="username" value=email/>
                                <Field name="display_name" label=t(Msg::YourName) autocomplete="name" maxlength=80 error/>
                                <Field name="password" label=t(Msg::Password) kind="password" autocomplete="new-password"
                                    minlength=10 hint=t(Msg::AtLeast10Characters) error/>
                                <Field name="password_confirm" label=t(Msg::RepeatThePassword) kind="password"
                                    autocomplete="new-password" error/>
                                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::CreateAccount)}</button>
                            </ActionForm>
                        }.into_any(),
                        Ok(None) => view! {
                            <div class="flash error link-invalid" role="alert">
                                {t(Msg::ThisLinkHasExpiredOrWasRegister)}
                            </div>
                            <p class="actions"><a class="button" href="/register">{t(Msg::CreateAnAccount)}</a></p>
                        }.into_any(),
                        Err(error) => view! { <ErrorFlash error/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
