//! A share's landing page (`/s/{slug}`): what the course holds, where the
//! visitor stands with it, and the code entry form.
//!
//! Code entry works without JavaScript (a plain form post to the server
//! function, which redirects back here); hydrated, the check symbol is
//! verified in the browser first, so a typo never costs an attempt.

use leptos::{ev::SubmitEvent, html, prelude::*};
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use server_fn::ServerFn as _;

use crate::{
    components::form::{FieldError, FormAlert, invalid},
    error::AppError,
    i18n::t,
    learner::{Bound, EnterCode, LearnerState, ResourceItem, SharePage, human_size, share_view},
    pages::{login::urlencode, not_found::NotFound},
};

#[component]
pub fn SharePageView() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let enter = ServerAction::<EnterCode>::new();
    // A card's `#code=…` survives the sign-in detour in this tab only.
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let window = leptos::prelude::window();
            if let (Some(code), Some(storage)) = (
                window
                    .location()
                    .hash()
                    .ok()
                    .and_then(|h| h.strip_prefix("#code=").map(str::to_owned)),
                window.session_storage().ok().flatten(),
            ) {
                let _ = storage.set_item(&format!("admitone:code:{}", slug()), &code);
            }
        }
    });
    let page = Resource::new(
        move || (slug(), enter.version().get()),
        |(slug, _)| share_view(slug),
    );
    view! {
        <Transition fallback=|| view! { <p>{t("Loading…", "加载中…")}</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(page) => view! { <ShareBody page enter/> }.into_any(),
                    Err(AppError::NotFound) => view! { <NotFound/> }.into_any(),
                    Err(error) => view! {
                        <Title text=t("Course", "课程")/>
                        <div class="flash error" role="alert">{error.sentence()}</div>
                    }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ShareBody(page: SharePage, enter: ServerAction<EnterCode>) -> impl IntoView {
    let SharePage {
        slug,
        title,
        description,
        resources,
        unavailable,
        me,
    } = page;
    let here = format!("/s/{slug}");
    let can_open = unavailable.is_none()
        && matches!(
            me,
            LearnerState::Pending { .. } | LearnerState::HasAccess(_)
        );
    let state = match (&unavailable, &me) {
        (Some(_), LearnerState::HasAccess(_)) => "has-access",
        (Some(_), _) => "unavailable",
        (None, LearnerState::SignedOut) => "signed-out",
        (None, LearnerState::NeedsCode { .. }) => "needs-code",
        (None, LearnerState::Pending { .. }) => "pending",
        (None, LearnerState::HasAccess(_)) => "has-access",
        (None, LearnerState::Withdrawn { .. }) => "withdrawn",
    };
    view! {
        <Title text=title.clone()/>
        <article class="share" data-state=state>
            <header class="share-header">
                <p class="eyebrow">{t("Course", "课程")}</p>
                <h1>{title}</h1>
                {(!description.is_empty()).then(|| view! { <p class="lead description">{description}</p> })}
            </header>
            // Outside the form: a refusal stays visible when the page's
            // state changes under it (e.g. to "has access").
            <FormAlert error=Signal::derive(move || enter.value().get().and_then(Result::err))/>
            {unavailable.map(|reason| view! {
                <div class="flash warning state-banner" role="status">{reason}</div>
            })}
            <StateBanner me=me.clone() slug=slug.clone() here=here.clone() enter blocked=state == "unavailable"/>
            <ResourceList slug resources can_open/>
        </article>
    }
}

#[component]
fn StateBanner(
    me: LearnerState,
    slug: String,
    here: String,
    enter: ServerAction<EnterCode>,
    blocked: bool,
) -> impl IntoView {
    match me {
        LearnerState::SignedOut => {
            let next = urlencode(&here);
            view! {
                <section class="card state-card">
                    <h2>{t("Have an access code?", "有兑换码？")}</h2>
                    <p>{t("Sign in or create an account, then enter your code. You will come back to this page.", "请先登录或注册账号，再输入兑换码。完成后会回到本页。")}</p>
                    <p class="actions">
                        <a class="button" href=format!("/login?next={next}")>{t("Sign in", "登录")}</a>
                        <a class="button secondary" href=format!("/register?next={next}")>{t("Create account", "注册账号")}</a>
                    </p>
                </section>
            }
            .into_any()
        }
        LearnerState::NeedsCode { email } if !blocked => view! {
            <section class="card state-card">
                <h2>{t("Enter your access code", "输入兑换码")}</h2>
                <p>
                    {t("Your code will be bound to this account (", "你首次打开课程时，兑换码将绑定到此账号（")}
                    <strong>{email}</strong>
                    {t(
                        ") when you first open the course. Until then, entering it binds nothing.",
                        "）。在此之前，输入兑换码不会产生任何绑定。",
                    )}
                </p>
                <CodeForm slug enter/>
            </section>
        }
        .into_any(),
        LearnerState::NeedsCode { .. } => ().into_any(),
        LearnerState::Pending { email, must_verify: true } => view! {
            <section class="card state-card accepted" role="status">
                <h2>{t("Code accepted", "兑换码有效")}</h2>
            </section>
            <crate::components::verify::VerifyNotice email/>
        }
        .into_any(),
        LearnerState::Pending { email, .. } => view! {
            <section class="card state-card accepted" role="status">
                <h2>{t("Code accepted", "兑换码有效")}</h2>
                <p>
                    {t("It will be bound to this account (", "你首次打开课程时，它将绑定到此账号（")}
                    <strong>{email}</strong>
                    {t(
                        ") when you first open the course. Open any item below to start.",
                        "）。打开下方任意内容即可开始。",
                    )}
                </p>
            </section>
        }
        .into_any(),
        LearnerState::HasAccess(bound) => view! { <BoundNote bound/> }.into_any(),
        LearnerState::Withdrawn { email, hint } => view! {
            <section class="card state-card withdrawn" role="status">
                <h2>{t("Access withdrawn", "访问权限已收回")}</h2>
                <p>
                    {t("The course provider revoked the code ", "课程提供方已作废兑换码 ")}
                    <code>{hint}</code>
                    {t(" bound to ", "（绑定账号：")}
                    <strong>{email}</strong>
                    {t(". Contact them if you think this is a mistake.", "）。如认为有误，请联系课程提供方。")}
                </p>
            </section>
        }
        .into_any(),
    }
}

/// "Bound to … since …".
#[component]
pub fn BoundNote(bound: Bound) -> impl IntoView {
    view! {
        <section class="card state-card bound" role="status">
            <h2>{t("You have access", "你已获得访问权限")}</h2>
            <p class="bound-note">
                {t("Bound to ", "已绑定到 ")}
                <strong>{bound.email}</strong>
                {t(" since ", "，绑定于 ")}
                {bound.since}
                {(!bound.hint.is_empty())
                    .then(|| view! { {t(" (code ", "（兑换码 ")} <code>{bound.hint}</code> {t(")", "）")} })}
                {t(
                    ". Sign in on any device to come back; you will not need the code again.",
                    "。在任何设备上登录即可回来，无需再次输入兑换码。",
                )}
            </p>
        </section>
    }
}

#[component]
fn CodeForm(slug: String, enter: ServerAction<EnterCode>) -> impl IntoView {
    let input = NodeRef::<html::Input>::new();
    // A typo caught in the browser: shown like the server's own message.
    let local_error = RwSignal::new(None::<AppError>);
    let error = Signal::derive(move || {
        local_error
            .get()
            .or_else(|| enter.value().get().and_then(Result::err))
    });
    // A QR code from a printed card opens the link with `#code=…` (a
    // fragment: never sent to the server, never logged): fill it in, also
    // after a detour through sign-in (kept in this tab's sessionStorage).
    let storage_key = format!("admitone:code:{slug}");
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(field) = input.get()
            && field.value().is_empty()
        {
            let window = leptos::prelude::window();
            let storage = window.session_storage().ok().flatten();
            let from_link = window
                .location()
                .hash()
                .ok()
                .and_then(|h| h.strip_prefix("#code=").map(str::to_owned));
            let kept = storage
                .as_ref()
                .and_then(|s| s.get_item(&storage_key).ok().flatten());
            if let Some(code) = from_link.or(kept) {
                field.set_value(&code);
                if let Some(storage) = storage {
                    let _ = storage.remove_item(&storage_key);
                }
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &storage_key;
    });
    // Errors are announced (role=alert); focus goes back to the field so
    // the learner can correct it at once.
    Effect::new(move |_| {
        if error.get().is_some()
            && let Some(field) = input.get()
        {
            let _ = field.focus();
        }
    });
    let outcome = move || {
        enter
            .value()
            .get()
            .and_then(Result::ok)
            .map(|outcome| outcome.message())
    };
    let form_slug = slug.clone();
    let on_submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        let typed = input.get().map(|i| i.value()).unwrap_or_default();
        match codeformat::canonicalise(&typed) {
            Err(problem) => local_error.set(Some(AppError::invalid(
                "code",
                crate::i18n::code_format_error(&problem),
            ))),
            Ok(_) => {
                local_error.set(None);
                enter.dispatch(EnterCode {
                    slug: form_slug.clone(),
                    code: typed,
                });
            }
        }
    };
    view! {
        <form method="post" action=EnterCode::url() class="form code-form" on:submit=on_submit>
            <input type="hidden" name="slug" value=slug/>
            <div class="field">
                <label for="code">{t("Access code", "兑换码")}</label>
                <input
                    id="code"
                    name="code"
                    type="text"
                    node_ref=input
                    class="code-input"
                    autocomplete="off"
                    autocapitalize="characters"
                    spellcheck="false"
                    required=true
                    maxlength=64
                    placeholder="ABCD-2345-WXYZ"
                    aria-invalid=invalid(error, "code")
                    aria-describedby="code-hint code-error"
                />
                <p class="hint" id="code-hint">
                    {t(
                        "12 letters and digits. Spaces, dashes and lower case are fine.",
                        "12 位字母和数字，可含空格和短横线，不区分大小写。",
                    )}
                </p>
                <FieldError error field="code"/>
            </div>
            <p class="visually-hidden" role="status">{outcome}</p>
            <button type="submit" class="button" disabled=move || enter.pending().get()>
                {move || if enter.pending().get() { t("Checking…", "正在验证…") } else { t("Use this code", "使用此兑换码") }}
            </button>
        </form>
    }
}

#[component]
fn ResourceList(slug: String, resources: Vec<ResourceItem>, can_open: bool) -> impl IntoView {
    if resources.is_empty() {
        return view! { <p class="muted">{t("Nothing has been published in this course yet.", "此课程尚未发布任何内容。")}</p> }
            .into_any();
    }
    view! {
        <section class="resources">
            <h2>{t("In this course", "课程内容")}</h2>
            <ul class="resource-list">
                {resources
                    .into_iter()
                    .map(|r| {
                        let label = crate::i18n::resource_kind(r.kind);
                        let href = format!("/s/{slug}/r/{}", r.id);
                        view! {
                            <li class="resource">
                                <span class="tag">{label}</span>
                                {if can_open {
                                    view! { <a href=href class="resource-title">{r.title}</a> }.into_any()
                                } else {
                                    view! { <span class="resource-title">{r.title}</span> }.into_any()
                                }}
                                <span class="muted">{human_size(r.size_bytes)}</span>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
    .into_any()
}
