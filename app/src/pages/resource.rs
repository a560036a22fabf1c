//! Opening one resource (`/s/{slug}/r/{id}`): phase 3, the one place a
//! person's opening counts an access. Rendering the page runs the
//! settlement on the server (a first opening binds the pending code), so it
//! works without JavaScript; the player then streams from the content
//! route, which only serves under the live grant this opening left and
//! never counts.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use model::ResourceKind;

use crate::{
    components::brand::{BrandAccent, BrandHeader, SupportFooter},
    error::AppError,
    i18n::t,
    learner::{OpenedResource, human_size, open_resource},
    pages::{not_found::NotFound, share::BoundNote},
};

#[component]
pub fn ResourcePage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let resource = move || params.read().get("resource").unwrap_or_default();
    let opened = Resource::new(
        move || (slug(), resource()),
        |(slug, resource)| open_resource(slug, resource),
    );
    view! {
        <Transition fallback=|| view! { <p>{t(Msg::Opening)}</p> }>
            {move || Suspend::new(async move {
                let here = format!("/s/{}/r/{}", slug(), resource());
                let share = format!("/s/{}", slug());
                match opened.await {
                    Ok(opened) => view! { <Opened opened/> }.into_any(),
                    Err(AppError::NotFound) => view! { <NotFound/> }.into_any(),
                    Err(AppError::Unauthenticated) => view! {
                        <crate::components::SignInFirst next=here/>
                    }.into_any(),
                    Err(error) => view! { <Refused error here share/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Opened(opened: OpenedResource) -> impl IntoView {
    let OpenedResource {
        share_slug,
        share_title,
        resource,
        content_url,
        bound,
        bound_now,
        brand,
    } = opened;
    let title = resource.title.clone();
    let content = match resource.kind {
        ResourceKind::Video => {
            let fallback = content_url.clone();
            view! {
                <video class="player" controls=true preload="metadata" playsinline=true src=content_url>
                    <a href=fallback>{t(Msg::DownloadTheVideo)}</a>
                </video>
            }
            .into_any()
        }
        ResourceKind::Page => view! {
            // The page is served sandboxed (no scripts, no same-origin).
            <iframe class="page-frame" sandbox="" title=title.clone() src=content_url></iframe>
        }
        .into_any(),
        ResourceKind::File => view! {
            <p>
                <a class="button" href=content_url download="">
                    {t(Msg::Download)} {title.clone()} {t(Msg::Punctuation3)} {human_size(resource.size_bytes)} {t(Msg::Punctuation4)}
                </a>
            </p>
        }
        .into_any(),
    };
    view! {
        <Title text=format!("{} · {}", resource.title, share_title)/>
        <nav class="breadcrumb" aria-label=t(Msg::Breadcrumb)>
            <a href=format!("/s/{share_slug}")>{share_title}</a>
        </nav>
        <article class="opened" data-kind=resource.kind.as_str()>
            <BrandAccent brand=brand.clone()/>
            <BrandHeader brand=brand.clone()/>
            <h1>{resource.title}</h1>
            {bound_now.then(|| view! {
                <div class="flash success" role="status">
                    {t(Msg::YourCodeIsNowBoundTo)}
                </div>
            })}
            {content}
            <BoundNote bound/>
            <SupportFooter brand/>
        </article>
    }
}

/// Why the resource did not open, with the way forward.
#[component]
fn Refused(error: AppError, here: String, share: String) -> impl IntoView {
    error.set_response_status();
    let retry = error.is_retryable();
    let reason = match &error {
        AppError::Refused { reason, .. } => reason.clone(),
        AppError::TryAgain { .. } | AppError::Unavailable { .. } => "busy".to_owned(),
        _ => "error".to_owned(),
    };
    // A link from another site reaches only a live grant: one click here
    // (this site) opens it.
    let open_here = reason == "open_from_course_page";
    // A code binds to verified addresses only: offer the link again here.
    let verify = reason == "email_not_verified";
    let heading = if retry {
        t(Msg::NotJustNow)
    } else {
        t(Msg::ThisDidNotOpen)
    };
    view! {
        <Title text=heading/>
        <section class="error-page refused" data-reason=reason>
            <h1>{heading}</h1>
            <div class="flash error" role="alert">{error.sentence()}</div>
            {verify.then(|| view! { <ResendLink/> })}
            <p class="actions">
                // A whole new request (rel="external"): the router would
                // ignore a link to the page it is on, and opening it here
                // must be a request from this site.
                {retry.then(|| view! { <a class="button" rel="external" href=here.clone()>{t(Msg::TryAgain)}</a> })}
                {open_here.then(|| view! { <a class="button" rel="external" href=here.clone()>{t(Msg::OpenIt)}</a> })}
                <a class=if retry || open_here { "button secondary" } else { "button" } href=share>{t(Msg::BackToTheCourse)}</a>
            </p>
        </section>
    }
}

/// "Send the verification link again", where opening needs a verified
/// address.
#[component]
fn ResendLink() -> impl IntoView {
    let resend = ServerAction::<crate::auth::ResendVerification>::new();
    let error = Signal::derive(move || resend.value().get().and_then(Result::err));
    let sent = move || resend.value().get().and_then(Result::ok);
    view! {
        <crate::components::form::FormAlert error/>
        {move || sent().map(|message| view! { <div class="flash success" role="status">{message}</div> })}
        <ActionForm action=resend attr:class="resend-verification">
            <button type="submit" class="button secondary" disabled=move || resend.pending().get()>
                {t(Msg::SendTheVerificationLinkAgain)}
            </button>
        </ActionForm>
    }
}
