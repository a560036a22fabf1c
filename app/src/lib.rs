//! AdmitOne's user interface: Leptos pages, components and server functions.
//!
//! The same crate compiles twice: natively with the `ssr` feature (server
//! rendering, server functions, access to the `engine` domain crate) and to
//! wasm with `hydrate` (the interactive layer). Server functions stay thin:
//! parse the input, call `engine`, map the error to [`error::AppError`].

pub mod admin;
pub mod auth;
pub mod components;
pub mod error;
pub mod i18n;
pub mod learner;
pub mod membership;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod state;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::{
    SsrMode, StaticSegment,
    components::{Route, Router, Routes},
    path,
};

use crate::auth::Logout;
use crate::components::{
    flash::FlashMessage,
    layout::{Footer, Header},
};
use crate::pages::{
    account::AccountPage,
    admin::ConsoleHome,
    console::{
        audit::AuditLogPage, codes::CodesPage, dashboard::DashboardPage, issued::IssuedPage,
        learners::LearnersPage, share::ShareAdminPage, team::TeamPage, tokens::TokensPage,
        webhooks::WebhooksPage,
    },
    courses::CoursesPage,
    home::HomePage,
    invitation::InvitationPage,
    links::{ConfirmEmailPage, VerifyEmailPage},
    login::LoginPage,
    not_found::NotFound,
    recovery::{ForgotPasswordPage, ResetPasswordPage},
    register::RegisterPage,
    resource::ResourcePage,
    share::SharePageView,
};

/// The HTML document around every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    content_security_policy();
    view! {
        <!DOCTYPE html>
        <html lang=i18n::lang().tag()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Sends the page's Content-Security-Policy: scripts only with this
/// render's nonce (Leptos puts it on the hydration script and on every
/// inline script it writes; `'strict-dynamic'` lets the hydration script
/// load the bundle it imports), wasm compiled, everything else from our
/// origin, and never framed. No inline styles or event handlers exist in
/// the app, so none are allowed.
#[cfg(feature = "ssr")]
fn content_security_policy() {
    let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    // `cargo leptos watch` reloads pages over a websocket of its own.
    let reload = if std::env::var_os("LEPTOS_WATCH").is_some() {
        " ws: wss:"
    } else {
        ""
    };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'strict-dynamic' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'{reload}; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    );
    if let Ok(value) = http::HeaderValue::from_str(&policy) {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

/// The document title of a page. leptos_meta writes the server's `<title>`
/// unescaped (a share titled `</title><script>…` would run), so on the
/// server the text is escaped here; in the browser it goes to
/// `document.title`, which is plain text already.
fn page_title(title: String) -> String {
    let full = if title.is_empty() {
        "AdmitOne".to_owned()
    } else {
        format!("{title} · AdmitOne")
    };
    if cfg!(feature = "ssr") {
        escape_text(&full)
    } else {
        full
    }
}

/// HTML-escapes text content.
fn escape_text(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles_cannot_close_the_title_element() {
        let title = super::escape_text("</title><script>alert(1)</script> & co");
        assert_eq!(
            title,
            "&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"
        );
    }
}

/// The application: page shell and routes.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Decided once per page, from the request (server) or `<html lang>`
    // (browser), so every component renders in the same language.
    provide_context(i18n::lang());
    components::hydration::mark_hydrated();
    // One sign-out action for the whole page, so the header and the flash
    // message refresh when it completes.
    provide_context(ServerAction::<Logout>::new());

    view! {
        <Stylesheet id="leptos" href="/pkg/admitone.css"/>
        <Title formatter=page_title/>
        <Router>
            <Header/>
            <main id="main" class="container">
                <FlashMessage/>
                // Async SSR: every page is complete (and its session changes
                // saved) before the response leaves, and works without
                // JavaScript.
                <Routes fallback=NotFound>
                    <Route path=StaticSegment("") view=HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async/>
                    <Route path=path!("/register") view=RegisterPage ssr=SsrMode::Async/>
                    <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async/>
                    <Route path=path!("/forgot-password") view=ForgotPasswordPage ssr=SsrMode::Async/>
                    <Route path=path!("/reset-password") view=ResetPasswordPage ssr=SsrMode::Async/>
                    <Route path=path!("/verify-email") view=VerifyEmailPage ssr=SsrMode::Async/>
                    <Route path=path!("/confirm-email") view=ConfirmEmailPage ssr=SsrMode::Async/>
                    <Route path=path!("/invitation") view=InvitationPage ssr=SsrMode::Async/>
                    <Route path=path!("/courses") view=CoursesPage ssr=SsrMode::Async/>
                    <Route path=path!("/s/:slug") view=SharePageView ssr=SsrMode::Async/>
                    <Route path=path!("/s/:slug/r/:resource") view=ResourcePage ssr=SsrMode::Async/>
                    <Route path=path!("/admin") view=ConsoleHome ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant") view=DashboardPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/team") view=TeamPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/audit") view=AuditLogPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/tokens") view=TokensPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/webhooks") view=WebhooksPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share") view=ShareAdminPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/codes") view=CodesPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/learners") view=LearnersPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/batches/:batch") view=IssuedPage ssr=SsrMode::Async/>
                </Routes>
            </main>
            <Footer/>
        </Router>
    }
}
