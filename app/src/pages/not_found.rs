//! The page for unknown addresses (served with status 404).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::t;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <Title text=t("Page not found", "页面不存在")/>
        <section class="error-page">
            <h1>{t("Page not found", "页面不存在")}</h1>
            <p>{t("There is nothing at this address. Check the link you were given, or go back home.", "这个地址没有内容。请检查你收到的链接，或返回首页。")}</p>
            <p><a class="button" href="/">{t("Go to the home page", "返回首页")}</a></p>
        </section>
    }
}
