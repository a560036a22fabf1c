//! The landing page: what AdmitOne is, for creators and for learners.

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text=""/>
        <section class="hero">
            <h1>"Sell a course to exactly the people you meant."</h1>
            <p class="lead">
                "Publish a course once, hand out one access code per learner. "
                "The first time a learner opens the course, their code is bound to their "
                "account for good: one person, one code."
            </p>
        </section>
        <section class="cards">
            <article class="card">
                <h2>"For course creators"</h2>
                <p>
                    "Create a share, upload videos, files and pages, issue a batch of codes "
                    "and see who redeemed which one."
                </p>
            </article>
            <article class="card">
                <h2>"For learners"</h2>
                <p>
                    "Open the link you were given, sign in, enter your code once. "
                    "Come back from any device without it."
                </p>
            </article>
        </section>
    }
}
