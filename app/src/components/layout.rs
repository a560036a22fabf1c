//! The page shell: header with navigation, footer.

use leptos::prelude::*;

/// Site header. On narrow screens the navigation collapses behind a menu
/// button (which needs the hydrated page; without JavaScript the menu is
/// shown open, see `style/main.css`).
#[component]
pub fn Header() -> impl IntoView {
    let open = RwSignal::new(false);
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
