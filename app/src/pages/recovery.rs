//! "Forgot password" (`/forgot-password`) and the reset a mailed link
//! opens (`/reset-password?token=…`).
//!
//! The forgot form answers the same for every address (the next page says
//! "if an account uses this address…"). The reset page checks its link
//! first and shows the form only while the link works; using it signs
//! every device out, and the next page is the sign-in.

use leptos::prelude::*;
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
        <Title text=t("Forgot password", "忘记密码")/>
        <section class="auth card">
            <h1>{t("Forgot your password?", "忘记密码？")}</h1>
            <p>{t(
                "Enter the email address of your account. We will mail you a link to choose a new password; it works once, for 30 minutes.",
                "请输入账号的邮箱地址。我们会发送一个设置新密码的链接，30 分钟内有效，只能使用一次。",
            )}</p>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <Field name="email" label=t("Email", "邮箱") kind="email" autocomplete="username" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Send the link", "发送链接")}</button>
            </ActionForm>
            <p class="muted"><a href="/login">{t("Back to sign in", "返回登录")}</a></p>
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
        <Title text=t("Choose a new password", "设置新密码")/>
        <section class="auth card">
            <h1>{t("Choose a new password", "设置新密码")}</h1>
            <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
                {move || Suspend::new(async move {
                    match open.await {
                        Ok(true) => view! {
                            <FormAlert error/>
                            <ActionForm action=action attr:class="form">
                                <input type="hidden" name="token" value=token/>
                                <Field name="new_password" label=t("New password", "新密码") kind="password" autocomplete="new-password"
                                    minlength=10 hint=t("At least 10 characters.", "至少 10 个字符。") error/>
                                <Field name="new_password_confirm" label=t("Repeat the new password", "再次输入新密码") kind="password"
                                    autocomplete="new-password" error/>
                                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Set the new password", "设置新密码")}</button>
                            </ActionForm>
                            <p class="hint">{t("Every device signed in to this account will be signed out.", "所有已登录此账号的设备都会退出登录。")}</p>
                        }.into_any(),
                        Ok(false) => view! { <LinkSpent/> }.into_any(),
                        Err(error) => view! { <div class="flash error" role="alert">{error.sentence()}</div> }.into_any(),
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
            {t(
                "This link has expired or was already used.",
                "这个链接已过期或已被使用。",
            )}
        </div>
        <p class="actions"><a class="button" href="/forgot-password">{t("Ask for a new link", "重新获取链接")}</a></p>
    }
}
