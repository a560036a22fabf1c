//! "My courses" (`/courses`): every share the learner holds a code of, in
//! every tenant, so a returning learner needs neither the link nor the code.

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::components::ErrorFlash;
use leptos_meta::Title;

use crate::{
    error::AppError,
    i18n::t,
    learner::{CourseItem, my_courses},
};

#[component]
pub fn CoursesPage() -> impl IntoView {
    let courses = Resource::new(|| (), |_| my_courses());
    view! {
        <Title text=t(Msg::MyCourses)/>
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
