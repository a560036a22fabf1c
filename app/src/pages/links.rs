//! The pages mailed links open that confirm an address: verifying it
//! (`/verify-email?token=…`) and moving the account to a new one
//! (`/confirm-email?token=…`). Opening the link does nothing by itself
//! (mail scanners open every link they see): the page asks for one click,
//! a POST, and the next page says what happened. A link that no longer
//! works says so beside the button, with the way to a new one.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::{ConfirmEmail, VerifyEmail},
    components::form::FormAlert,
    i18n::t,
};

#[component]
pub fn VerifyEmailPage() -> impl IntoView {
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    let verify = ServerAction::<VerifyEmail>::new();
    let error = Signal::derive(move || verify.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::VerifyYourEmail)/>
        <section class="auth card">
            <h1>{t(Msg::VerifyYourEmail)}</h1>
            <p>{t(Msg::ConfirmThatThisEmailAddressIs)}</p>
            <FormAlert error/>
            {move || error.get().is_some().then(|| view! {
                <p class="hint link-invalid">{t(Msg::SignedInYouCanHaveA)}</p>
            })}
            <ActionForm action=verify attr:class="form">
                <input type="hidden" name="token" value=token/>
                <button type="submit" class="button" disabled=move || verify.pending().get()>{t(Msg::ConfirmMyAddress)}</button>
            </ActionForm>
        </section>
    }
}

#[component]
pub fn ConfirmEmailPage() -> impl IntoView {
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();
    let confirm = ServerAction::<ConfirmEmail>::new();
    let error = Signal::derive(move || confirm.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::ConfirmYourNewEmail)/>
        <section class="auth card">
            <h1>{t(Msg::ConfirmYourNewEmail)}</h1>
            <p>{t(Msg::MoveYourAccountToThisAddress)}</p>
            <FormAlert error/>
            <ActionForm action=confirm attr:class="form">
                <input type="hidden" name="token" value=token/>
                <button type="submit" class="button" disabled=move || confirm.pending().get()>{t(Msg::ConfirmTheNewAddress)}</button>
            </ActionForm>
        </section>
    }
}
