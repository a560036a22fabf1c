//! A share's landing page (`/s/{slug}`): what the course holds, where the
//! visitor stands with it, and the code entry form.
//!
//! Code entry works without JavaScript (a plain form post to the server
//! function, which redirects back here); hydrated, the check symbol is
//! verified in the browser first, so a typo never costs an attempt.

use crate::i18n::Msg;
use leptos::{ev::SubmitEvent, html, prelude::*};
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use server_fn::ServerFn as _;

use crate::{
    components::{
        brand::{BrandAccent, BrandHeader, SupportFooter},
        form::{FieldError, FormAlert, invalid},
    },
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
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(page) => view! { <ShareBody page enter/> }.into_any(),
                    Err(AppError::NotFound) => view! { <NotFound/> }.into_any(),
                    Err(error) => view! {
                        <Title text=t(Msg::Course)/>
                        <crate::components::ErrorFlash error/>
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
        foreign_codes,
        brand,
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
        (_, LearnerState::Ended { .. }) => "ended",
    };
    view! {
        <Title text=title.clone()/>
        <article class="share" data-state=state>
            <header class="share-header">
                <BrandAccent brand=brand.clone()/>
                <BrandHeader brand=brand.clone()/>
                <p class="eyebrow">{t(Msg::Course)}</p>
                <h1>{title}</h1>
                {(!description.is_empty()).then(|| view! { <p class="lead description">{description}</p> })}
            </header>
            // Outside the form: a refusal stays visible when the page's
            // state changes under it (e.g. to "has access").
            <FormAlert error=Signal::derive(move || enter.value().get().and_then(Result::err))/>
            {unavailable.map(|reason| view! {
                <div class="flash warning state-banner" role="status">{reason}</div>
            })}
            <StateBanner me=me.clone() slug=slug.clone() here=here.clone() enter blocked=state == "unavailable" foreign_codes/>
            <ResourceList slug resources can_open/>
            <SupportFooter brand/>
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
    /// The share takes imported codes too.
    foreign_codes: bool,
) -> impl IntoView {
    match me {
        LearnerState::SignedOut => {
            let next = urlencode(&here);
            view! {
                <section class="card state-card">
                    <h2>{t(Msg::HaveAnAccessCode)}</h2>
                    <p>{t(Msg::SignInOrCreateAnAccount)}</p>
                    <p class="actions">
                        <a class="button" href=format!("/login?next={next}")>{t(Msg::SignIn)}</a>
                        <a class="button secondary" href=format!("/register?next={next}")>{t(Msg::CreateAccount)}</a>
                    </p>
                </section>
            }
            .into_any()
        }
        LearnerState::NeedsCode { email } if !blocked => view! {
            <section class="card state-card">
                <h2>{t(Msg::EnterYourAccessCode)}</h2>
                <p>
                    {t(Msg::YourCodeWillBeBoundTo)}
                    <strong>{email}</strong>
                    {t(Msg::WhenYouFirstOpenTheCourse)}
                </p>
                <CodeForm slug enter foreign_codes/>
            </section>
        }
        .into_any(),
        LearnerState::NeedsCode { .. } => ().into_any(),
        LearnerState::Pending {
            email,
            must_verify: true,
        } => view! {
            <section class="card state-card accepted" role="status">
                <h2>{t(Msg::CodeAccepted)}</h2>
            </section>
            <crate::components::verify::VerifyNotice email/>
        }
        .into_any(),
        LearnerState::Pending { email, .. } => view! {
            <section class="card state-card accepted" role="status">
                <h2>{t(Msg::CodeAccepted)}</h2>
                <p>
                    {t(Msg::ItWillBeBoundToThis)}
                    <strong>{email}</strong>
                    {t(Msg::WhenYouFirstOpenTheCourse2)}
                </p>
            </section>
        }
        .into_any(),
        LearnerState::HasAccess(bound) => view! {
            <BoundNote bound/>
            <p class="transfer-link muted">
                <a href=format!("/s/{slug}/transfer")>{t(Msg::MoveThisCourseToAnotherAccount)}</a>
            </p>
        }
        .into_any(),
        LearnerState::Ended { email, ended } => view! {
            <section class="card state-card ended" role="status">
                <h2>{t(Msg::YourAccessHasEnded)}</h2>
                <p>{crate::i18n::lang().format(Msg::AccessEndedExplained, &[("ended", &ended), ("email", &email)])}</p>
            </section>
        }
        .into_any(),
        LearnerState::Withdrawn { email, hint } => view! {
            <section class="card state-card withdrawn" role="status">
                <h2>{t(Msg::AccessWithdrawn)}</h2>
                <p>
                    {t(Msg::TheCourseProviderRevokedTheCode)}
                    <code>{hint}</code>
                    {t(Msg::BoundTo)}
                    <strong>{email}</strong>
                    {t(Msg::ContactThemIfYouThinkThis)}
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
            <h2>{t(Msg::YouHaveAccess)}</h2>
            <p class="bound-note">
                {t(Msg::BoundTo2)}
                <strong>{bound.email}</strong>
                {t(Msg::Since3)}
                {bound.since}
                {(!bound.hint.is_empty())
                    .then(|| view! { {t(Msg::Code3)} <code>{bound.hint}</code> {t(Msg::Punctuation4)} })}
                {t(Msg::SignInOnAnyDeviceTo)}
            </p>
            {bound.until.map(|until| view! {
                <p class="access-until">{crate::i18n::lang().format(Msg::YourAccessLastsUntil, &[("until", &until)])}</p>
            })}
        </section>
    }
}

#[component]
fn CodeForm(slug: String, enter: ServerAction<EnterCode>, foreign_codes: bool) -> impl IntoView {
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
        match codeformat::read(&typed, foreign_codes) {
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
                <label for="code">{t(Msg::AccessCode)}</label>
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
                    maxlength=if foreign_codes { 128 } else { 64 }
                    placeholder="ABCD-2345-WXYZ"
                    aria-invalid=invalid(error, "code")
                    aria-describedby="code-hint code-error"
                />
                <p class="hint" id="code-hint">
                    {if foreign_codes { t(Msg::CodeHintAnyFormat) } else { t(Msg::N12LettersAndDigitsSpacesDashes) }}
                </p>
                <FieldError error field="code"/>
            </div>
            <p class="visually-hidden" role="status">{outcome}</p>
            <button type="submit" class="button" disabled=move || enter.pending().get()>
                {move || if enter.pending().get() { t(Msg::Checking) } else { t(Msg::UseThisCode) }}
            </button>
        </form>
    }
}

#[component]
fn ResourceList(slug: String, resources: Vec<ResourceItem>, can_open: bool) -> impl IntoView {
    if resources.is_empty() {
        return view! { <p class="muted">{t(Msg::NothingHasBeenPublishedInThis)}</p> }.into_any();
    }
    view! {
        <section class="resources">
            <h2>{t(Msg::InThisCourse)}</h2>
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
