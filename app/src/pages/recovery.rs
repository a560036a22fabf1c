//! "Forgot password" (`/forgot-password`) and the reset a mailed link
//! opens (`/reset-password?token=…`).
//!
//! The forgot form answers the same for every address (the next page says
//! "if an account uses this address…"). The reset page checks its link
//! first and shows the form only while the link works; using it signs
//! every device out, and the next page is the sign-in.

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::{ForgotPassword, ResetPassword, reset_link_open},
    components::form::{Field, FormAlert},
    i18n::t,
};

#[component]
pub fn ForgotPasswordPage() -> impl IntoView {
    let action = ServerAction::<ForgotPassword>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::ForgotPassword)/>
        <section class="auth card">
            <h1>{t(Msg::ForgotYourPassword)}</h1>
            <p>{t(Msg::EnterTheEmailAddressOfYour)}</p>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="email" label=t(Msg::Email) kind="email" autocomplete="username" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::SendTheLink)}</button>
            </ActionForm>
            <p class="muted"><a href="/login">{t(Msg::BackToSignIn)}</a></p>
        </section>
    }
}

#[component]
pub fn ResetPasswordPage() -> impl IntoView {
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    let open = Resource::new(token, reset_link_open);
    let action = ServerAction::<ResetPassword>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::ChooseANewPassword)/>
        <section class="auth card">
            <h1>{t(Msg::ChooseANewPassword)}</h1>
            <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
                {move || Suspend::new(async move {
                    match open.await {
                        Ok(true) => view! {
                            <FormAlert error/>
                            <ActionForm action=action attr:class="form">
                                <input type="hidden" name="token" value=token/>
                                <Field name="new_password" label=t(Msg::NewPassword) kind="password" autocomplete="new-password"
                                    minlength=10 hint=t(Msg::AtLeast10Characters) error/>
                                <Field name="new_password_confirm" label=t(Msg::RepeatTheNewPassword) kind="password"
                                    autocomplete="new-password" error/>
                                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::SetTheNewPassword)}</button>
                            </ActionForm>
                            <p class="hint">{t(Msg::EveryDeviceSignedInToThis)}</p>
                        }.into_any(),
                        Ok(false) => view! { <LinkSpent/> }.into_any(),
                        Err(error) => view! { <ErrorFlash error/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

/// A reset link that no longer works.
#[component]
fn LinkSpent() -> impl IntoView {
    view! {
        <div class="flash error link-invalid" role="alert">
            {t(Msg::ThisLinkHasExpiredOrWas)}
        </div>
        <p class="actions"><a class="button" href="/forgot-password">{t(Msg::AskForANewLink)}</a></p>
    }
}
