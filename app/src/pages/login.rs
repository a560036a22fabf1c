//! Sign in. `?next=/path` returns there afterwards (e.g. to a share link).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::Login,
    components::form::{Field, FormAlert},
    i18n::t,
};

#[component]
pub fn LoginPage() -> impl IntoView {
    let action = ServerAction::<Login>::new();
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    let register_href = move || match query.read().get("next") {
        Some(next) => format!("/register?next={}", urlencode(&next)),
        None => "/register".to_owned(),
    };
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <Title text=t("Sign in", "登录")/>
        <section class="auth card">
            <h1>{t("Sign in", "登录")}</h1>
            <FormAlert error/>
            <ActionForm action=action attr:class="form">
                <input type="hidden" name="next" value=next/>
                <Field name="email" label=t("Email", "邮箱") kind="email" autocomplete="username" error/>
                <Field name="password" label=t("Password", "密码") kind="password" autocomplete="current-password" error/>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Sign in", "登录")}</button>
            </ActionForm>
            <p class="muted"><a href="/forgot-password">{t("Forgot your password?", "忘记密码？")}</a></p>
            <p class="muted">{t("New here? ", "还没有账号？")} <a href=register_href>{t("Create an account", "注册账号")}</a></p>
        </section>
    }
}

/// Percent-encodes a query value (only what a local path can contain).
pub fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
