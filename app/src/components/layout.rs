//! The page shell: header with navigation and the signed-in state, footer.

use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::auth::{Logout, whoami};

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
        <a class="skip-link" href="#main">"Skip to content"</a>
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
                    <span class="visually-hidden">"Menu"</span>
                    <span aria-hidden="true">"☰"</span>
                </button>
                <nav id="site-nav" class="site-nav" class:open=move || open.get() aria-label="Main">
                    <ul>
                        <li><a href="/">"Home"</a></li>
                        <Transition fallback=|| ()>
                            {move || Suspend::new(async move {
                                match user.await.ok().flatten() {
                                    Some(user) => view! {
                                        <li><a href="/courses">"My courses"</a></li>
                                        <li><a href="/admin">"Console"</a></li>
                                        <li>
                                            <a href="/account" class="account-link">
                                                <span class="visually-hidden">"Signed in as "</span>
                                                {user.display_name}
                                            </a>
                                        </li>
                                        <li>
                                            <ActionForm action=logout attr:class="inline-form">
                                                <button type="submit" class="link-button">"Sign out"</button>
                                            </ActionForm>
                                        </li>
                                    }.into_any(),
                                    None => view! {
                                        <li><a href="/login">"Sign in"</a></li>
                                        <li><a href="/register" class="button small">"Create account"</a></li>
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

#[component]
pub fn Footer() -> impl IntoView {
    view! {
        <footer class="site-footer">
            <div class="container">
                <p>"AdmitOne: one person, one code."</p>
            </div>
        </footer>
    }
}
