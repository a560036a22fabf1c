//! What each domain error *is*, for whoever asked: its [`ErrorKind`], a
//! stable machine-readable code and the input field it is about.
//!
//! The engine's errors name what happened (`CodeBound`, `SlugTaken`); the
//! adapters (the pages' server functions in `app`, the JSON API in `server`)
//! must serve each one the same way. They used to map every enum on their
//! own and disagreed (`SlugTaken` was 422 on a page and 409 in the API).
//! Now each error answers three questions here, by an exhaustive `match`
//! per enum, and both adapters build their response from the answers: the
//! status from [`ErrorKind::status`], the code as the JSON `error` (and a
//! refusal page's `data-reason`), the field to put the message beside. A
//! new variant does not compile until it has a kind and a code.
//!
//! The codes are API: clients and pages rely on them, so they never change.
//! Messages stay in each error's `Display` (English) and in
//! `app::i18n::errors` (Chinese); nothing here is UI text.
//!
//! The answers live by area: [`courses`] (shares, their content, batches,
//! imports, codes, storage), [`learning`] (the settlement, code format,
//! transfers, suspension), [`people`] (accounts, tenants, teams, branding,
//! tokens, webhooks).

pub use model::ErrorKind;

mod courses;
mod learning;
mod people;

/// A domain error as an outcome an adapter can serve.
pub trait Outcome: std::error::Error {
    /// What kind of outcome this is (and so its HTTP status).
    fn kind(&self) -> ErrorKind;
    /// The stable code: the JSON API's `error`, a refusal page's
    /// `data-reason`.
    fn code(&self) -> &'static str;
    /// The input field the error is about, if one.
    fn field(&self) -> Option<&'static str> {
        None
    }
    /// The unexpected fault inside, if this is one (kind `Internal`): the
    /// adapters log its whole chain and show only a reference.
    fn unexpected(&self) -> Option<&anyhow::Error>;
}

/// The code of a plain input error (the field says which input).
pub const INVALID_INPUT: &str = "invalid_input";
