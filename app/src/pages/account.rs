//! The signed-in account: its address (verified, or "send the link
//! again"), change of address, change password, sign out everywhere.

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;
use leptos_router::components::Redirect;

use crate::{
    auth::{ChangeEmail, ChangePassword, LogoutAll, whoami},
    components::{
        form::{Field, FormAlert},
        verify::VerifyNotice,
    },
    i18n::t,
};

#[component]
pub fn AccountPage() -> impl IntoView {
    let user = Resource::new(|| (), |_| whoami());
    view! {
        <Title text=t(Msg::YourAccount)/>
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                match user.await {
                    Ok(Some(user)) => view! {
                        <h1>{t(Msg::YourAccount)}</h1>
                        <p class="muted">
                            {user.display_name}" · "{user.email.clone()}" "
                            {if user.email_verified {
                                view! { <span class="status status-bound verified-badge">{t(Msg::Verified)}</span> }.into_any()
                            } else {
                                view! { <span class="status status-unused">{t(Msg::NotVerified)}</span> }.into_any()
                            }}
                        </p>
                        {(!user.email_verified).then(|| view! { <VerifyNotice email=user.email.clone()/> })}
                        <div class="cards">
                            <ChangeEmailForm/>
                            <ChangePasswordForm/>
                            <SignOutEverywhere/>
                        </div>
                    }.into_any(),
                    Ok(None) => view! { <Redirect path="/login?next=/account"/> }.into_any(),
                    Err(error) => view! { <ErrorFlash error/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ChangeEmailForm() -> impl IntoView {
    let action = ServerAction::<ChangeEmail>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t(Msg::ChangeEmailAddress)}</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="new_email" label=t(Msg::NewEmailAddress) kind="email" autocomplete="email" error/>
                <Field name="current_password" label=t(Msg::CurrentPassword) kind="password"
                    autocomplete="current-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::SendAConfirmationLink)}</button>
            </ActionForm>
            <p class="hint">{t(Msg::YourAccountMovesToTheNew)}</p>
        </section>
    }
}

#[component]
fn ChangePasswordForm() -> impl IntoView {
    let action = ServerAction::<ChangePassword>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t(Msg::ChangePassword)}</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="current_password" label=t(Msg::CurrentPassword) kind="password"
                    autocomplete="current-password" error/>
                <Field name="new_password" label=t(Msg::NewPassword) kind="password" autocomplete="new-password"
                    minlength=10 hint=t(Msg::AtLeast10Characters) error/>
                <Field name="new_password_confirm" label=t(Msg::RepeatTheNewPassword) kind="password"
                    autocomplete="new-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t(Msg::ChangePassword)}</button>
            </ActionForm>
            <p class="hint">{t(Msg::ChangingYourPasswordSignsYouOut)}</p>
        </section>
    }
}

#[component]
fn SignOutEverywhere() -> impl IntoView {
    let action = ServerAction::<LogoutAll>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t(Msg::SignOutEverywhere)}</h2>
            <p>{t(Msg::LostADeviceOrSignedIn)}</p>
            <FormAlert error/>
            <ActionForm action=action>
                <button type="submit" class="button danger" disabled=move || action.pending().get()>{t(Msg::SignOutEverywhere)}</button>
            </ActionForm>
        </section>
    }
}
