//! A tenant's team (`/admin/t/{tenant}/team`): the members and their
//! roles, the open invitations, the invitation form and the tenant's
//! settings (owners), and "leave this team" (everyone). What each role may
//! do is spelled out on the page, from the same table the server enforces.

use leptos::prelude::*;
use leptos_meta::Title;
use model::{Permission, Role};
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    admin::team::{
        ChangeMemberRole, InviteMember, LeaveTeam, RemoveMember, RevokeInvitation, TeamView,
        UpdateTenantSettings, team,
    },
    components::form::{Field, FieldError, FormAlert},
    error::AppError,
    i18n::{lang, t},
};

/// A role as a word.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Owner => t("Owner", "所有者"),
        Role::Admin => t("Admin", "管理员"),
        Role::Support => t("Support (read-only)", "客服（只读）"),
    }
}

/// What a role may do, in a sentence.
fn role_duties(role: Role) -> &'static str {
    match role {
        Role::Owner => t(
            "everything: the team, settings, API tokens and webhooks, and all an admin does",
            "全部权限：团队、设置、API 令牌和 Webhook，以及管理员的全部操作",
        ),
        Role::Admin => t(
            "courses: shares, resources, codes and learners",
            "课程：课程分享、资源、兑换码和学员",
        ),
        Role::Support => t(
            "reads codes, learners, access records and the audit log; changes nothing",
            "查看兑换码、学员、访问记录和审计日志；不能做任何修改",
        ),
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
    let data = Resource::new(
        move || {
            (
                tenant(),
                invite.version().get(),
                change.version().get(),
                remove.version().get(),
                revoke.version().get(),
                settings.version().get(),
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
    };
    view! {
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
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
        <Title text=lang().pick(format!("Team · {}", view.tenant_name), format!("团队 · {}", view.tenant_name))/>
        <ConsoleNav tenant/>
        <h1>{t("Team", "团队")}</h1>
        <p class="muted">{lang().pick(
            format!("You are {} of {}: {}.", role_name(view.my_role).to_lowercase(), view.tenant_name, role_duties(view.my_role)),
            format!("你是 {} 的{}：{}。", view.tenant_name, role_name(view.my_role), role_duties(view.my_role)),
        )}</p>
        <FormAlert error=member_error/>
        <div class="table-wrap">
            <table class="data members">
                <thead><tr><th>{t("Member", "成员")}</th><th>{t("Role", "角色")}</th><th>{t("Since", "加入时间")}</th>{owner.then(|| view! { <th>{t("Actions", "操作")}</th> })}</tr></thead>
                <tbody>
                    {view.members.into_iter().map(|m| {
                        let label = format!("{} <{}>", m.name, m.email);
                        let role_label = lang().pick(format!("Role of {label}"), format!("{label} 的角色"));
                        let remove_label = lang().pick(format!("Remove {label}"), format!("移除 {label}"));
                        view! {
                            <tr data-member=m.email.clone()>
                                <td>{m.name.clone()}<br/><span class="muted">{m.email.clone()}</span>{(m.account == me).then(|| view! { " " <span class="muted">{t("(you)", "（你）")}</span> })}</td>
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
                                            <button type="submit" class="link-button">{t("Change", "修改")}</button>
                                        </ActionForm>
                                        {(m.account != me).then(|| view! {
                                            <ActionForm action=actions.remove attr:class="inline-form">
                                                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                <input type="hidden" name="account_id" value=m.account.to_string()/>
                                                <button type="submit" class="link-button danger-link"
                                                    aria-label=remove_label>{t("Remove", "移除")}</button>
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
                <h2>{t("Invite someone", "邀请成员")}</h2>
                <p class="muted">{t(
                    "They get a link by mail, valid for 7 days, and join once they sign in with that address.",
                    "对方会收到一封邮件，链接 7 天内有效；用这个邮箱登录后即可加入。",
                )}</p>
                <FormAlert error=invite_error/>
                {move || invited().then(|| view! { <div class="flash success" role="status">{t("Invitation sent.", "邀请已发送。")}</div> })}
                <ActionForm action=actions.invite attr:class="form narrow">
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <Field name="email" label=t("Email", "邮箱") kind="email" autocomplete="off" error=invite_error/>
                    <div class="field">
                        <label for="invite-role">{t("Role", "角色")}</label>
                        <select id="invite-role" name="role">
                            {Role::ALL.iter().map(|r| view! {
                                <option value=r.as_str() selected=*r == Role::Support>{role_name(*r)}" · "{role_duties(*r)}</option>
                            }).collect_view()}
                        </select>
                        <FieldError error=invite_error field="role"/>
                    </div>
                    <button type="submit" class="button" disabled=move || actions.invite.pending().get()>{t("Send invitation", "发送邀请")}</button>
                </ActionForm>
            </section>
        })}
        {(owner && !view.invitations.is_empty()).then(|| view! {
            <section class="card">
                <h2>{t("Open invitations", "待接受的邀请")}</h2>
                <table class="data invitations">
                    <thead><tr><th>{t("Email", "邮箱")}</th><th>{t("Role", "角色")}</th><th>{t("Invited by", "邀请人")}</th><th>{t("Expires", "过期时间")}</th><th></th></tr></thead>
                    <tbody>
                        {view.invitations.into_iter().map(|i| { let email = i.email.clone(); view! {
                            <tr data-invitation=i.email.clone()>
                                <td>{i.email.clone()}</td>
                                <td>{role_name(i.role)}</td>
                                <td>{i.invited_by}</td>
                                <td class="nowrap">{i.expires}{i.expired.then(|| view! { " " <span class="status status-revoked">{t("expired", "已过期")}</span> })}</td>
                                <td>
                                    <ActionForm action=actions.revoke attr:class="inline-form">
                                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                        <input type="hidden" name="invitation_id" value=i.id.to_string()/>
                                        <button type="submit" class="link-button danger-link"
                                            aria-label=lang().pick(format!("Withdraw the invitation of {email}"), format!("撤回给 {email} 的邀请"))>{t("Withdraw", "撤回")}</button>
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
                <h2>{t("Settings", "设置")}</h2>
                <FormAlert error=settings_error/>
                <ActionForm action=actions.settings attr:class="form">
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <label class="check">
                        <input type="checkbox" name="require_verified_email" value="on" checked=view.require_verified_email/>
                        {t(
                            " A code binds only to an account whose email address is verified (recommended: the \"bound to\" column then shows real addresses).",
                            " 兑换码只绑定到已验证邮箱的账号（推荐：这样“绑定账号”一栏显示的都是真实邮箱）。",
                        )}
                    </label>
                    <div class="field">
                        <label for="time_zone">{t("Time zone", "时区")}</label>
                        <input id="time_zone" name="time_zone" type="text" list="time-zones" required=true
                            maxlength=64 autocomplete="off" value=view.time_zone.clone()
                            aria-describedby="time_zone-hint time_zone-error"/>
                        <datalist id="time-zones">
                            {COMMON_ZONES.iter().map(|zone| view! { <option value=*zone></option> }).collect_view()}
                        </datalist>
                        <p class="hint" id="time_zone-hint">{t(
                            "Every time in the console is shown in it, dates you type are read in it, and the dashboard counts its days in it. An IANA name such as Asia/Shanghai.",
                            "控制台中的时间都按这个时区显示，输入的日期也按它理解，仪表盘按它的日期统计。请用 IANA 名称，例如 Asia/Shanghai。",
                        )}</p>
                        <FieldError error=settings_error field="time_zone"/>
                    </div>
                    <button type="submit" class="button secondary">{t("Save settings", "保存设置")}</button>
                </ActionForm>
            </section>
        })}
        <LeaveTeam tenant/>
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
            <h2>{t("Leave this team", "离开团队")}</h2>
            <p class="muted">{t(
                "You lose access to this tenant's console (your own courses as a learner stay). A team always keeps an owner: the last owner cannot leave.",
                "你将无法再访问这个机构的管理后台（你作为学员的课程不受影响）。团队必须保留一位所有者：最后一位所有者不能离开。",
            )}</p>
            <FormAlert error/>
            <ActionForm action=leave attr:class="form">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <label class="check"><input type="checkbox" name="confirm" value="yes"/>{t(" I understand", " 我已了解")}</label>
                <FieldError error field="confirm"/>
                <button type="submit" class="button danger" disabled=move || leave.pending().get()>{t("Leave the team", "离开团队")}</button>
            </ActionForm>
        </section>
    }
}
