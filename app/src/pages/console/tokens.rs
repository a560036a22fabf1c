//! The tenant's API tokens (`/admin/t/{tenant}/tokens`): create one with a
//! name and scopes (shown once), see when each was last used, revoke.

use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    admin::{CreateToken, RevokeToken, TokenRow, api_tokens},
    components::form::{Field, FieldError, FormAlert},
    error::AppError,
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
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
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
    let created = move || create.value().get().and_then(Result::ok);
    view! {
        <Title text="API tokens"/>
        <ConsoleNav tenant/>
        <h1>"API tokens"</h1>
        <p class="muted">
            "Tokens let scripts and shops call the "<a href="/api/v1/docs">"JSON API"</a>
            " as you, for this tenant only: send "<code>"Authorization: Bearer <token>"</code>"."
        </p>
        {move || created().map(|token| view! {
            <div class="flash success new-token" role="status">
                "New token (shown once, copy it now): "<code class="token">{token}</code>
            </div>
        })}
        <section class="card">
            <h2>"New token"</h2>
            <FormAlert error/>
            <ActionForm action=create attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="name" label="Name" hint="What uses it, e.g. \"shop sync\"." maxlength=80 error/>
                <fieldset class="scopes">
                    <legend>"Scopes"</legend>
                    <label class="check"><input type="checkbox" name="read" value="on" checked=true/>" read: shares and codes"</label>
                    <label class="check"><input type="checkbox" name="write" value="on"/>" write: create shares, upload, issue, revoke, unbind"</label>
                    <FieldError error field="scopes"/>
                </fieldset>
                <button type="submit" class="button" disabled=move || create.pending().get()>"Create token"</button>
            </ActionForm>
        </section>
        {if tokens.is_empty() {
            view! { <p class="muted">"No tokens yet."</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data tokens">
                        <thead><tr><th>"Name"</th><th>"Scopes"</th><th>"Created"</th><th>"Last used"</th><th>"State"</th></tr></thead>
                        <tbody>
                            {tokens.into_iter().map(|t| view! {
                                <tr data-token=t.id.to_string()>
                                    <td>{t.name.clone()}</td>
                                    <td>{t.scopes}</td>
                                    <td>{t.created}" · "{t.created_by}</td>
                                    <td>{t.last_used.unwrap_or_else(|| "never".into())}</td>
                                    <td>{match t.revoked {
                                        Some(when) => view! { <span class="status status-revoked">{format!("revoked {when}")}</span> }.into_any(),
                                        None => view! {
                                            <ActionForm action=revoke attr:class="inline-form">
                                                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                <input type="hidden" name="token_id" value=t.id.to_string()/>
                                                <button type="submit" class="link-button danger-link"
                                                    aria-label=format!("Revoke token {}", t.name)>"Revoke"</button>
                                            </ActionForm>
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
