//! A share's sales and refunds (`/admin/t/{tenant}/s/{share}/sales`):
//! what a refund or chargeback of the share's orders does (its refund
//! policy, set here), the sales in figures, and each order with what
//! became of its codes and of its refund: the seats taken back, those
//! waiting for the grace's end, and the orders flagged for the creator,
//! each linked to its codes in the code table. `?shown=refunded|flagged`
//! filters; `?before=` pages back.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{FieldError, FormAlert},
    console::sales::{SaleView, SalesPage as Page, SetRefundPolicy, share_sales},
    error::AppError,
    i18n::{Msg, lang, t},
};

#[component]
pub fn SalesPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let share = param_id("share");
    let query = use_query_map();
    let selection = move || {
        let q = query.read();
        (
            q.get("shown"),
            q.get("before").and_then(|b| b.parse::<Uuid>().ok()),
        )
    };
    let policy = ServerAction::<SetRefundPolicy>::new();
    let data = Resource::new(
        move || (tenant(), share(), selection(), policy.version().get()),
        |(tenant, share, (shown, before), _)| async move {
            match (tenant, share) {
                (Some(t), Some(s)) => share_sales(t, s, shown, before).await,
                _ => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let (t, s) = (tenant(), share());
                let here = format!(
                    "/admin/t/{}/s/{}/sales",
                    t.map(|t| t.to_string()).unwrap_or_default(),
                    s.map(|s| s.to_string()).unwrap_or_default()
                );
                match (data.await, t, s) {
                    (Ok(page), Some(tenant), Some(share)) => view! { <Sales page tenant share policy/> }.into_any(),
                    (Ok(_), _, _) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _, _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Sales(
    page: Page,
    tenant: Uuid,
    share: Uuid,
    policy: ServerAction<SetRefundPolicy>,
) -> impl IntoView {
    let base = format!("/admin/t/{tenant}/s/{share}/sales");
    let totals = page.totals;
    let shown = page.shown.clone();
    let filter = move |value: &'static str, label: Msg| {
        let href = if value == "all" {
            base.clone()
        } else {
            format!("{base}?shown={value}")
        };
        let current = (shown == value).then_some("page");
        view! { <a href=href aria-current=current class="filter">{t(label)}</a> }
    };
    let next = page.next_before.map(|before| {
        let shown = if page.shown == "all" {
            String::new()
        } else {
            format!("shown={}&", page.shown)
        };
        view! {
            <p><a class="button secondary" href=format!("/admin/t/{tenant}/s/{share}/sales?{shown}before={before}")>{t(Msg::NextPage)}</a></p>
        }
    });
    let empty = if page.shown == "all" {
        t(Msg::NoOrderYet)
    } else {
        t(Msg::NoOrderMatches)
    };
    view! {
        <Title text=lang().format(Msg::SalesOfTitle, &[("share_title", &page.share_title)])/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::SalesOf)} <a href=format!("/admin/t/{tenant}/s/{share}")>{page.share_title.clone()}</a></h1>
        <p class="muted">{t(Msg::SalesIntro)}</p>
        <Policy tenant share action=page.policy_action.clone() grace=page.policy_grace_hours
            read_only=page.read_only policy/>
        <dl class="figures sales-totals">
            <div><dt>{t(Msg::SalesOrders)}</dt><dd>{totals.orders}</dd></div>
            <div><dt>{t(Msg::SalesSeats)}</dt><dd>{totals.seats}</dd></div>
            <div><dt>{t(Msg::SalesRefunded)}</dt><dd>{totals.refunded}</dd></div>
            <div><dt>{t(Msg::SalesFlagged)}</dt><dd>{totals.flagged}</dd></div>
            <div><dt>{t(Msg::SalesGracePending)}</dt><dd>{totals.grace_pending}</dd></div>
        </dl>
        <nav class="filters" aria-label=t(Msg::SalesShow)>
            {t(Msg::SalesShow)}" "
            {filter("all", Msg::SalesShowAll)}" · "
            {filter("refunded", Msg::SalesShowRefunded)}" · "
            {filter("flagged", Msg::SalesShowFlagged)}
        </nav>
        {if page.orders.is_empty() {
            view! { <p class="muted empty">{empty}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                    <table class="data sales">
                        <thead><tr>
                            <th>{t(Msg::SalesPlaced)}</th><th>{t(Msg::SalesOrder)}</th><th>{t(Msg::SalesBuyer)}</th>
                            <th>{t(Msg::SalesSeats)}</th><th>{t(Msg::SalesCodes)}</th><th>{t(Msg::SalesRefund)}</th>
                        </tr></thead>
                        <tbody>
                            {page.orders.into_iter().map(|sale| view! { <Sale sale tenant share/> }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
        {next}
    }
}

/// The share's refund policy, and the form that sets it.
#[component]
fn Policy(
    tenant: Uuid,
    share: Uuid,
    action: String,
    grace: i32,
    read_only: bool,
    policy: ServerAction<SetRefundPolicy>,
) -> impl IntoView {
    let error = Signal::derive(move || policy.value().get().and_then(Result::err));
    let revoke = action == "revoke";
    view! {
        <section class="card refund-policy">
            <h2>{t(Msg::RefundPolicyTitle)}</h2>
            <FormAlert error/>
            <ActionForm action=policy attr:class="form">
                <fieldset class="bare" disabled=read_only>
                    <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                    <input type="hidden" name="share_id" value=share.to_string()/>
                    <div class="field">
                        <label class="check">
                            <input type="radio" name="action" value="revoke" checked=revoke/>
                            " "{t(Msg::RefundPolicyRevoke)}
                        </label>
                        <label class="check">
                            <input type="radio" name="action" value="flag" checked=!revoke/>
                            " "{t(Msg::RefundPolicyFlag)}
                        </label>
                        <FieldError error field="action"/>
                    </div>
                    <div class="field">
                        <label for="bound_grace_hours">{t(Msg::RefundGraceHours)}</label>
                        <input id="bound_grace_hours" name="bound_grace_hours" type="number" min="0" max="2160"
                            value=grace.to_string() aria-describedby="bound_grace_hours-hint bound_grace_hours-error"/>
                        <p class="hint" id="bound_grace_hours-hint">{t(Msg::RefundGraceHint)}</p>
                        <FieldError error field="bound_grace_hours"/>
                    </div>
                    <p class="hint">{t(Msg::RefundPolicyNote)}</p>
                    <button type="submit" class="button" disabled=move || policy.pending().get()>{t(Msg::Save)}</button>
                    <p class="saved" role="status">
                        {move || matches!(policy.value().get(), Some(Ok(()))).then_some(t(Msg::Saved))}
                    </p>
                </fieldset>
            </ActionForm>
        </section>
    }
}

/// One order's row.
#[component]
fn Sale(sale: SaleView, tenant: Uuid, share: Uuid) -> impl IntoView {
    let refund_state = sale.refund_state();
    let codes_href = format!("/admin/t/{tenant}/s/{share}/codes?batch={}", sale.batch_id);
    let mut codes = lang().format(
        Msg::SaleCodes,
        &[
            ("unused", &sale.unused),
            ("bound", &sale.bound),
            ("revoked", &sale.revoked),
        ],
    );
    if sale.expired > 0 {
        codes.push_str(&lang().format(Msg::SaleCodesExpired, &[("expired", &sale.expired)]));
    }
    let refund = sale.refund.map(|r| {
        let said = if r.kind == "chargeback" {
            lang().format(Msg::SaleChargedBack, &[("when", &r.at)])
        } else {
            lang().format(Msg::SaleRefunded, &[("when", &r.at)])
        };
        let outcome = match (r.action.as_str(), &r.revoke_bound_at, &r.bound_revoked_at) {
            ("flag", _, _) => view! {
                <span class="status status-flagged">{t(Msg::SaleFlagged)}</span>
            }
            .into_any(),
            (_, Some(when), _) => view! {
                <span class="status status-pending">{lang().format(Msg::SaleBoundRevokedAt, &[("when", when)])}</span>
            }
            .into_any(),
            (_, None, Some(when)) => view! {
                <span class="status status-revoked">{lang().format(Msg::SaleBoundRevoked, &[("when", when)])}</span>
            }
            .into_any(),
            _ => view! {
                <span class="status status-revoked">{t(Msg::SaleUnusedRevoked)}</span>
            }
            .into_any(),
        };
        view! {
            <span>{said}</span><br/>{outcome}
            {r.reason.map(|reason| view! { <br/><span class="muted">{reason}</span> })}
        }
    });
    view! {
        <tr data-order=sale.id.to_string() data-refund=refund_state>
            <td class="nowrap">{sale.placed.clone()}</td>
            <td><code>{sale.source.clone()}</code>" "{sale.order_ref.clone()}</td>
            <td>{sale.buyer_email.clone()}
                {sale.addressed.then(|| view! { <br/><span class="muted">{t(Msg::SaleAddressed)}</span> })}
            </td>
            <td>{sale.quantity}</td>
            <td><a href=codes_href>{codes}</a></td>
            <td>{refund.map_or_else(|| view! { <span class="muted">"—"</span> }.into_any(), IntoAny::into_any)}</td>
        </tr>
    }
}
