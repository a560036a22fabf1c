//! The tenant's webhooks (`/admin/t/{tenant}/webhooks`): endpoints that
//! receive signed events, the signing secret shown once, and the deliveries
//! that need a look (retrying, or dead-lettered with a "redeliver" button).

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{Field, FieldError, FormAlert},
    console::webhooks::{
        CreateWebhook, DeliveryRow, DisableWebhook, Redeliver, WebhookRow, WebhooksView, webhooks,
    },
    error::AppError,
    i18n::{event, lang, t},
};

#[component]
pub fn WebhooksPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let create = ServerAction::<CreateWebhook>::new();
    let disable = ServerAction::<DisableWebhook>::new();
    let redeliver = ServerAction::<Redeliver>::new();
    let data = Resource::new(
        move || {
            (
                tenant(),
                create.version().get(),
                disable.version().get(),
                redeliver.version().get(),
            )
        },
        |(tenant, _, _, _)| async move {
            match tenant {
                Some(t) => webhooks(t).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/webhooks",
                    tenant().map(|id| id.to_string()).unwrap_or_default()
                );
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => {
                        view! { <Webhooks view tenant create disable redeliver/> }.into_any()
                    }
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The events an endpoint can tick, with their form field names.
const EVENTS: [(&str, &str); 10] = [
    ("code_bound", "code.bound"),
    ("code_unbound", "code.unbound"),
    ("code_revoked", "code.revoked"),
    ("code_replaced", "code.replaced"),
    ("code_transferred", "code.transferred"),
    ("code_leak_suspected", "code.leak_suspected"),
    ("access_recorded", "access.recorded"),
    ("batch_issued", "batch.issued"),
    ("order_placed", "order.placed"),
    ("order_refunded", "order.refunded"),
];

#[component]
fn Webhooks(
    view: WebhooksView,
    tenant: Uuid,
    create: ServerAction<CreateWebhook>,
    disable: ServerAction<DisableWebhook>,
    redeliver: ServerAction<Redeliver>,
) -> impl IntoView {
    let error = Signal::derive(move || create.value().get().and_then(Result::err));
    let action_error = Signal::derive(move || {
        redeliver
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| disable.value().get().and_then(Result::err))
    });
    let created = move || create.value().get().and_then(Result::ok);
    let disabled: Vec<Uuid> = view
        .endpoints
        .iter()
        .filter(|e| e.disabled.is_some())
        .map(|e| e.id)
        .collect();
    view! {
        <Title text=t(Msg::Webhooks)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::Webhooks)}</h1>
        <p class="muted">
            {t(Msg::AdmitonePostsEachEventToYour)}
        </p>
        {move || created().map(|new| view! {
            <div class="flash success new-token" role="status">
                {t(Msg::EndpointAddedItsSigningSecretShown2)}
                <code class="token">{new.secret}</code>
            </div>
        })}
        <section class="card">
            <h2>{t(Msg::NewEndpoint)}</h2>
            <FormAlert error/>
            <ActionForm action=create attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <Field name="url" label=t(Msg::EndpointUrl) kind="url"
                    hint=t(Msg::HttpsOnYourServer) maxlength=2000 error/>
                <fieldset class="scopes">
                    <legend>{t(Msg::Events)}</legend>
                    {EVENTS.into_iter().map(|(field, name)| view! {
                        <label class="check">
                            <input type="checkbox" name=field value="on" checked=true/>
                            " "{event(name)}" "<code>{name}</code>
                        </label>
                    }).collect_view()}
                    <FieldError error field="events"/>
                </fieldset>
                <button type="submit" class="button" disabled=move || create.pending().get()>
                    {t(Msg::AddEndpoint)}
                </button>
            </ActionForm>
        </section>
        <FormAlert error=action_error/>
        <FieldError error=action_error field="confirm"/>
        <Endpoints endpoints=view.endpoints tenant disable/>
        <Deliveries deliveries=view.deliveries tenant redeliver disabled/>
    }
}

