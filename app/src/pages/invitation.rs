//! An invitation a mailed link opens (`/invitation?token=…`): who invites,
//! to which tenant, as which role; accepted by the invited address only.
//! Signed out, the page offers to sign in (or register) with that address
//! and come back; signed in with another address, it says so.

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_query_map};

use crate::{
    components::{
        form::FormAlert,
        mailed_link::{self, SignInToUse},
    },
    i18n::{lang, t},
    membership::{AcceptInvitation, InvitationView, invitation},
};

#[component]
pub fn InvitationPage() -> impl IntoView {
    let query = use_query_map();
    let location = use_location();
    let token = move || query.read().get("token").unwrap_or_default();
    let data = Resource::new(token, invitation);
    let accept = ServerAction::<AcceptInvitation>::new();
    let error = Signal::derive(move || accept.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::Invitation)/>
        <section class="auth card invitation">
            <h1>{t(Msg::Invitation)}</h1>
            <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
                {move || {
                    let here = mailed_link::here(&location);
                    Suspend::new(async move {
                        match data.await {
                            Ok(InvitationView::Open { tenant_name, email, role, invited_by, signed_in_as }) => {
                                let intro = lang().format(Msg::InvitesToTheTeamOfAs, &[("email", &email), ("invited_by", &invited_by), ("tenant_name", &tenant_name), ("role", &role.as_str())]);
                                let action = match signed_in_as {
                                    Some(me) if me == email => view! {
                                        <FormAlert error/>
                                        <ActionForm action=accept attr:class="form">
                                            <input type="hidden" name="token" value=token/>
                                            <button type="submit" class="button" disabled=move || accept.pending().get()>{t(Msg::AcceptTheInvitation)}</button>
                                        </ActionForm>
                                    }.into_any(),
                                    Some(me) => view! {
                                        <div class="flash warning" role="status">{lang().format(Msg::YouAreSignedInAsThis, &[("email", &email), ("me", &me)])}</div>
                                    }.into_any(),
                                    None => view! {
                                        <SignInToUse message=lang().format(Msg::SignInWithToAcceptOr, &[("email", &email)]) here/>
                                    }.into_any(),
                                };
                                view! { <p class="invitation-intro">{intro}</p> {action} }.into_any()
                            }
                            Ok(InvitationView::Invalid) => view! {
                                <div class="flash error link-invalid" role="alert">{t(Msg::ThisInvitationHasExpiredWasWithdrawn)}</div>
                            }.into_any(),
                            Err(error) => view! { <ErrorFlash error/> }.into_any(),
                        }
                    })
                }}
            </Transition>
        </section>
    }
}
