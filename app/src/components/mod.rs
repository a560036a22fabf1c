//! Building blocks shared by every page.

pub mod hydration;
pub mod layout;