#[component]
fn Endpoints(
    endpoints: Vec<WebhookRow>,
    tenant: Uuid,
    disable: ServerAction<DisableWebhook>,
) -> impl IntoView {
    if endpoints.is_empty() {
        return view! { <p class="muted">{t(Msg::NoEndpointsYet)}</p> }.into_any();
    }
    view! {
        <div class="table-wrap">
            <table class="data webhooks">
                <thead><tr>
                    <th>{t(Msg::Endpoint)}</th>
                    <th>{t(Msg::Events)}</th>
                    <th>{t(Msg::Delivered)}</th>
                    <th>{t(Msg::DeadLetters)}</th>
                    <th>{t(Msg::State)}</th>
                </tr></thead>
                <tbody>
                    {endpoints.into_iter().map(|e| {
                        let events = e.events.iter().map(|name| event(name)).collect::<Vec<_>>().join(lang().text(Msg::Punctuation2));
                        let url = e.url.clone();
                        view! {
                            <tr data-endpoint=e.id.to_string()>
                                <td><code>{e.url.clone()}</code></td>
                                <td>{events}</td>
                                <td>{e.delivered}</td>
                                <td>{e.dead}</td>
                                <td>{match e.disabled {
                                    Some(when) => view! {
                                        <span class="status status-revoked">
                                            {lang().format(Msg::Disabled, &[("when", &when)])}
                                        </span>
                                    }.into_any(),
                                    None => view! {
                                        <details class="confirm-action">
                                            <summary aria-label=lang().format(Msg::Disable, &[("url", &url)])>{t(Msg::Disable2)}</summary>
                                            <ActionForm action=disable attr:class="form compact">
                                                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                <input type="hidden" name="endpoint_id" value=e.id.to_string()/>
                                                <label class="check">
                                                    <input type="checkbox" name="confirm" value="yes" required=true/>
                                                    {t(Msg::IUnderstandThatThisEndpointGets)}
                                                </label>
                                                <button type="submit" class="button small danger"
                                                    aria-label=lang().format(Msg::Disable, &[("url", &url)])>{t(Msg::Disable3)}</button>
                                            </ActionForm>
                                        </details>
                                    }.into_any(),
                                }}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn Deliveries(
    deliveries: Vec<DeliveryRow>,
    tenant: Uuid,
    redeliver: ServerAction<Redeliver>,
    /// Endpoints that are disabled: their dead letters stay dead.
    disabled: Vec<Uuid>,
) -> impl IntoView {
    view! {
        <h2>{t(Msg::DeliveriesThatNeedALook)}</h2>
        {if deliveries.is_empty() {
            view! { <p class="muted">{t(Msg::EveryEventWasDelivered)}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data deliveries">
                        <thead><tr>
                            <th>{t(Msg::Event)}</th>
                            <th>{t(Msg::Endpoint)}</th>
                            <th>{t(Msg::Attempts)}</th>
                            <th>{t(Msg::LastError)}</th>
                            <th>{t(Msg::State)}</th>
                        </tr></thead>
                        <tbody>
                            {deliveries.into_iter().map(|d| view! {
                                <tr data-event=d.event_id.to_string() data-dead=d.dead.to_string()>
                                    <td>{event(&d.event_type)}" · "{d.happened.clone()}</td>
                                    <td><code>{d.url.clone()}</code></td>
                                    <td>{d.attempts}</td>
                                    <td>{d.last_error.clone().unwrap_or_default()}</td>
                                    <td>{if d.dead && disabled.contains(&d.endpoint_id) {
                                        view! { <span class="muted">{t(Msg::EndpointDisabled)}</span> }.into_any()
                                    } else if d.dead {
                                        view! {
                                            <ActionForm action=redeliver attr:class="inline-form">
                                                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                                <input type="hidden" name="endpoint_id" value=d.endpoint_id.to_string()/>
                                                <input type="hidden" name="event_id" value=d.event_id.to_string()/>
                                                <button type="submit" class="button small secondary">{t(Msg::Redeliver)}</button>
                                            </ActionForm>
                                        }.into_any()
                                    } else {
                                        view! {
                                            <span class="muted">
                                                {lang().format(Msg::RetryingAt, &[("next_attempt", &d.next_attempt)])}
                                            </span>
                                        }.into_any()
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
