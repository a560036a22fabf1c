//! Moving a course to another account, the learner's two pages.
//!
//! `/s/{slug}/transfer`: the learner who holds the course names the
//! address of their other account (and a word for the course's team),
//! sees where the request stands, and can withdraw it. `/transfer?token=…`:
//! the mailed link; the receiving account confirms it signed in with that
//! address (signed out, the page offers to sign in or register and come
//! back). The course's team approves or refuses in the console. Both work
//! without JavaScript (plain form posts).

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_params_map, use_query_map};

use crate::{
    components::{
        form::{Field, FormAlert},
        mailed_link::{self, SignInToUse},
    },
    error::AppError,
    i18n::{lang, t, transfer_status},
    learner::transfers::{
        CancelTransfer, ConfirmTransfer, RequestTransfer, TransferLinkView, TransferPageView,
        transfer_link, transfer_page,
    },
};

#[component]
pub fn TransferRequestPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let request = ServerAction::<RequestTransfer>::new();
    let cancel = ServerAction::<CancelTransfer>::new();
    let data = Resource::new(
        move || (slug(), request.version().get(), cancel.version().get()),
        |(slug, _, _)| transfer_page(slug),
    );
    view! {
        <Title text=t(Msg::MoveThisCourseToAnotherAccount)/>
        <section class="card transfer-request">
            <h1>{t(Msg::MoveThisCourseToAnotherAccount)}</h1>
            <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(page) => view! { <RequestForm page slug=slug() request cancel/> }.into_any(),
                        // Signed out: to sign in, and back here afterwards.
                        Err(AppError::Unauthenticated) => view! {
                            <crate::components::SignInFirst next=format!("/s/{}/transfer", slug())/>
                        }.into_any(),
                        Err(error) => view! { <ErrorFlash error/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn RequestForm(
    page: TransferPageView,
    slug: String,
    request: ServerAction<RequestTransfer>,
    cancel: ServerAction<CancelTransfer>,
) -> impl IntoView {
    let error = Signal::derive(move || {
        request
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| cancel.value().get().and_then(Result::err))
    });
    let open = page.latest.as_ref().is_some_and(|l| l.status.is_open());
    let course_link = format!("/s/{slug}");
    view! {
        {page.holds.then(|| view! {
            <p class="lead">{lang().format(Msg::TheCourseIsBoundTo, &[("course", &page.title), ("email", &page.email)])}</p>
        })}
        {page.latest.clone().map(|latest| view! {
            <div class="flash info transfer-status" role="status" data-status=latest.status.as_str()>
                {lang().format(Msg::YourRequestToMoveItTo, &[("to_email", &latest.to_email), ("asked", &latest.asked), ("status", &transfer_status(latest.status))])}
                {latest.reason.map(|r| view! { " " <q>{r}</q> })}
            </div>
        })}
        <FormAlert error/>
        {if open {
            view! {
                <ActionForm action=cancel attr:class="form">
                    <input type="hidden" name="slug" value=slug.clone()/>
                    <button type="submit" class="button secondary">{t(Msg::WithdrawTheRequest)}</button>
                </ActionForm>
            }.into_any()
        } else if page.holds {
            view! {
                <p>{t(Msg::NameTheAddressOfYourOther)}</p>
                <ActionForm action=request attr:class="form narrow">
                    <input type="hidden" name="slug" value=slug.clone()/>
                    <Field name="email" label=t(Msg::AddressOfTheOtherAccount) kind="email" autocomplete="email" error/>
                    <Field name="note" label=t(Msg::AWordForTheCourseSTeam) hint=t(Msg::OptionalAtMost500Characters) maxlength=500 required=false error/>
                    <button type="submit" class="button" disabled=move || request.pending().get()>{t(Msg::AskToMoveTheCourse)}</button>
                </ActionForm>
            }.into_any()
        } else {
            view! { <p class="muted">{t(Msg::YouHoldNoCodeOfThis)}</p> }.into_any()
        }}
        <p><a href=course_link>{t(Msg::BackToTheCourse)}</a></p>
    }
}

#[component]
pub fn TransferConfirmPage() -> impl IntoView {
    let query = use_query_map();
    let location = use_location();
    let token = move || query.read().get("token").unwrap_or_default();
    let data = Resource::new(token, transfer_link);
    let confirm = ServerAction::<ConfirmTransfer>::new();
    let error = Signal::derive(move || confirm.value().get().and_then(Result::err));
    view! {
        <Title text=t(Msg::ConfirmTheMove)/>
        <section class="auth card transfer-confirm">
            <h1>{t(Msg::ConfirmTheMove)}</h1>
            <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
                {move || {
                    let here = mailed_link::here(&location);
                    Suspend::new(async move {
                        match data.await {
                            Ok(TransferLinkView::Open { course, tenant_name, from_email, to_email, signed_in_as }) => {
                                let intro = lang().format(Msg::AskedToMoveTheirAccessToPage, &[("from_email", &from_email), ("tenant", &tenant_name), ("course", &course), ("to_email", &to_email)]);
                                let action = match signed_in_as {
                                    Some(me) if me == to_email => view! {
                                        <FormAlert error/>
                                        <ActionForm action=confirm attr:class="form">
                                            <input type="hidden" name="token" value=token/>
                                            <button type="submit" class="button" disabled=move || confirm.pending().get()>{t(Msg::ConfirmTheMove)}</button>
                                        </ActionForm>
                                    }.into_any(),
                                    Some(me) => view! {
                                        <div class="flash warning" role="status">{lang().format(Msg::YouAreSignedInAsTheRequest, &[("email", &to_email), ("me", &me)])}</div>
                                    }.into_any(),
                                    None => view! {
                                        <SignInToUse message=lang().format(Msg::SignInWithToConfirmOr, &[("email", &to_email)]) here/>
                                    }.into_any(),
                                };
                                view! { <p class="transfer-intro">{intro}</p> {action} }.into_any()
                            }
                            Ok(TransferLinkView::Invalid) => view! {
                                <div class="flash error link-invalid" role="alert">{t(Msg::ThisLinkHasExpiredWasReplaced)}</div>
                            }.into_any(),
                            Err(error) => view! { <ErrorFlash error/> }.into_any(),
                        }
                    })
                }}
            </Transition>
        </section>
    }
}
