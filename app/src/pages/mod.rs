//! One module per page.

pub mod account;
pub mod console;
pub mod courses;
pub mod home;
pub mod invitation;
pub mod lazy;
pub mod links;
pub mod login;
pub mod not_found;
pub mod recovery;
pub mod register;
pub mod resource;
pub mod share;
pub mod transfer;
