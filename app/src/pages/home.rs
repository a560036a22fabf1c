//! The landing page: what AdmitOne is, for creators and for learners.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::t;

#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text=""/>
        <section class="hero">
            <h1>{t(Msg::SellACourseToExactlyThe)}</h1>
            <p class="lead">
                {t(Msg::PublishACourseOnceHandOut)}
            </p>
        </section>
        <section class="cards">
            <article class="card">
                <h2>{t(Msg::ForCourseCreators)}</h2>
                <p>
                    {t(Msg::CreateAShareUploadVideosFiles)}
                </p>
            </article>
            <article class="card">
                <h2>{t(Msg::ForLearners)}</h2>
                <p>
                    {t(Msg::OpenTheLinkYouWereGiven)}
                </p>
            </article>
        </section>
    }
}
