//! A tenant's dashboard (`/admin/t/{tenant}`): figures, the activity
//! chart, the shares, and a form to create one.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{ConsoleError, ConsoleNav, chart::ActivityChart, param_id};
use crate::{
    admin::{
        dashboard::{DashboardView, dashboard},
        share::CreateShare,
    },
    components::form::{Field, FormAlert},
    error::AppError,
    i18n::{share_status, t},
};

#[component]
pub fn DashboardPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let data = Resource::new(tenant, |id| async move {
        match id {
            Some(id) => dashboard(id).await,
            None => Err(AppError::NotFound),
        }
    });
    view! {
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
            {move || Suspend::new(async move {
                let here = format!("/admin/t/{}", tenant().map(|t| t.to_string()).unwrap_or_default());
                match data.await {
                    Ok(view) => view! { <Dashboard view/> }.into_any(),
                    Err(error) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Dashboard(view: DashboardView) -> impl IntoView {
    let tenant = view.tenant.id;
    let tiles = [
        (t("Shares", "课程分享"), view.shares_count),
        (t("Codes issued", "已发兑换码"), view.issued),
        (t("Bound", "已绑定"), view.bound),
        (t("Revoked", "已作废"), view.revoked),
        (t("Accesses, 7 days", "近 7 天访问"), view.accesses_7d),
    ];
    view! {
        <Title text=view.tenant.name.clone()/>
        <ConsoleNav tenant/>
        <h1>{view.tenant.name.clone()}</h1>
        <ul class="tiles">
            {tiles.into_iter().map(|(label, n)| view! {
                <li class="tile"><span class="tile-value">{n}</span><span class="tile-label">{label}</span></li>
            }).collect_view()}
        </ul>
        {(!view.leaks.is_empty()).then(|| view! {
            <section class="card leak-alert" role="status">
                <h2>{t("Codes other accounts keep trying", "被其他账号反复尝试的兑换码")}</h2>
                <p class="muted">{t("These codes are bound, yet other accounts enter them: they were probably passed around. The learner keeps access; consider contacting them, or unbind and revoke the code.", "这些兑换码已绑定，却仍有其他账号在输入：很可能被转给了别人。已绑定的学员仍可访问；可以考虑联系该学员，或解绑并作废这个兑换码。")}</p>
                <div class="table-wrap">
                    <table class="data">
                        <thead><tr><th>{t("Code", "兑换码")}</th><th>{t("Share", "课程分享")}</th><th>{t("Attempts", "尝试次数")}</th><th>{t("Last attempt", "最近尝试")}</th></tr></thead>
                        <tbody>
                            {view.leaks.iter().map(|l| view! {
                                <tr class="leak">
                                    <td><a href=format!("/admin/t/{tenant}/s/{}/codes?q={}", l.share_id, crate::pages::login::urlencode(&l.hint))><code>{l.hint.clone()}</code></a></td>
                                    <td>{l.share_title.clone()}</td>
                                    <td>{l.attempts}</td>
                                    <td>{l.last_attempt.clone()}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </section>
        })}
        <ActivityChart days=view.days/>
        <section class="card">
            <h2>{t("Shares", "课程分享")}</h2>
            {if view.shares.is_empty() {
                view! { <p class="muted">{t("No shares yet: create the first one below.", "还没有课程分享：在下方创建第一个。")}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="data">
                            <thead><tr><th>{t("Title", "标题")}</th><th>{t("Status", "状态")}</th><th>{t("Issued", "已发放")}</th><th>{t("Bound", "已绑定")}</th><th>{t("Revoked", "已作废")}</th><th>{t("Link", "链接")}</th></tr></thead>
                            <tbody>
                                {view.shares.into_iter().map(|s| view! {
                                    <tr>
                                        <td><a href=format!("/admin/t/{tenant}/s/{}", s.id)>{s.title}</a></td>
                                        <td><span class=format!("status status-{}", s.status)>{share_status(s.status)}</span></td>
                                        <td>{s.issued}</td>
                                        <td>{s.bound}</td>
                                        <td>{s.revoked}</td>
                                        <td><code>{format!("/s/{}", s.slug)}</code></td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
        <NewShareForm tenant/>
    }
}

#[component]
fn NewShareForm(tenant: uuid::Uuid) -> impl IntoView {
    let action = ServerAction::<CreateShare>::new();
    let error = Signal::derive(move || action.value().get().and_then(Result::err));
    view! {
        <section class="card">
            <h2>{t("New share", "新建课程分享")}</h2>
            <p class="muted">{t("A share starts as a draft: learners see it once you make it active.", "新建的课程分享是草稿：设为开放后学员才能看到。")}</p>
            <FormAlert error/>
            <ActionForm action=action attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="title" label=t("Title", "标题") error maxlength=200/>
                <OptionalField name="slug" label=t("Link name (optional)", "链接名（可选）") hint=t("Lower-case letters, digits and dashes; made from the title when empty.", "小写字母、数字和连字符；留空时根据标题生成。") error/>
                <div class="field">
                    <label for="description">{t("Description (optional)", "简介（可选）")}</label>
                    <textarea id="description" name="description" rows="3" maxlength="10000"></textarea>
                </div>
                <button type="submit" class="button" disabled=move || action.pending().get()>{t("Create share", "创建课程分享")}</button>
            </ActionForm>
        </section>
    }
}

/// A labelled text input that may stay empty.
#[component]
pub fn OptionalField(
    name: &'static str,
    #[prop(into)] label: String,
    #[prop(into)] error: Signal<Option<AppError>>,
    #[prop(optional)] hint: Option<&'static str>,
    #[prop(optional, into)] value: String,
    #[prop(default = "text")] kind: &'static str,
) -> impl IntoView {
    let hint_id = format!("{name}-hint");
    view! {
        <div class="field">
            <label for=name>{label}</label>
            <input id=name name=name type=kind value=value
                aria-invalid=crate::components::form::invalid(error, name)
                aria-describedby=format!("{hint_id} {name}-error")/>
            {hint.map(|hint| view! { <p class="hint" id=hint_id>{hint}</p> })}
            <crate::components::form::FieldError error field=name/>
        </div>
    }
}
