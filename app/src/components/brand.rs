//! The course provider's branding on a learner's pages
//! ([`crate::learner::Brand`]): its logo and name above the course, and
//! its support address below, and its accent ([`BrandAccent`]). What is shown always comes with the
//! share being shown, so one tenant's branding never reaches another's
//! pages.

use leptos::prelude::*;

use crate::{
    i18n::{Msg, lang},
    learner::Brand,
};

/// The provider's accent as the page's `--accent` (buttons, links): a
/// stylesheet of our origin for that colour, in the page's head while the
/// page is shown.
#[component]
pub fn BrandAccent(brand: Brand) -> impl IntoView {
    brand
        .stylesheet()
        .map(|href| view! { <leptos_meta::Stylesheet id="brand-accent" href/> })
}

/// The provider's logo and name, above a course's title.
#[component]
pub fn BrandHeader(brand: Brand) -> impl IntoView {
    let Brand { name, logo_url, .. } = brand;
    (!name.is_empty() || logo_url.is_some()).then(|| {
        view! {
            <p class="provider">
                {logo_url.map(|src| view! {
                    // The name beside it says who it is: the image is decoration.
                    <img class="provider-logo" src=src alt="" height="40"/>
                })}
                <span class="provider-name">{name}</span>
            </p>
        }
    })
}

/// "Questions? Write to …": the provider's support address, if it gave one.
#[component]
pub fn SupportFooter(brand: Brand) -> impl IntoView {
    let Brand {
        name,
        support_email,
        ..
    } = brand;
    support_email.map(|email| {
        let text = lang().format(Msg::QuestionsAboutThisCourseWrite, &[("tenant", &name)]);
        view! {
            <footer class="provider-support">
                {text}{" "}<a href=format!("mailto:{email}")>{email.clone()}</a>
            </footer>
        }
    })
}
