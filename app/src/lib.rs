//! AdmitOne's user interface: Leptos pages, components and server functions.
//!
//! The same crate compiles twice: natively with the `ssr` feature (server
//! rendering, server functions, access to `service` and `engine`) and to
//! wasm with `hydrate` (the interactive layer). Server functions stay thin:
//! parse the input, call a use case, map the error to [`error::AppError`].
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`pages`] | one module per page; `pages/console/` the creator's side |
//! | [`components`] | the shell (header, footer), one-time messages, form pieces, branding |
//! | [`learner`] | the learner's server functions: a share's page, code entry, opening, my courses, transfers |
//! | [`console`] | the console's server functions (`/api/admin/…`), one module per console page |
//! | [`auth`] | sign-in, registration, verification, reset and change of address; `auth::guard`: the session from context |
//! | [`membership`] | an invitation's page and its acceptance, tenant signup |
//! | [`error`] | [`error::AppError`]: the one error a page shows, and the one place it becomes a status |
//! | [`i18n`] | the page's language and its messages |
//! | [`state`] | the service layer's handles from context (ssr only) |
// The console's larger views nest deeper than the default 128 allows.
#![recursion_limit = "256"]

pub mod auth;
pub mod components;
pub mod console;
pub mod error;
pub mod i18n;
pub mod learner;
pub mod membership;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod state;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::{
    Lazy, SsrMode, StaticSegment,
    components::{Route, Router, Routes},
    path,
};

use crate::auth::Logout;
use crate::components::{
    flash::FlashMessage,
    layout::{Footer, Header},
};
use crate::pages::{
    lazy::{
        AccountRoute, AuditLogRoute, CodesRoute, ConfirmEmailRoute, ConsoleHomeRoute, CoursesRoute,
        DashboardRoute, FinishRegistrationRoute, ForgotPasswordRoute, HomeRoute, ImportReportRoute,
        InvitationRoute, IssuedRoute, LearnersRoute, LoginRoute, MailingRoute, RegisterRoute,
        ResetPasswordRoute, SalesRoute, ShareAdminRoute, ShopsRoute, TeamRoute, TokensRoute,
        TransferConfirmRoute, TransferRequestRoute, TransfersRoute, VerifyEmailRoute,
        WebhooksRoute,
    },
    not_found::NotFound,
    resource::ResourcePage,
    share::SharePageView,
};

/// Where the page's stylesheet is: `/pkg/admitone.css`, or its hashed name
/// in a build with hashed file names (the server provides it in context).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stylesheet(pub std::sync::Arc<str>);

/// The HTML document around every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    content_security_policy();
    let stylesheet = use_context::<Stylesheet>()
        .map_or_else(|| "/pkg/admitone.css".to_owned(), |css| css.0.to_string());
    view! {
        <!DOCTYPE html>
        <html lang=i18n::lang().tag()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                // `id="leptos"`: `cargo leptos watch` swaps it on a CSS change.
                <link rel="stylesheet" id="leptos" href=stylesheet/>
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
    // One sign-out action for the whole page, so the header and the flash
    // message refresh when it completes.
    provide_context(ServerAction::<Logout>::new());
    // The pages loaded on demand (see `pages::lazy`).
    let home_route = Lazy::<HomeRoute>::new();
    let login_route = Lazy::<LoginRoute>::new();
    let courses_route = Lazy::<CoursesRoute>::new();
    let register_route = Lazy::<RegisterRoute>::new();
    let finish_registration_route = Lazy::<FinishRegistrationRoute>::new();
    let account_route = Lazy::<AccountRoute>::new();
    let forgot_password_route = Lazy::<ForgotPasswordRoute>::new();
    let reset_password_route = Lazy::<ResetPasswordRoute>::new();
    let verify_email_route = Lazy::<VerifyEmailRoute>::new();
    let confirm_email_route = Lazy::<ConfirmEmailRoute>::new();
    let invitation_route = Lazy::<InvitationRoute>::new();
    let console_home_route = Lazy::<ConsoleHomeRoute>::new();
    let dashboard_route = Lazy::<DashboardRoute>::new();
    let team_route = Lazy::<TeamRoute>::new();
    let audit_log_route = Lazy::<AuditLogRoute>::new();
    let tokens_route = Lazy::<TokensRoute>::new();
    let webhooks_route = Lazy::<WebhooksRoute>::new();
    let share_admin_route = Lazy::<ShareAdminRoute>::new();
    let codes_route = Lazy::<CodesRoute>::new();
    let learners_route = Lazy::<LearnersRoute>::new();
    let sales_route = Lazy::<SalesRoute>::new();
    let issued_route = Lazy::<IssuedRoute>::new();
    let mailing_route = Lazy::<MailingRoute>::new();
    let shops_route = Lazy::<ShopsRoute>::new();
    let import_report_route = Lazy::<ImportReportRoute>::new();
    let transfer_request_route = Lazy::<TransferRequestRoute>::new();
    let transfer_confirm_route = Lazy::<TransferConfirmRoute>::new();
    let transfers_route = Lazy::<TransfersRoute>::new();

    view! {
        <Title formatter=page_title/>
        <Router>
            <Header/>
            <main id="main" class="container">
                <FlashMessage/>
                // Async SSR: every page is complete (and its session changes
                // saved) before the response leaves, and works without
                // JavaScript.
                <Routes fallback=NotFound>
                    <Route path=StaticSegment("") view=home_route ssr=SsrMode::Async/>
                    <Route path=path!("/login") view=login_route ssr=SsrMode::Async/>
                    <Route path=path!("/register") view=register_route ssr=SsrMode::Async/>
                    <Route path=path!("/register/finish") view=finish_registration_route ssr=SsrMode::Async/>
                    <Route path=path!("/account") view=account_route ssr=SsrMode::Async/>
                    <Route path=path!("/forgot-password") view=forgot_password_route ssr=SsrMode::Async/>
                    <Route path=path!("/reset-password") view=reset_password_route ssr=SsrMode::Async/>
                    <Route path=path!("/verify-email") view=verify_email_route ssr=SsrMode::Async/>
                    <Route path=path!("/confirm-email") view=confirm_email_route ssr=SsrMode::Async/>
                    <Route path=path!("/invitation") view=invitation_route ssr=SsrMode::Async/>
                    <Route path=path!("/transfer") view=transfer_confirm_route ssr=SsrMode::Async/>
                    <Route path=path!("/courses") view=courses_route ssr=SsrMode::Async/>
                    <Route path=path!("/s/:slug") view=SharePageView ssr=SsrMode::Async/>
                    <Route path=path!("/s/:slug/r/:resource") view=ResourcePage ssr=SsrMode::Async/>
                    <Route path=path!("/s/:slug/transfer") view=transfer_request_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin") view=console_home_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant") view=dashboard_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/team") view=team_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/audit") view=audit_log_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/tokens") view=tokens_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/webhooks") view=webhooks_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/shops") view=shops_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/transfers") view=transfers_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share") view=share_admin_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/codes") view=codes_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/learners") view=learners_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/sales") view=sales_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/batches/:batch") view=issued_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/batches/:batch/mail") view=mailing_route ssr=SsrMode::Async/>
                    <Route path=path!("/admin/t/:tenant/s/:share/imports/:batch") view=import_report_route ssr=SsrMode::Async/>
                </Routes>
            </main>
            <Footer/>
        </Router>
    }
}
