//! The tenant's shops (`/admin/t/{tenant}/shops`): for each shop its
//! webhook address, which product is which course, and its latest
//! deliveries with what came of each (acted on, ignored, refused and
//! why), so a creator sees why a sale issued nothing; and the forms that
//! connect a shop (its address, with Gumroad's drawn secret, said once),
//! map and forget its products, replace its secret and disable it.

use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use super::{ConsoleError, ConsoleNav, param_id};
use crate::{
    components::form::{Field, FieldError, FormAlert, invalid},
    console::shops::{
        ConnectShop, CourseOption, DisableShop, ForgetShopProduct, MapShopProduct,
        RotateShopSecret, ShopAddress, ShopRow, ShopsView, shops,
    },
    error::AppError,
    i18n::{Msg, lang, share_status, t},
};

/// A form of a shop's card.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CardForm {
    Rotate,
    Disable,
    Map,
    Forget,
}

/// The shop forms' actions, handed to each card.
#[derive(Clone, Copy)]
struct Actions {
    connect: ServerAction<ConnectShop>,
    rotate: ServerAction<RotateShopSecret>,
    disable: ServerAction<DisableShop>,
    map: ServerAction<MapShopProduct>,
    forget: ServerAction<ForgetShopProduct>,
    /// The card and form last sent (hydrated pages: its answer is said in
    /// that card; without JavaScript, at the top of the page).
    last: RwSignal<Option<(Uuid, CardForm)>>,
}

impl Actions {
    fn new() -> Self {
        let actions = Self {
            connect: ServerAction::new(),
            rotate: ServerAction::new(),
            disable: ServerAction::new(),
            map: ServerAction::new(),
            forget: ServerAction::new(),
            last: RwSignal::new(None),
        };
        // One effect per form: each notes its own card when it is sent,
        // whatever the others are doing.
        let last = actions.last;
        let note = move |sent: Option<Uuid>, form: CardForm| {
            if let Some(shop) = sent {
                last.set(Some((shop, form)));
            }
        };
        let (rotate, disable, map, forget) =
            (actions.rotate, actions.disable, actions.map, actions.forget);
        Effect::new(move |_| note(rotate.input().get().map(|i| i.shop_id), CardForm::Rotate));
        Effect::new(move |_| note(disable.input().get().map(|i| i.shop_id), CardForm::Disable));
        Effect::new(move |_| note(map.input().get().map(|i| i.shop_id), CardForm::Map));
        Effect::new(move |_| note(forget.input().get().map(|i| i.shop_id), CardForm::Forget));
        actions
    }

    fn versions(self) -> (usize, usize, usize, usize, usize) {
        (
            self.connect.version().get(),
            self.rotate.version().get(),
            self.disable.version().get(),
            self.map.version().get(),
            self.forget.version().get(),
        )
    }

    fn error_of(self, form: CardForm) -> Option<AppError> {
        match form {
            CardForm::Rotate => self.rotate.value().get().and_then(Result::err),
            CardForm::Disable => self.disable.value().get().and_then(Result::err),
            CardForm::Map => self.map.value().get().and_then(Result::err),
            CardForm::Forget => self.forget.value().get().and_then(Result::err),
        }
    }

    /// A card's refusal, said in the card of the shop it was for.
    fn error_in(self, shop: Uuid) -> Signal<Option<AppError>> {
        Signal::derive(move || match self.last.get() {
            Some((sent_from, form)) if sent_from == shop => self.error_of(form),
            _ => None,
        })
    }

    /// Whether `form` of `shop`'s card was refused last (its panel stays
    /// open, showing what was typed).
    fn refused(self, shop: Uuid, form: CardForm) -> bool {
        self.last.get() == Some((shop, form)) && self.error_of(form).is_some()
    }

    /// A card's refusal the page cannot place (it came back from a plain
    /// form post): said at the top.
    fn unplaced_error(self) -> Signal<Option<AppError>> {
        Signal::derive(move || {
            if self.last.get().is_some() {
                return None;
            }
            [
                CardForm::Rotate,
                CardForm::Disable,
                CardForm::Map,
                CardForm::Forget,
            ]
            .into_iter()
            .find_map(|form| self.error_of(form))
        })
    }

    /// The address a replaced secret gives, in its shop's card.
    fn rotated_in(self, shop: Uuid) -> Option<ShopAddress> {
        self.rotate
            .value()
            .get()
            .and_then(Result::ok)
            .filter(|a| a.shop == shop)
    }
}

