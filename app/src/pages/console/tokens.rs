//! The tenant's API tokens (`/admin/t/{tenant}/tokens`): create one with a
//! name and scopes (shown once), see when each was last used, revoke.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{Field, FieldError, FormAlert},
    console::tokens::{CreateToken, RevokeToken, TokenRow, api_tokens},
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
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
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
        <Title text=t(Msg::ApiTokens)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::ApiTokens)}</h1>
        <p class="muted">
            {t(Msg::TokensLetScriptsAndShopsCall)}<a href="/api/v1/docs">"JSON API"</a>
            {t(Msg::AsYouForThisTenantOnly)}<code>{"Authorization: Bearer <token>"}</code>{t(Msg::Punctuation)}
        </p>
        {move || created().map(|token| view! {
            <div class="flash success new-token" role="status">
                {t(Msg::NewTokenShownOnceCopyIt2)}<code class="token">{token}</code>
            </div>
        })}
        <section class="card">
            <h2>{t(Msg::NewToken)}</h2>
            <FormAlert error/>
            <ActionForm action=create attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="name" label=t(Msg::Name) hint=t(Msg::WhatUsesItEGShop) maxlength=80 error/>
                <fieldset class="scopes">
                    <legend>{t(Msg::Scopes)}</legend>
                    <label class="check"><input type="checkbox" name="read" value="on" checked=true/>{t(Msg::ReadSharesAndCodes)}</label>
                    <label class="check"><input type="checkbox" name="write" value="on"/>{t(Msg::WriteCreateSharesUploadIssueRevoke)}</label>
                    <label class="check"><input type="checkbox" name="integrations" value="on"/>{t(Msg::IntegrationsWebhooksAndApiTokens)}</label>
                    <FieldError error field="scopes"/>
                </fieldset>
                <label class="field">
                    <span class="label">{t(Msg::Expires2)}</span>
                    <select name="expires_in_days">
                        <option value="" selected=true>{t(Msg::NeverRevokeItWhenDone)}</option>
                        <option value="7">{t(Msg::In7Days)}</option>
                        <option value="30">{t(Msg::In30Days)}</option>
                        <option value="90">{t(Msg::In90Days)}</option>
                        <option value="365">{t(Msg::InAYear)}</option>
                    </select>
                </label>
                <FieldError error field="expires_at"/>
                <button type="submit" class="button" disabled=move || create.pending().get()>{t(Msg::CreateToken)}</button>
            </ActionForm>
        </section>
        <FormAlert error=revoke_error/>
        <FieldError error=revoke_error field="confirm"/>
        {if tokens.is_empty() {
            view! { <p class="muted">{t(Msg::NoTokensYet)}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data tokens">
                        <thead><tr><th>{t(Msg::Name)}</th><th>{t(Msg::Scopes)}</th><th>{t(Msg::Created)}</th><th>{t(Msg::LastUsed)}</th><th>{t(Msg::State)}</th></tr></thead>
                        <tbody>
                            {tokens.into_iter().map(|t| view! {
                                <tr data-token=t.id.to_string()>
                                    <td>{t.name.clone()}</td>
                                    <td>{t.scopes}</td>
                                    <td>{t.created}" · "{t.created_by}</td>
                                    <td>{t.last_used.unwrap_or_else(|| lang().text(Msg::Never).into())}</td>
                                    <td>{match (t.revoked, t.expired) {
                                        (Some(when), _) => view! { <span class="status status-revoked">{lang().format(Msg::Revoked2, &[("when", &when)])}</span> }.into_any(),
                                        (None, true) => view! { <span class="status status-revoked">{lang().text(Msg::Expired)}</span> }.into_any(),
                                        (None, false) => view! {
                                            <details class="confirm-action">
                                                <summary aria-label=lang().format(Msg::RevokeToken, &[("name", &t.name)])>{lang().text(Msg::Revoke3)}</summary>
                                                <ActionForm action=revoke attr:class="form compact">
                                                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                    <input type="hidden" name="token_id" value=t.id.to_string()/>
                                                    <label class="check">
                                                        <input type="checkbox" name="confirm" value="yes" required=true/>
                                                        {lang().text(Msg::IUnderstandThatWhateverUsesThis)}
                                                    </label>
                                                    <button type="submit" class="button small danger"
                                                        aria-label=lang().format(Msg::RevokeToken, &[("name", &t.name)])>{lang().text(Msg::Revoke4)}</button>
                                                </ActionForm>
                                            </details>
                                            {t.expires.clone().map(|when| view! { <span class="muted">{lang().format(Msg::Expires3, &[("when", &when)])}</span> })}
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
