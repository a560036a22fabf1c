//! The signed-in account: its address (verified, or "send the link
//! again"), change of address, change password, sign out everywhere.

use leptos::prelude::*;
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
        <Title text=t("Your account", "我的账号")/>
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
            {move || Suspend::new(async move {
                match user.await {
                    Ok(Some(user)) => view! {
                        <h1>{t("Your account", "我的账号")}</h1>
                        <p class="muted">
                            {user.display_name}" · "{user.email.clone()}" "
                            {if user.email_verified {
                                view! { <span class="status status-bound verified-badge">{t("verified", "已验证")}</span> }.into_any()
                            } else {
                                view! { <span class="status status-unused">{t("not verified", "未验证")}</span> }.into_any()
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
                    Err(error) => view! { <div class="flash error" role="alert">{error.sentence()}</div> }.into_any(),
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
            <h2>{t("Change email address", "更换邮箱")}</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="new_email" label=t("New email address", "新邮箱") kind="email" autocomplete="email" error/>
                <Field name="current_password" label=t("Current password", "当前密码") kind="password"
                    autocomplete="current-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Send a confirmation link", "发送确认链接")}</button>
            </ActionForm>
            <p class="hint">{t(
                "Your account moves to the new address once you open the link we mail there; your old address is told.",
                "打开我们发到新邮箱的链接后，账号才会改用新邮箱；原邮箱会收到通知。",
            )}</p>
        </section>
    }
}

#[component]
fn ChangePasswordForm() -> impl IntoView {
    let action = ServerAction::<ChangePassword>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t("Change password", "修改密码")}</h2>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="current_password" label=t("Current password", "当前密码") kind="password"
                    autocomplete="current-password" error/>
                <Field name="new_password" label=t("New password", "新密码") kind="password" autocomplete="new-password"
                    minlength=10 hint=t("At least 10 characters.", "至少 10 个字符。") error/>
                <Field name="new_password_confirm" label=t("Repeat the new password", "再次输入新密码") kind="password"
                    autocomplete="new-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Change password", "修改密码")}</button>
            </ActionForm>
            <p class="hint">{t("Changing your password signs you out on your other devices.", "修改密码后，你在其他设备上的登录将失效。")}</p>
        </section>
    }
}

#[component]
fn SignOutEverywhere() -> impl IntoView {
    let action = ServerAction::<LogoutAll>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t("Sign out everywhere", "退出所有设备")}</h2>
            <p>{t("Lost a device, or signed in on a shared computer? End every session of this account, this one included.", "设备丢失，或在公用电脑上登录过？可结束此账号的所有会话，包括当前会话。")}</p>
            <FormAlert error/>
            <ActionForm action=action>
                <button type="submit" class="button danger" disabled=move || action.pending().get()>{t("Sign out everywhere", "退出所有设备")}</button>
            </ActionForm>
        </section>
    }
}
