//! The page shell: header with navigation and the signed-in state, footer.

use crate::i18n::Msg;
use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::auth::{Logout, whoami};
use crate::i18n::{Lang, lang, t};

/// Site header. On narrow screens the navigation collapses behind a menu
/// button (which needs the hydrated page; without JavaScript the menu is
/// shown open, see `style/main.css`).
#[component]
pub fn Header() -> impl IntoView {
    let open = RwSignal::new(false);
    let location = use_location();
    let logout = expect_context::<ServerAction<Logout>>();
    let user = Resource::new(
        move || (location.pathname.get(), logout.version().get()),
        |_| whoami(),
    );
    // Close the menu after navigating.
    Effect::new(move |_| {
        location.pathname.track();
        open.set(false);
    });
    view! {
        <a class="skip-link" href="#main">{t(Msg::SkipToContent)}</a>
        <header class="site-header">
            <div class="container header-row">
                <a class="brand" href="/">
                    <span class="brand-mark" aria-hidden="true">"A1"</span>
                    "AdmitOne"
                </a>
                <button
                    class="nav-toggle"
                    type="button"
                    aria-controls="site-nav"
                    aria-expanded=move || open.get().to_string()
                    on:click=move |_| open.update(|o| *o = !*o)
                >
                    <span class="visually-hidden">{t(Msg::Menu)}</span>
                    <span aria-hidden="true">"☰"</span>
                </button>
                <nav id="site-nav" class="site-nav" class:open=move || open.get() aria-label=t(Msg::Main)>
                    <ul>
                        <li><a href="/">{t(Msg::Home)}</a></li>
                        <Transition fallback=|| ()>
                            {move || Suspend::new(async move {
                                // Shown signed out when it cannot be read;
                                // the page's status still says why.
                                let user = user.await.inspect_err(crate::error::AppError::set_response_status);
                                match user.ok().flatten() {
                                    Some(user) => view! {
                                        <li><a href="/courses">{t(Msg::MyCourses)}</a></li>
                                        <li><a href="/admin">{t(Msg::Console)}</a></li>
                                        <li>
                                            <a href="/account" class="account-link">
                                                <span class="visually-hidden">{t(Msg::SignedInAs)}</span>
                                                {user.display_name}
                                            </a>
                                        </li>
                                        <li>
                                            <ActionForm action=logout attr:class="inline-form">
                                                <button type="submit" class="link-button">{t(Msg::SignOut)}</button>
                                            </ActionForm>
                                        </li>
                                    }.into_any(),
                                    None => view! {
                                        <li><a href="/login">{t(Msg::SignIn)}</a></li>
                                        <li><a href="/register" class="button small">{t(Msg::CreateAccount)}</a></li>
                                    }.into_any(),
                                }
                            })}
                        </Transition>
                    </ul>
                </nav>
            </div>
        </header>
    }
}

/// Site footer, with the language switcher: plain links to `/lang/{tag}`,
/// which set the `lang` cookie and come back here, with or without
/// JavaScript.
#[component]
pub fn Footer() -> impl IntoView {
    let location = use_location();
    let current = lang();
    let back = move || {
        let here = format!("{}{}", location.pathname.get(), location.search.get());
        encode_query_value(&here)
    };
    view! {
        <footer class="site-footer">
            <div class="container footer-row">
                <p>{t(Msg::AdmitoneOnePersonOneCode)}</p>
                <nav class="lang-switch" aria-label=t(Msg::Language)>
                    {Lang::ALL
                        .into_iter()
                        .map(|l| {
                            let href = move || format!("/lang/{}?back={}", l.tag(), back());
                            view! {
                                // `rel=external`: a full page load (the
                                // server sets the cookie and redirects),
                                // not the router's client-side navigation.
                                <a
                                    href=href
                                    rel="external"
                                    hreflang=l.tag()
                                    lang=l.tag()
                                    aria-current=(l == current).then_some("true")
                                >
                                    {l.name()}
                                </a>
                            }
                        })
                        .collect_view()}
                </nav>
            </div>
        </footer>
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
