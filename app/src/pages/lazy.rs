//! The pages loaded on demand.
//!
//! Why: a learner opens a course on a phone, and every byte of wasm is paid
//! for before the page answers a tap. The main bundle holds the shell and
//! what a learner's link opens (a course and its resources); every other
//! page, the home page, sign-in and "My courses" included, is a `LazyRoute`
//! here. `cargo leptos build --split` moves its
//! view, and everything only it reaches (its forms, the chart, the upload
//! widget, the client half of its server functions), into a chunk of its
//! own that the browser fetches when the page is first shown: a learner's
//! course page never downloads the console, and the console's admins fetch
//! its chunks once, then from cache.
//!
//! The server renders these pages exactly as before (the lazy view runs at
//! once there), so they read and work without JavaScript; in the browser
//! the entry point hydrates with `hydrate_from_async`, so the router fetches a
//! page's chunk before it hydrates that page.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

use super::{
    account::AccountPage,
    console::{
        audit::AuditLogPage, codes::CodesPage, dashboard::DashboardPage, home::ConsoleHome,
        imports::ImportReportPage, issued::IssuedPage, learners::LearnersPage,
        mailings::MailingPage, sales::SalesPage, share::ShareAdminPage, shops::ShopsPage,
        team::TeamPage, tokens::TokensPage, transfers::TransfersPage, webhooks::WebhooksPage,
    },
    courses::CoursesPage,
    home::HomePage,
    invitation::InvitationPage,
    links::{ConfirmEmailPage, VerifyEmailPage},
    login::LoginPage,
    recovery::{ForgotPasswordPage, ResetPasswordPage},
    register::{FinishRegistrationPage, RegisterPage},
    transfer::{TransferConfirmPage, TransferRequestPage},
};

/// One lazily loaded page: no data of its own to start (each page
/// loads its data in its own resources), a view split into its own chunk.
macro_rules! lazy_page {
    ($($route:ident => $page:ident),+ $(,)?) => {$(
        #[doc = concat!("The `", stringify!($page), "` route, loaded on demand.")]
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> AnyView {
                $page().into_any()
            }
        }
    )+};
}

// The way in: a learner's link opens a course page (in the main bundle);
// signing in, the home page and "My courses" load their chunk when shown.
lazy_page! {
    HomeRoute => HomePage,
    LoginRoute => LoginPage,
    CoursesRoute => CoursesPage,
}

// An account's own pages: each visited now and then, never on the way to
// a course.
lazy_page! {
    RegisterRoute => RegisterPage,
    FinishRegistrationRoute => FinishRegistrationPage,
    AccountRoute => AccountPage,
    ForgotPasswordRoute => ForgotPasswordPage,
    ResetPasswordRoute => ResetPasswordPage,
    VerifyEmailRoute => VerifyEmailPage,
    ConfirmEmailRoute => ConfirmEmailPage,
    InvitationRoute => InvitationPage,
    TransferRequestRoute => TransferRequestPage,
    TransferConfirmRoute => TransferConfirmPage,
}

// The console.
lazy_page! {
    ConsoleHomeRoute => ConsoleHome,
    DashboardRoute => DashboardPage,
    TeamRoute => TeamPage,
    AuditLogRoute => AuditLogPage,
    TokensRoute => TokensPage,
    WebhooksRoute => WebhooksPage,
    ShopsRoute => ShopsPage,
    ShareAdminRoute => ShareAdminPage,
    CodesRoute => CodesPage,
    LearnersRoute => LearnersPage,
    SalesRoute => SalesPage,
    IssuedRoute => IssuedPage,
    MailingRoute => MailingPage,
    ImportReportRoute => ImportReportPage,
    TransfersRoute => TransfersPage,
}
