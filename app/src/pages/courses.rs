//! "My courses" (`/courses`): every share the learner holds a code of, in
//! every tenant, so a returning learner needs neither the link nor the code;
//! and above them the courses waiting for the learner (a code addressed to
//! their verified address, mailed, not yet redeemed).

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;

use crate::{
    error::AppError,
    i18n::t,
    learner::{CourseItem, WaitingItem, my_courses, waiting_courses},
};

#[component]
pub fn CoursesPage() -> impl IntoView {
    let courses = Resource::new(|| (), |_| my_courses());
    let waiting = Resource::new(|| (), |_| waiting_courses());
    view! {
        <Title text=t(Msg::MyCourses)/>
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                // Nothing to add when none waits (or the learner is signed
                // out: the list below says so).
                waiting.await.ok().filter(|w| !w.is_empty()).map(|waiting| view! { <Waiting waiting/> })
            })}
        </Transition>
        <Transition fallback=|| view! { <p>{t(Msg::Loading)}</p> }>
            {move || Suspend::new(async move {
                match courses.await {
                    Ok(courses) => view! { <CourseList courses/> }.into_any(),
                    Err(AppError::Unauthenticated) => view! { <crate::components::SignInFirst next="/courses"/> }.into_any(),
                    Err(error) => view! { <ErrorFlash error/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Waiting(waiting: Vec<WaitingItem>) -> impl IntoView {
    view! {
        <section class="waiting" aria-labelledby="waiting-title">
            <h2 id="waiting-title">{t(Msg::WaitingForYou)}</h2>
            <ul class="course-list">
                {waiting
                    .into_iter()
                    .map(|w| {
                        let href = format!("/s/{}", w.slug);
                        view! {
                            <li class="card course waiting">
                                <h3><a href=href>{w.title}</a></h3>
                                <p class="muted">{w.provider}{t(Msg::Code2)}<code>{w.hint}</code></p>
                                <p class="note">{crate::i18n::lang().format(Msg::ACodeForThisCourseWasSent, &[("email", &w.email)])}</p>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}

#[component]
fn CourseList(courses: Vec<CourseItem>) -> impl IntoView {
    view! {
        <h1>{t(Msg::MyCourses)}</h1>
        {if courses.is_empty() {
            view! {
                <section class="card empty">
                    <p>{t(Msg::YouHaveNoCoursesYet)}</p>
                    <p class="muted">
                        {t(Msg::OpenTheLinkYourCourseProvider)}
                    </p>
                </section>
            }
            .into_any()
        } else {
            view! {
                <ul class="course-list">
                    {courses
                        .into_iter()
                        .map(|c| {
                            let href = format!("/s/{}", c.slug);
                            view! {
                                <li class="card course" class:closed=!c.open>
                                    <h2>
                                        {if c.open {
                                            view! { <a href=href>{c.title}</a> }.into_any()
                                        } else {
                                            view! { <span>{c.title}</span> }.into_any()
                                        }}
                                    </h2>
                                    <p class="muted">
                                        {c.provider}{t(Msg::Since2)}{c.since}{t(Msg::Code2)}<code>{c.hint}</code>
                                        {c.until.map(|until| crate::i18n::lang().format(Msg::UntilDate, &[("until", &until)]))}
                                    </p>
                                    {c.note.map(|note| view! { <p class="note">{note}</p> })}
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            }
            .into_any()
        }}
    }
}
