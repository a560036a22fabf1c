//! "Verify your email first", with a button that mails the link again:
//! shown where an unverified learner is held back (a pending code, a
//! resource that would bind it) and on the account page.

use leptos::prelude::*;

use crate::{
    auth::ResendVerification,
    components::form::FormAlert,
    i18n::{lang, t},
};

#[component]
pub fn VerifyNotice(email: String) -> impl IntoView {
    let resend = ServerAction::<ResendVerification>::new();
    let error = Signal::derive(move || resend.value().get().and_then(Result::err));
    let sent = move || resend.value().get().and_then(Result::ok);
    view! {
        <section class="card state-card verify-first" role="status">
            <h2>{t("Verify your email address", "请验证你的邮箱")}</h2>
            <p>{lang().pick(
                format!("A code binds only to a verified account. We sent a link to {email}: open it, then come back here. Your code stays reserved for you."),
                format!("兑换码只能绑定到已验证邮箱的账号。我们已向 {email} 发送了验证链接：打开链接后回到这里即可，你的兑换码会一直为你保留。"),
            )}</p>
            <FormAlert error/>
            {move || sent().map(|message| view! { <div class="flash success" role="status">{message}</div> })}
            <ActionForm action=resend>
                <button type="submit" class="button secondary" disabled=move || resend.pending().get()>
                    {t("Send the link again", "重新发送验证邮件")}
                </button>
            </ActionForm>
        </section>
    }
}
