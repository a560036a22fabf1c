//! The tenant's API tokens (`/admin/t/{tenant}/tokens`): create one with a
//! name and scopes (shown once), see when each was last used, revoke.

use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    admin::tokens::{CreateToken, RevokeToken, TokenRow, api_tokens},
    components::form::{Field, FieldError, FormAlert},
    error::AppError,
    i18n::{lang, t},
};

#[component]
pub fn TokensPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let create = ServerAction::<CreateToken>::new();
    let revoke = ServerAction::<RevokeToken>::new();
    let data = Resource::new(
        move || (tenant(), create.version().get(), revoke.version().get()),
        |(tenant, _, _)| async move {
            match tenant {
                Some(t) => api_tokens(t).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
            {move || Suspend::new(async move {
                let here = format!("/admin/t/{}/tokens", tenant().map(|t| t.to_string()).unwrap_or_default());
                match (data.await, tenant()) {
                    (Ok(tokens), Some(tenant)) => view! { <Tokens tokens tenant create revoke/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Tokens(
    tokens: Vec<TokenRow>,
    tenant: Uuid,
    create: ServerAction<CreateToken>,
    revoke: ServerAction<RevokeToken>,
) -> impl IntoView {
    let error = Signal::derive(move || create.value().get().and_then(Result::err));
    let revoke_error = Signal::derive(move || revoke.value().get().and_then(Result::err));
    let created = move || create.value().get().and_then(Result::ok);
    view! {
        <Title text=t("API tokens", "API 令牌")/>
        <ConsoleNav tenant/>
        <h1>{t("API tokens", "API 令牌")}</h1>
        <p class="muted">
            {t("Tokens let scripts and shops call the ", "令牌让脚本和店铺以你的身份调用 ")}<a href="/api/v1/docs">"JSON API"</a>
            {t(" as you, for this tenant only: send ", "，仅限本机构：请求时发送 ")}<code>{"Authorization: Bearer <token>"}</code>{t(".", "。")}
        </p>
        {move || created().map(|token| view! {
            <div class="flash success new-token" role="status">
                {t("New token (shown once, copy it now): ", "新令牌（只显示一次，请立即复制）：")}<code class="token">{token}</code>
            </div>
        })}
        <section class="card">
            <h2>{t("New token", "新建令牌")}</h2>
            <FormAlert error/>
            <ActionForm action=create attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="name" label=t("Name", "名称") hint=t("What uses it, e.g. \"shop sync\".", "用途，例如“店铺同步”。") maxlength=80 error/>
                <fieldset class="scopes">
                    <legend>{t("Scopes", "权限")}</legend>
                    <label class="check"><input type="checkbox" name="read" value="on" checked=true/>{t(" read: shares and codes", " read：读取课程分享和兑换码")}</label>
                    <label class="check"><input type="checkbox" name="write" value="on"/>{t(" write: create shares, upload, issue, revoke, unbind", " write：创建课程分享、上传资源、生成兑换码、作废、解绑")}</label>
                    <label class="check"><input type="checkbox" name="integrations" value="on"/>{t(" integrations: webhooks and API tokens", " integrations：管理 Webhook 和 API 令牌")}</label>
                    <FieldError error field="scopes"/>
                </fieldset>
                <label class="field">
                    <span class="label">{t("Expires", "有效期")}</span>
                    <select name="expires_in_days">
                        <option value="" selected=true>{t("never (revoke it when done)", "永不过期（用完请吊销）")}</option>
                        <option value="7">{t("in 7 days", "7 天")}</option>
                        <option value="30">{t("in 30 days", "30 天")}</option>
                        <option value="90">{t("in 90 days", "90 天")}</option>
                        <option value="365">{t("in a year", "1 年")}</option>
                    </select>
                </label>
                <FieldError error field="expires_at"/>
                <button type="submit" class="button" disabled=move || create.pending().get()>{t("Create token", "创建令牌")}</button>
            </ActionForm>
        </section>
        <FormAlert error=revoke_error/>
        <FieldError error=revoke_error field="confirm"/>
        {if tokens.is_empty() {
            view! { <p class="muted">{t("No tokens yet.", "还没有令牌。")}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data tokens">
                        <thead><tr><th>{t("Name", "名称")}</th><th>{t("Scopes", "权限")}</th><th>{t("Created", "创建")}</th><th>{t("Last used", "最近使用")}</th><th>{t("State", "状态")}</th></tr></thead>
                        <tbody>
                            {tokens.into_iter().map(|t| view! {
                                <tr data-token=t.id.to_string()>
                                    <td>{t.name.clone()}</td>
                                    <td>{t.scopes}</td>
                                    <td>{t.created}" · "{t.created_by}</td>
                                    <td>{t.last_used.unwrap_or_else(|| lang().pick("never", "从未使用").into())}</td>
                                    <td>{match (t.revoked, t.expired) {
                                        (Some(when), _) => view! { <span class="status status-revoked">{lang().pick(format!("revoked {when}"), format!("已于 {when} 吊销"))}</span> }.into_any(),
                                        (None, true) => view! { <span class="status status-revoked">{lang().pick("expired", "已过期")}</span> }.into_any(),
                                        (None, false) => view! {
                                            <details class="confirm-action">
                                                <summary aria-label=lang().pick(format!("Revoke token {}", t.name), format!("吊销令牌 {}", t.name))>{lang().pick("Revoke…", "吊销…")}</summary>
                                                <ActionForm action=revoke attr:class="form compact">
                                                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                    <input type="hidden" name="token_id" value=t.id.to_string()/>
                                                    <label class="check">
                                                        <input type="checkbox" name="confirm" value="yes" required=true/>
                                                        {lang().pick(
                                                            " I understand that whatever uses this token stops working at once.",
                                                            " 我明白使用这个令牌的程序会立即停止工作。",
                                                        )}
                                                    </label>
                                                    <button type="submit" class="button small danger"
                                                        aria-label=lang().pick(format!("Revoke token {}", t.name), format!("吊销令牌 {}", t.name))>{lang().pick("Revoke", "吊销")}</button>
                                                </ActionForm>
                                            </details>
                                            {t.expires.clone().map(|when| view! { <span class="muted">{lang().pick(format!(" expires {when}"), format!(" {when} 到期"))}</span> })}
                                        }.into_any(),
                                    }}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
    }
}