#[component]
pub fn ShopsPage() -> impl IntoView {
    let tenant = param_id("tenant");
    let actions = Actions::new();
    let data = Resource::new(
        move || (tenant(), actions.versions()),
        |(tenant, _)| async move {
            match tenant {
                Some(t) => shops(t).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                let here = format!(
                    "/admin/t/{}/shops",
                    tenant().map(|id| id.to_string()).unwrap_or_default()
                );
                match (data.await, tenant()) {
                    (Ok(view), Some(tenant)) => view! { <Shops view tenant actions/> }.into_any(),
                    (Ok(_), None) => view! { <crate::pages::not_found::NotFound/> }.into_any(),
                    (Err(error), _) => view! { <ConsoleError error here/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Shops(view: ShopsView, tenant: Uuid, actions: Actions) -> impl IntoView {
    let unplaced = actions.unplaced_error();
    let courses = view.courses;
    view! {
        <Title text=t(Msg::Shops)/>
        <ConsoleNav tenant/>
        <h1>{t(Msg::Shops)}</h1>
        <p class="muted">{t(Msg::ShopsIntro)}</p>
        <Refusal error=unplaced/>
        <Connect tenant actions/>
        {if view.shops.is_empty() {
            view! { <p class="muted empty">{t(Msg::NoShopYet)}</p> }.into_any()
        } else {
            // Keyed by shop: a card's open panel and typed text stay with
            // its shop when a new shop is listed above it.
            let shops = view.shops;
            view! {
                <For each=move || shops.clone() key=|shop| shop.id let:shop>
                    <Shop shop tenant courses=courses.clone() actions/>
                </For>
            }
            .into_any()
        }}
    }
}

/// A card's form refused: what was wrong, whichever field (the card's
/// fields are marked invalid beside it).
#[component]
fn Refusal(#[prop(into)] error: Signal<Option<AppError>>) -> impl IntoView {
    move || {
        error.get().map(|e| {
            view! { <div class="flash error shop-refused" role="alert">{e.sentence()}</div> }
        })
    }
}

/// The shops a tenant can connect: the form's value, and the shop's own
/// name (a brand, the same in every language).
const PROVIDERS: [(&str, &str); 4] = [
    ("stripe", "Stripe"),
    ("lemonsqueezy", "Lemon Squeezy"),
    ("shopify", "Shopify"),
    ("gumroad", "Gumroad"),
];

/// The new shop's address, said where the form that made it was.
#[component]
fn NewAddress(address: ShopAddress, with_secret: Msg, plain: Msg) -> impl IntoView {
    let said = if address.holds_secret {
        with_secret
    } else {
        plain
    };
    view! {
        <div class="flash success shop-address" role="status">
            {lang().format(said, &[("url", &address.webhook_url)])}
        </div>
    }
}

#[component]
fn Connect(tenant: Uuid, actions: Actions) -> impl IntoView {
    let connect = actions.connect;
    let error = Signal::derive(move || connect.value().get().and_then(Result::err));
    let connected = move || connect.value().get().and_then(Result::ok);
    view! {
        {move || connected().map(|address| view! {
            <NewAddress address with_secret=Msg::ShopConnectedWithSecret plain=Msg::ShopConnected/>
        })}
        <section class="card shop-connect">
            <h2>{t(Msg::ShopConnect)}</h2>
            <FormAlert error/>
            <ActionForm action=connect attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <div class="field">
                    <label for="provider">{t(Msg::ShopProvider)}</label>
                    <select id="provider" name="provider" aria-invalid=invalid(error, "provider")>
                        {PROVIDERS.into_iter().map(|(value, brand)| view! {
                            <option value=value>{brand}</option>
                        }).collect_view()}
                    </select>
                    <FieldError error field="provider"/>
                </div>
                <Field name="name" label=t(Msg::ShopName) hint=t(Msg::ShopNameHint) maxlength=80 error/>
                <Field name="secret" label=t(Msg::ShopSecret) hint=t(Msg::ShopSecretHint)
                    maxlength=512 required=false error/>
                <button type="submit" class="button" disabled=move || connect.pending().get()>
                    {t(Msg::ShopConnectButton)}
                </button>
            </ActionForm>
        </section>
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
fn Shop(
    shop: ShopRow,
    tenant: Uuid,
    courses: Vec<CourseOption>,
    actions: Actions,
) -> impl IntoView {
    let disabled = shop.disabled.is_some();
    let id = shop.id;
    let error = actions.error_in(id);
    view! {
        <section
            class="card shop"
            data-shop=id.to_string()
            data-provider=shop.provider.clone()
            data-disabled=disabled.to_string()
        >
            <h2>{shop.name.clone()}<span class="muted">" · "{shop.provider.clone()}</span></h2>
            <p class="muted">
                {shop.created.clone()}
                {shop.disabled.clone().map(|at| view! { " · " <strong>{t(Msg::ShopDisabled)}</strong>" "{at} })}
            </p>
            <Refusal error/>
            {move || actions.rotated_in(id).map(|address| view! {
                <NewAddress address with_secret=Msg::ShopSecretInAddress plain=Msg::ShopSecretReplaced/>
            })}
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
                        {shop.products.into_iter().map(|p| {
                            let label = lang().format(Msg::ShopForgetProductLabel, &[("product", &p.product_ref)]);
                            let product = p.product_ref.clone();
                            view! {
                                <li data-product=p.product_ref.clone()>
                                    <code>{p.product_ref.clone()}</code>" → "
                                    <a href=format!("/admin/t/{tenant}/s/{}", p.share)>{p.course}</a>
                                    " "
                                    <ActionForm action=actions.forget attr:class="inline-form">
                                        <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                                        <input type="hidden" name="shop_id" value=id.to_string()/>
                                        <input type="hidden" name="product" value=product/>
                                        <button type="submit" class="button small secondary" aria-label=label
                                            disabled=move || actions.forget.pending().get()>
                                            {t(Msg::ShopForgetProduct)}
                                        </button>
                                    </ActionForm>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
            {(!disabled).then(|| view! {
                <MapProduct shop=id tenant courses actions error/>
                <ReplaceSecret shop=id tenant gumroad=shop.secret_in_url actions error/>
                <Disable shop=id name=shop.name.clone() tenant actions/>
            })}
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

/// A course as the picker names it: its title, its link (two courses of one
/// title told apart), and its status unless it is open.
fn course_label(course: &CourseOption) -> String {
    let mut label = format!("{} · /s/{}", course.title, course.slug);
    if course.status != model::ShareStatus::Active {
        label.push_str(" · ");
        label.push_str(share_status(course.status));
    }
    label
}

/// Says which course a product sells.
#[component]
fn MapProduct(
    shop: Uuid,
    tenant: Uuid,
    courses: Vec<CourseOption>,
    actions: Actions,
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let (product, course) = (format!("product-{shop}"), format!("course-{shop}"));
    let hint = format!("product-hint-{shop}");
    if courses.is_empty() {
        return view! { <p class="muted">{t(Msg::ShopNoCourse)}</p> }.into_any();
    }
    view! {
        <details class="shop-map" open=move || actions.refused(shop, CardForm::Map)>
            <summary>{t(Msg::ShopMapProduct)}</summary>
            <ActionForm action=actions.map attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="shop_id" value=shop.to_string()/>
                <div class="field">
                    <label for=product.clone()>{t(Msg::ShopProductId)}</label>
                    <input id=product name="product" type="text" required=true maxlength=200
                        autocomplete="off" aria-invalid=invalid(error, "product") aria-describedby=hint.clone()/>
                    <p class="hint" id=hint>{t(Msg::ShopProductHint)}</p>
                </div>
                <div class="field">
                    <label for=course.clone()>{t(Msg::ShopProductCourse)}</label>
                    // No course is chosen for the creator: a product mapped
                    // by mistake would sell the wrong course's codes.
                    <select id=course name="share_id" required=true aria-invalid=invalid(error, "share_id")>
                        <option value="" selected=true>{t(Msg::ShopCoursePlaceholder)}</option>
                        {courses.into_iter().map(|c| view! {
                            <option value=c.share.to_string()>{course_label(&c)}</option>
                        }).collect_view()}
                    </select>
                </div>
                <button type="submit" class="button" disabled=move || actions.map.pending().get()>
                    {t(Msg::ShopMapButton)}
                </button>
            </ActionForm>
        </details>
    }
    .into_any()
}

/// Replaces the shop's signing secret.
#[component]
fn ReplaceSecret(
    shop: Uuid,
    tenant: Uuid,
    /// Gumroad: an empty secret draws one.
    gumroad: bool,
    actions: Actions,
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let (field, hint) = (format!("secret-{shop}"), format!("secret-hint-{shop}"));
    view! {
        <details class="shop-secret" open=move || actions.refused(shop, CardForm::Rotate)>
            <summary>{t(Msg::ShopReplaceSecret)}</summary>
            <ActionForm action=actions.rotate attr:class="form narrow">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="shop_id" value=shop.to_string()/>
                <div class="field">
                    <label for=field.clone()>{t(Msg::ShopNewSecret)}</label>
                    <input id=field name="secret" type="text" required=!gumroad maxlength=512
                        autocomplete="off" aria-invalid=invalid(error, "secret") aria-describedby=hint.clone()/>
                    <p class="hint" id=hint>{t(Msg::ShopReplaceSecretHint)}</p>
                </div>
                <button type="submit" class="button secondary" disabled=move || actions.rotate.pending().get()>
                    {t(Msg::ShopSaveSecret)}
                </button>
            </ActionForm>
        </details>
    }
}

/// Disables the shop, once confirmed.
#[component]
fn Disable(shop: Uuid, name: String, tenant: Uuid, actions: Actions) -> impl IntoView {
    let label = lang().format(Msg::ShopDisableButton, &[("name", &name)]);
    view! {
        <details class="confirm-action shop-disable" open=move || actions.refused(shop, CardForm::Disable)>
            <summary>{t(Msg::ShopDisable)}</summary>
            <ActionForm action=actions.disable attr:class="form compact">
                <input type="hidden" name="tenant_id" value=tenant.to_string()/>
                <input type="hidden" name="shop_id" value=shop.to_string()/>
                <label class="check">
                    <input type="checkbox" name="confirm" value="yes" required=true/>
                    {t(Msg::ShopDisableConfirm)}
                </label>
                <button type="submit" class="button small danger"
                    disabled=move || actions.disable.pending().get()>{label}</button>
            </ActionForm>
        </details>
    }
}
