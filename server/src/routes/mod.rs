//! Plain axum routes that are not Leptos pages.

pub mod api;
pub mod branding;
pub mod console;
pub mod dev_mailbox;
pub mod health;
pub mod lang;
pub mod metrics;
pub mod page_error;
