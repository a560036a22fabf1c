//! Building blocks shared by every page.

pub mod brand;
pub mod flash;
pub mod form;
pub mod hydration;
pub mod layout;
pub mod mailed_link;
pub mod verify;

pub use flash::{ErrorFlash, SignInFirst};
