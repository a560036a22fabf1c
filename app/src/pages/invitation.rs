//! An invitation a mailed link opens (`/invitation?token=…`): who invites,
//! to which tenant, as which role; accepted by the invited address only.
//! Signed out, the page offers to sign in (or register) with that address
//! and come back; signed in with another address, it says so.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_query_map};

use crate::{
    components::form::FormAlert,
    i18n::{lang, t},
    membership::{AcceptInvitation, InvitationView, invitation},
    pages::{console::team::role_name, login::urlencode},
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
        <Title text=t("Invitation", "邀请")/>
        <section class="auth card invitation">
            <h1>{t("Invitation", "邀请")}</h1>
            <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
                {move || Suspend::new(async move {
                    let search = location.search.get_untracked();
                    let here = match search.trim_start_matches('?') {
                        "" => location.pathname.get_untracked(),
                        query => format!("{}?{query}", location.pathname.get_untracked()),
                    };
                    match data.await {
                        Ok(InvitationView::Open { tenant_name, email, role, invited_by, signed_in_as }) => {
                            let intro = lang().pick(
                                format!("{invited_by} invites {email} to the team of {tenant_name} as {}.", role_name(role).to_lowercase()),
                                format!("{invited_by} 邀请 {email} 以{}身份加入 {tenant_name} 的团队。", role_name(role)),
                            );
                            let action = match signed_in_as {
                                Some(me) if me == email => view! {
                                    <FormAlert error/>
                                    <ActionForm action=accept attr:class="form">
                                        <input type="hidden" name="token" value=token/>
                                        <button type="submit" class="button" disabled=move || accept.pending().get()>{t("Accept the invitation", "接受邀请")}</button>
                                    </ActionForm>
                                }.into_any(),
                                Some(me) => view! {
                                    <div class="flash warning" role="status">{lang().pick(
                                        format!("You are signed in as {me}. This invitation is for {email}: sign out, then sign in with that address to accept it."),
                                        format!("你当前登录的是 {me}。这份邀请只适用于 {email}：请先退出，再用这个邮箱登录后接受。"),
                                    )}</div>
                                }.into_any(),
                                None => {
                                    let next = urlencode(&here);
                                    view! {
                                        <p>{lang().pick(
                                            format!("Sign in with {email} to accept, or create an account with it."),
                                            format!("请用 {email} 登录后接受，或用它注册一个账号。"),
                                        )}</p>
                                        <p class="actions">
                                            <a class="button" href=format!("/login?next={next}")>{t("Sign in", "登录")}</a>
                                            <a class="button secondary" href=format!("/register?next={next}")>{t("Create account", "注册账号")}</a>
                                        </p>
                                    }.into_any()
                                }
                            };
                            view! { <p class="invitation-intro">{intro}</p> {action} }.into_any()
                        }
                        Ok(InvitationView::Invalid) => view! {
                            <div class="flash error link-invalid" role="alert">{t(
                                "This invitation has expired, was withdrawn or was already used. Ask the person who invited you for a new one.",
                                "这份邀请已过期、已撤回或已被使用。请联系邀请你的人重新发送。",
                            )}</div>
                        }.into_any(),
                        Err(error) => view! { <div class="flash error" role="alert">{error.sentence()}</div> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
