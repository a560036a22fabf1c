//! The tenant's shops (`/admin/t/{tenant}/shops`): for each shop its
//! webhook address, which product is which course, and its latest
//! deliveries with what came of each (acted on, ignored, refused and
//! why), so a creator sees why a sale issued nothing.

use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    console::shops::{ShopRow, ShopsView, shops},
    error::AppError,
    i18n::{Msg, lang, t},
};

#[component]
pub fn ShopsPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let data = Resource::new(tenant, |tenant| async move {
        match tenant {
            Some(t) => shops(t).await,
            None => Err(AppError::NotFound),
        }
    });
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/shops",
                    tenant().map(|id| id.to_string()).unwrap_or_default()
                );
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => view! { <Shops view tenant/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Shops(view: ShopsView, tenant: Uuid) -> impl IntoView {
    view! {
        <Title text=t(Msg::Shops)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::Shops)}</h1>
        <p class="muted">{t(Msg::ShopsIntro)}</p>
        {if view.shops.is_empty() {
            view! { <p class="muted empty">{t(Msg::NoShopYet)}</p> }.into_any()
        } else {
            view.shops
                .into_iter()
                .map(|shop| view! { <Shop shop tenant/> })
                .collect_view()
                .into_any()
        }}
    }
}

/// A delivery's outcome as a word.
fn outcome(word: &str) -> &'static str {
    t(match word {
        "acted" => Msg::ShopEventActed,
        "ignored" => Msg::ShopEventIgnored,
        "refused" => Msg::ShopEventRefused,
        _ => Msg::ShopEventReceived,
    })
}

#[component]
fn Shop(shop: ShopRow, tenant: Uuid) -> impl IntoView {
    let disabled = shop.disabled.is_some();
    view! {
        <section
            class="card shop"
            data-shop=shop.id.to_string()
            data-provider=shop.provider.clone()
            data-disabled=disabled.to_string()
        >
            <h2>{shop.name.clone()}<span class="muted">" · "{shop.provider.clone()}</span></h2>
            <p class="muted">
                {shop.created.clone()}
                {shop.disabled.clone().map(|at| view! { " · " <strong>{t(Msg::ShopDisabled)}</strong>" "{at} })}
            </p>
            {if disabled {
                view! {
                    <div class="flash warning shop-disabled" role="status">{t(Msg::ShopDisabledAddress)}</div>
                    <p class="muted"><del><code>{shop.webhook_url.clone()}</code></del></p>
                }.into_any()
            } else {
                view! {
                    <p>{t(Msg::ShopWebhookUrl)}<br/><code class="secret">{shop.webhook_url.clone()}</code></p>
                    {shop.secret_in_url.then(|| view! {
                        <p class="muted shop-gumroad-secret">{t(Msg::ShopGumroadSecret)}</p>
                    })}
                }.into_any()
            }}
            <h3>{t(Msg::ShopProducts)}</h3>
            {if shop.products.is_empty() {
                view! { <p class="muted empty">{t(Msg::ShopNoProduct)}</p> }.into_any()
            } else {
                view! {
                    <ul class="shop-products">
                        {shop.products.into_iter().map(|p| view! {
                            <li>
                                <code>{p.product_ref}</code>" → "
                                <a href=format!("/admin/t/{tenant}/s/{}", p.share)>{p.course}</a>
                            </li>
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
            <h3>{t(Msg::ShopEvents)}</h3>
            {(shop.unsigned_last_day > 0).then(|| view! {
                <p class="flash warning shop-unsigned" role="status">
                    {lang().format(Msg::ShopUnsigned, &[
                        ("count", &shop.unsigned_last_day),
                        ("latest", &shop.unsigned_latest.clone().unwrap_or_default()),
                    ])}
                </p>
            })}
            {if shop.events.is_empty() {
                view! { <p class="muted empty">{t(Msg::NoneYet)}</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap">
                        <table class="data shop-events">
                            <thead><tr>
                                <th>{t(Msg::ShopEventReceivedAt)}</th><th>{t(Msg::ShopEvent)}</th>
                                <th>{t(Msg::Status)}</th><th>{t(Msg::ShopEventReason)}</th>
                            </tr></thead>
                            <tbody>
                                {shop.events.into_iter().map(|e| view! {
                                    <tr data-event=e.id.to_string() data-outcome=e.outcome.clone()>
                                        <td class="nowrap">{e.received}</td>
                                        <td>{e.kind.unwrap_or_default()}<br/><span class="muted">{e.event_ref.unwrap_or_default()}</span></td>
                                        <td>{outcome(&e.outcome)}</td>
                                        <td>{e.reason.unwrap_or_default()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}
