//! The pages mailed links open that act at once: verifying an address
//! (`/verify-email?token=…`) and confirming a change of address
//! (`/confirm-email?token=…`). Both use the link while the page renders
//! and say what happened; a link that no longer works says so, with the
//! way to a new one.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    auth::{LinkOutcome, confirm_email, verify_email},
    i18n::{lang, t},
};

#[component]
pub fn VerifyEmailPage() -> impl IntoView {
    let query = use_query_map();
    let outcome = Resource::new(
        move || query.read().get("token").unwrap_or_default(),
        verify_email,
    );
    view! {
        <Title text=t("Verify your email", "验证邮箱")/>
        <section class="auth card">
            <h1>{t("Verify your email", "验证邮箱")}</h1>
            <Transition fallback=|| view! { <p>{t("Checking the link…", "正在检查链接…")}</p> }>
                {move || Suspend::new(async move {
                    match outcome.await {
                        Ok(LinkOutcome::Done { .. }) => view! {
                            <div class="flash success verified" role="status">
                                {t("Your email address is verified. Thank you!", "你的邮箱已验证，谢谢！")}
                            </div>
                            <p>{t(
                                "If you entered an access code, go back to the course and open it: your code is still waiting for you.",
                                "如果你已输入过兑换码，请回到课程页面打开内容：兑换码仍为你保留。",
                            )}</p>
                            <p class="actions"><a class="button" href="/courses">{t("My courses", "我的课程")}</a></p>
                        }.into_any(),
                        Ok(LinkOutcome::Invalid) => view! {
                            <div class="flash error link-invalid" role="alert">
                                {t(
                                    "This link has expired or was already used. Signed in, you can have a new one sent from your account page.",
                                    "这个链接已过期或已被使用。登录后可在“我的账号”页面重新发送验证邮件。",
                                )}
                            </div>
                            <p class="actions"><a class="button" href="/account">{t("Your account", "我的账号")}</a></p>
                        }.into_any(),
                        Err(error) => view! { <div class="flash error" role="alert">{error.sentence()}</div> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
pub fn ConfirmEmailPage() -> impl IntoView {
    let query = use_query_map();
    let outcome = Resource::new(
        move || query.read().get("token").unwrap_or_default(),
        confirm_email,
    );
    view! {
        <Title text=t("Confirm your new email", "确认新邮箱")/>
        <section class="auth card">
            <h1>{t("Confirm your new email", "确认新邮箱")}</h1>
            <Transition fallback=|| view! { <p>{t("Checking the link…", "正在检查链接…")}</p> }>
                {move || Suspend::new(async move {
                    match outcome.await {
                        Ok(LinkOutcome::Done { email }) => {
                            let email = email.unwrap_or_default();
                            view! {
                                <div class="flash success email-changed" role="status">
                                    {lang().pick(
                                        format!("Your account now uses {email}. Sign in with it from now on."),
                                        format!("你的账号已改用 {email}，以后请用它登录。"),
                                    )}
                                </div>
                                <p class="actions"><a class="button" href="/account">{t("Your account", "我的账号")}</a></p>
                            }.into_any()
                        }
                        Ok(LinkOutcome::Invalid) => view! {
                            <div class="flash error link-invalid" role="alert">
                                {t(
                                    "This link has expired or was already used. Ask for the change again from your account page.",
                                    "这个链接已过期或已被使用。请在“我的账号”页面重新申请更换邮箱。",
                                )}
                            </div>
                            <p class="actions"><a class="button" href="/account">{t("Your account", "我的账号")}</a></p>
                        }.into_any(),
                        Err(error) => view! { <div class="flash error" role="alert">{error.sentence()}</div> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
