//! "Verify your email first", with a button that mails the link again:
//! shown where an unverified learner is held back (a pending code, a
//! resource that would bind it) and on the account page.

use crate::i18n::Msg;
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
            <h2>{t(Msg::VerifyYourEmailAddress)}</h2>
            <p>{lang().format(Msg::ACodeBindsOnlyToA, &[("email", &email)])}</p>
            <FormAlert error/>
            {move || sent().map(|message| view! { <div class="flash success" role="status">{message}</div> })}
            <ActionForm action=resend>
                <button type="submit" class="button secondary" disabled=move || resend.pending().get()>
                    {t(Msg::SendTheLinkAgain)}
                </button>
            </ActionForm>
        </section>
    }
}
