//! The pages mailed links open that confirm an address: verifying it
//! (`/verify-email?token=…`) and moving the account to a new one
//! (`/confirm-email?token=…`). Opening the link does nothing by itself
//! (mail scanners open every link they see): the page asks for one click,
//! a POST, and the next page says what happened. A link that no longer
//! works says so beside the button, with the way to a new one.

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
        <Title text=t("Verify your email", "验证邮箱")/>
        <section class="auth card">
            <h1>{t("Verify your email", "验证邮箱")}</h1>
            <p>{t(
                "Confirm that this email address is yours: your course codes are bound to your account, so it should be an address you can always reach.",
                "请确认这个邮箱地址属于你：兑换码会绑定到你的账号，所以它应该是你一直能收到邮件的地址。",
            )}</p>
            <FormAlert error/>
            {move || error.get().is_some().then(|| view! {
                <p class="hint link-invalid">{t(
                    "Signed in, you can have a new link sent from your account page.",
                    "登录后可在“我的账号”页面重新发送验证邮件。",
                )}</p>
            })}
            <ActionForm action=verify attr:class="form">
                <input type="hidden" name="token" value=token/>
                <button type="submit" class="button" disabled=move || verify.pending().get()>{t("Confirm my address", "验证我的邮箱")}</button>
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
        <Title text=t("Confirm your new email", "确认新邮箱")/>
        <section class="auth card">
            <h1>{t("Confirm your new email", "确认新邮箱")}</h1>
            <p>{t(
                "Move your account to this address: you will sign in with it from now on, and your old address is told.",
                "把账号改用这个邮箱：以后请用它登录，原邮箱会收到通知。",
            )}</p>
            <FormAlert error/>
            <ActionForm action=confirm attr:class="form">
                <input type="hidden" name="token" value=token/>
                <button type="submit" class="button" disabled=move || confirm.pending().get()>{t("Confirm the new address", "确认新邮箱")}</button>
            </ActionForm>
        </section>
    }
}
