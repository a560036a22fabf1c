//! A tenant's team (`/admin/t/{tenant}/team`): the members and their
//! roles, the open invitations, the invitation form and the tenant's
//! settings (owners), and "leave this team" (everyone). What each role may
//! do is spelled out on the page, from the same table the server enforces.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use model::{Permission, Role};
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{Field, FieldError, FormAlert},
    console::team::{
        ChangeMemberRole, InviteMember, LeaveTeam, RemoveLogo, RemoveMember, RevokeInvitation,
        TeamView, UpdateBranding, UpdateTenantSettings, team,
    },
    error::AppError,
    i18n::{lang, t},
};

/// A role as a word.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Owner => t(Msg::Owner),
        Role::Admin => t(Msg::Admin),
        Role::Support => t(Msg::SupportReadOnly),
    }
}

/// What a role may do, in a sentence.
fn role_duties(role: Role) -> &'static str {
    match role {
        Role::Owner => t(Msg::EverythingTheTeamSettingsApiTokens),
        Role::Admin => t(Msg::CoursesSharesResourcesCodesAndLearners),
        Role::Support => t(Msg::ReadsCodesLearnersAccessRecordsAnd),
    }
}

#[component]
pub fn TeamPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let invite = ServerAction::<InviteMember>::new();
    let change = ServerAction::<ChangeMemberRole>::new();
    let remove = ServerAction::<RemoveMember>::new();
    let revoke = ServerAction::<RevokeInvitation>::new();
    let settings = ServerAction::<UpdateTenantSettings>::new();
    let branding = ServerAction::<UpdateBranding>::new();
    let remove_logo = ServerAction::<RemoveLogo>::new();
    let data = Resource::new(
        move || {
            (
                tenant(),
                invite.version().get(),
                change.version().get(),
                remove.version().get(),
                revoke.version().get(),
                settings.version().get(),
                branding.version().get(),
                remove_logo.version().get(),
            )
        },
        |(tenant, ..)| async move {
            match tenant {
                Some(t) => team(t).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    let actions = Actions {
        invite,
        change,
        remove,
        revoke,
        settings,
        branding,
        remove_logo,
    };
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!("/admin/t/{}/team", tenant().map(|t| t.to_string()).unwrap_or_default());
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => view! { <Team view tenant actions/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[derive(Clone, Copy)]
struct Actions {
    invite: ServerAction<InviteMember>,
    change: ServerAction<ChangeMemberRole>,
    remove: ServerAction<RemoveMember>,
    revoke: ServerAction<RevokeInvitation>,
    settings: ServerAction<UpdateTenantSettings>,
    branding: ServerAction<UpdateBranding>,
    remove_logo: ServerAction<RemoveLogo>,
}

#[component]
fn Team(view: TeamView, tenant: Uuid, actions: Actions) -> impl IntoView {
    let owner = view.my_role.allows(Permission::ManageTeam);
    let invite_error = Signal::derive(move || actions.invite.value().get().and_then(Result::err));
    let invited = move || actions.invite.value().get().is_some_and(|r| r.is_ok());
    let member_error = Signal::derive(move || {
        actions
            .change
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| actions.remove.value().get().and_then(Result::err))
            .or_else(|| actions.revoke.value().get().and_then(Result::err))
    });
    let settings_error =
        Signal::derive(move || actions.settings.value().get().and_then(Result::err));
    let me = view.me;
    view! {
        <Title text=lang().format(Msg::Team2, &[("tenant_name", &view.tenant_name)])/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::Team)}</h1>
        <p class="muted">{lang().format(Msg::YouAreOf, &[("tenant_name", &view.tenant_name), ("role", &view.my_role.as_str()), ("duties", &role_duties(view.my_role))])}</p>
        <FormAlert error=member_error/>
        <div class="table-wrap">
            <table class="data members">
                <thead><tr><th>{t(Msg::Member)}</th><th>{t(Msg::Role)}</th><th>{t(Msg::Since)}</th>{owner.then(|| view! { <th>{t(Msg::Actions)}</th> })}</tr></thead>
                <tbody>
                    {view.members.into_iter().map(|m| {
                        let label = format!("{} <{}>", m.name, m.email);
                        let role_label = lang().format(Msg::RoleOf, &[("label", &label)]);
                        let remove_label = lang().format(Msg::Remove2, &[("label", &label)]);
                        view! {
                            <tr data-member=m.email.clone()>
                                <td>{m.name.clone()}<br/><span class="muted">{m.email.clone()}</span>{(m.account == me).then(|| view! { " " <span class="muted">{t(Msg::You)}</span> })}</td>
                                <td class="role">{role_name(m.role)}</td>
                                <td class="nowrap">{m.since}</td>
                                {owner.then(|| view! {
                                    <td>
                                        <ActionForm action=actions.change attr:class="inline-form">
                                            <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                            <input type="hidden" name="account_id" value=m.account.to_string()/>
                                            <select name="role" aria-label=role_label>
                                                {Role::ALL.iter().map(|r| view! {
                                                    <option value=r.as_str() selected=*r == m.role>{role_name(*r)}</option>
                                                }).collect_view()}
                                            </select>
                                            <button type="submit" class="link-button">{t(Msg::Change)}</button>
                                        </ActionForm>
                                        {(m.account != me).then(|| view! {
                                            <ActionForm action=actions.remove attr:class="inline-form">
                                                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                <input type="hidden" name="account_id" value=m.account.to_string()/>
                                                <button type="submit" class="link-button danger-link"
                                                    aria-label=remove_label>{t(Msg::Remove3)}</button>
                                            </ActionForm>
                                        })}
                                    </td>
                                })}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        {owner.then(|| view! {
            <section class="card">
                <h2>{t(Msg::InviteSomeone)}</h2>
                <p class="muted">{t(Msg::TheyGetALinkByMail)}</p>
                <FormAlert error=invite_error/>
                {move || invited().then(|| view! { <div class="flash success" role="status">{t(Msg::InvitationSent)}</div> })}
                <ActionForm action=actions.invite attr:class="form narrow">
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <Field name="email" label=t(Msg::Email) kind="email" autocomplete="off" error=invite_error/>
                    <div class="field">
                        <label for="invite-role">{t(Msg::Role)}</label>
                        <select id="invite-role" name="role">
                            {Role::ALL.iter().map(|r| view! {
                                <option value=r.as_str() selected=*r == Role::Support>{role_name(*r)}" · "{role_duties(*r)}</option>
                            }).collect_view()}
                        </select>
                        <FieldError error=invite_error field="role"/>
                    </div>
                    <button type="submit" class="button" disabled=move || actions.invite.pending().get()>{t(Msg::SendInvitation)}</button>
                </ActionForm>
            </section>
        })}
        {(owner && !view.invitations.is_empty()).then(|| view! {
            <section class="card">
                <h2>{t(Msg::OpenInvitations)}</h2>
                <table class="data invitations">
                    <thead><tr><th>{t(Msg::Email)}</th><th>{t(Msg::Role)}</th><th>{t(Msg::InvitedBy)}</th><th>{t(Msg::Expires)}</th><th></th></tr></thead>
                    <tbody>
                        {view.invitations.into_iter().map(|i| { let email = i.email.clone(); view! {
                            <tr data-invitation=i.email.clone()>
                                <td>{i.email.clone()}</td>
                                <td>{role_name(i.role)}</td>
                                <td>{i.invited_by}</td>
                                <td class="nowrap">{i.expires}{i.expired.then(|| view! { " " <span class="status status-revoked">{t(Msg::Expired)}</span> })}</td>
                                <td>
                                    <ActionForm action=actions.revoke attr:class="inline-form">
                                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                        <input type="hidden" name="invitation_id" value=i.id.to_string()/>
                                        <button type="submit" class="link-button danger-link"
                                            aria-label=lang().format(Msg::WithdrawTheInvitationOf, &[("email", &email)])>{t(Msg::Withdraw)}</button>
                                    </ActionForm>
                                </td>
                            </tr>
                        }}).collect_view()}
                    </tbody>
                </table>
            </section>
        })}
        {owner.then(|| view! {
            <section class="card">
                <h2>{t(Msg::Settings)}</h2>
                <FormAlert error=settings_error/>
                <ActionForm action=actions.settings attr:class="form">
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <label class="check">
                        <input type="checkbox" name="require_verified_email" value="on" checked=view.require_verified_email/>
                        {t(Msg::ACodeBindsOnlyToAn)}
                    </label>
                    <div class="field">
                        <label for="time_zone">{t(Msg::TimeZone)}</label>
                        <input id="time_zone" name="time_zone" type="text" list="time-zones" required=true
                            maxlength=64 autocomplete="off" value=view.time_zone.clone()
                            aria-describedby="time_zone-hint time_zone-error"/>
                        <datalist id="time-zones">
                            {COMMON_ZONES.iter().map(|zone| view! { <option value=*zone></option> }).collect_view()}
                        </datalist>
                        <p class="hint" id="time_zone-hint">{t(Msg::EveryTimeInTheConsoleIs)}</p>
                        <FieldError error=settings_error field="time_zone"/>
                    </div>
                    <button type="submit" class="button secondary">{t(Msg::SaveSettings)}</button>
                </ActionForm>
            </section>
        })}
        {owner.then(|| view! { <Branding brand=view.brand.clone() tenant actions/> })}
        <LeaveTeam tenant/>
    }
}

/// What learners see of the tenant (owners): name, accent and support
/// address in one form, the logo in a multipart form of its own (a plain
/// post, answered with a redirect back here and a message).
#[component]
fn Branding(brand: crate::learner::Brand, tenant: Uuid, actions: Actions) -> impl IntoView {
    let error = Signal::derive(move || {
        actions
            .branding
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| actions.remove_logo.value().get().and_then(Result::err))
    });
    let saved = move || actions.branding.value().get().is_some_and(|r| r.is_ok());
    let accent = brand.accent.clone().unwrap_or_default();
    view! {
        <section class="card branding">
            <h2>{t(Msg::Branding)}</h2>
            <p class="muted">{t(Msg::WhatYourLearnersSeeOfYou)}</p>
            <FormAlert error/>
            {move || saved().then(|| view! { <div class="flash success" role="status">{t(Msg::BrandingSaved)}</div> })}
            <ActionForm action=actions.branding attr:class="form narrow branding-form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <div class="field">
                    <label for="brand-name">{t(Msg::NameShownToLearners)}</label>
                    <input id="brand-name" name="name" type="text" required=true maxlength=120
                        value=brand.name.clone() aria-describedby="name-error"/>
                    <FieldError error field="name"/>
                </div>
                <div class="field">
                    <label for="brand-accent">{t(Msg::AccentColour)}</label>
                    <input id="brand-accent" name="accent" type="text" maxlength=7
                        pattern="#[0-9a-fA-F]{6}" autocomplete="off" value=accent
                        aria-invalid=crate::components::form::invalid(error, "accent")
                        aria-describedby="accent-hint accent-error"/>
                    <p class="hint" id="accent-hint">{t(Msg::AccentColourHint)}</p>
                    <FieldError error field="accent"/>
                </div>
                <div class="field">
                    <label for="brand-support">{t(Msg::SupportEmailAddress)}</label>
                    <input id="brand-support" name="support_email" type="email" maxlength=254 autocomplete="off"
                        value=brand.support_email.clone().unwrap_or_default()
                        aria-invalid=crate::components::form::invalid(error, "support_email")
                        aria-describedby="support_email-hint support_email-error"/>
                    <p class="hint" id="support_email-hint">{t(Msg::SupportEmailHint)}</p>
                    <FieldError error field="support_email"/>
                </div>
                <button type="submit" class="button" disabled=move || actions.branding.pending().get()>{t(Msg::SaveTheBranding)}</button>
            </ActionForm>
            <h3>{t(Msg::Logo)}</h3>
            {match brand.logo_url.clone() {
                Some(src) => view! {
                    <p class="logo-preview">
                        <img class="provider-logo" src=src alt=t(Msg::YourCurrentLogo) height="40"/>
                    </p>
                    <ActionForm action=actions.remove_logo attr:class="inline-form">
                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                        <button type="submit" class="link-button danger-link">{t(Msg::RemoveTheLogo)}</button>
                    </ActionForm>
                }.into_any(),
                None => view! { <p class="muted no-logo">{t(Msg::NoLogoYet)}</p> }.into_any(),
            }}
            // A plain multipart post (the route answers with a redirect
            // back here): works without JavaScript.
            <form class="form narrow logo-form" method="post" enctype="multipart/form-data"
                action=format!("/admin/t/{tenant}/logo")>
                <div class="field">
                    <label for="logo-file">{t(Msg::Logo)}</label>
                    <input id="logo-file" name="logo" type="file" required=true
                        accept="image/png,image/jpeg,image/webp" aria-describedby="logo-hint"/>
                    <p class="hint" id="logo-hint">{t(Msg::LogoHint)}</p>
                </div>
                <button type="submit" class="button secondary">{t(Msg::UploadTheLogo)}</button>
            </form>
        </section>
    }
}

/// Time zones offered as you type (any IANA name is accepted).
const COMMON_ZONES: [&str; 16] = [
    "UTC",
    "Asia/Shanghai",
    "Asia/Hong_Kong",
    "Asia/Taipei",
    "Asia/Singapore",
    "Asia/Tokyo",
    "Asia/Seoul",
    "Asia/Kolkata",
    "Asia/Dubai",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Moscow",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "Australia/Sydney",
];

#[component]
fn LeaveTeam(tenant: Uuid) -> impl IntoView {
    let leave = ServerAction::<LeaveTeam>::new();
    let error = Signal::derive(move || leave.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t(Msg::LeaveThisTeam)}</h2>
            <p class="muted">{t(Msg::YouLoseAccessToThisTenant)}</p>
            <FormAlert error/>
            <ActionForm action=leave attr:class="form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <label class="check"><input type="checkbox" name="confirm" value="yes"/>{t(Msg::IUnderstand)}</label>
                <FieldError error field="confirm"/>
                <button type="submit" class="button danger" disabled=move || leave.pending().get()>{t(Msg::LeaveTheTeam)}</button>
            </ActionForm>
        </section>
    }
}
