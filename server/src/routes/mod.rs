//! Plain axum routes that are not Leptos pages.

pub mod health;
