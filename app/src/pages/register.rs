//! Create an account. `?next=/path` returns there afterwards.

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
        <Title text=t("Create an account", "注册账号")/>
        <section class="auth card">
            <h1>{t("Create an account", "注册账号")}</h1>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="next" value=next/>
                <Field name="email" label=t("Email", "邮箱") kind="email" autocomplete="email" error/>
                <Field name="display_name" label=t("Your name", "你的名字") autocomplete="name" maxlength=80 error/>
                <Field name="password" label=t("Password", "密码") kind="password" autocomplete="new-password"
                    minlength=10 hint=t("At least 10 characters.", "至少 10 个字符。") error/>
                <Field name="password_confirm" label=t("Repeat the password", "再次输入密码") kind="password"
                    autocomplete="new-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Create account", "注册账号")}</button>
            </ActionForm>
            <p class="muted">{t("Already registered? ", "已有账号？")} <a href=login_href>{t("Sign in", "登录")}</a></p>
        </section>
    }
}
