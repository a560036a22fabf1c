//! What each mail says, in English, Simplified and Traditional Chinese.
//!
//! A mail is a subject and a list of [`Block`]s (paragraphs, one button
//! with its link, a quoted reason, a small print), written out twice: as
//! plain text and as HTML, so the two parts of a `multipart/alternative`
//! mail always say the same thing. Everything that comes from people (a
//! name, a course title, an admin's reason) is escaped in the HTML part;
//! the headers are encoded by lettre.
//!
//! The templates' words live by family ([`accounts`], [`codes`], [`team`],
//! [`transfers`]); how any mail is written out (branding, blocks, footer,
//! escaping) lives in [`layout`]. This module holds what they share: the
//! [`Context`] a template reads its parameters from, and [`render`], which
//! picks the template's words and writes them out.
//!
//! Every template is rendered in every language by the tests (`tests.rs`),
//! so a template cannot lose a parameter or a language unseen.

mod accounts;
mod codes;
mod layout;
mod team;
mod transfers;

use app::i18n::Msg;
use engine::mail::Template;
use model::Lang;
use serde_json::Value;

pub use layout::escape;
use layout::{Block, Brand};

/// A mail written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// A mail's subject and body, before it is written out.
type Mail = (String, Vec<Block>);

/// What a template is given besides its words.
pub struct Context<'a> {
    pub lang: Lang,
    pub params: &'a Value,
    /// The single-use link the mail carries, if it carries one.
    pub link: Option<&'a str>,
    /// The server's public origin (`https://courses.example.com`).
    pub origin: &'a str,
    /// The plain codes the mail carries, displayed (an order's mail).
    pub codes: &'a [String],
    /// The tenant's branding, for a tenant's mail (`engine::branding`).
    pub brand: Option<&'a engine::branding::Branding>,
}

impl Context<'_> {
    fn param(&self, key: &str) -> String {
        self.params
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    fn text(&self, msg: Msg) -> &'static str {
        self.lang.text(msg)
    }

    fn format(&self, msg: Msg, args: app::i18n::Args<'_>) -> String {
        self.lang.format(msg, args)
    }

    fn link(&self) -> String {
        self.link.unwrap_or(self.origin).to_owned()
    }

    fn greeting(&self) -> Block {
        let name = self.param("name");
        Block::Para(if name.is_empty() {
            self.text(Msg::Hello).to_owned()
        } else {
            self.format(Msg::Hello2, &[("name", &name)])
        })
    }

    fn role(&self) -> String {
        match self.param("role").as_str() {
            "owner" => self.text(Msg::Owner2),
            "admin" => self.text(Msg::Admin2),
            _ => self.text(Msg::SupportReadOnly2),
        }
        .to_owned()
    }

    fn not_you(&self) -> Block {
        Block::Small(self.text(Msg::IfYouDidNotAskFor).to_owned())
    }

    /// The tenant's branding, if it is a tenant's mail: its name (and
    /// logo) above, its accent on the button, its support address in the
    /// footer.
    fn brand(&self, template: Template) -> Option<Brand> {
        self.brand.map(|b| Brand {
            name: b.name.clone(),
            accent: b.accent.clone(),
            logo: b.logo_path().map(|path| format!("{}{path}", self.origin)),
            // The support address is for learners: the team's own mails
            // (an invitation, a leak alert) do not send them to it.
            support: b
                .support_email
                .clone()
                .filter(|_| !matches!(template, Template::Invitation | Template::LeakSuspected)),
        })
    }
}

/// Writes out `template` in the context's language.
pub fn render(template: Template, cx: &Context<'_>) -> Rendered {
    let (subject, blocks) = match template {
        Template::VerifyEmail => accounts::verify_email(cx),
        Template::ResetPassword => accounts::reset_password(cx),
        Template::PasswordChanged => accounts::password_changed(cx),
        Template::ChangeEmail => accounts::change_email(cx),
        Template::EmailChangeRequested => accounts::email_change_requested(cx),
        Template::EmailChanged => accounts::email_changed(cx),
        Template::Invitation => team::invitation(cx),
        Template::CodeBound => codes::code_bound(cx),
        Template::CodesSent => codes::codes_sent(cx),
        Template::CodeUnbound => codes::code_unbound(cx),
        Template::CodeRevoked => codes::code_revoked(cx),
        Template::CodeReplaced => codes::code_replaced(cx),
        Template::LeakSuspected => team::leak_suspected(cx),
        Template::TransferConfirm => transfers::transfer_confirm(cx),
        Template::CodeTransferredAway => transfers::code_transferred_away(cx),
        Template::CodeTransferredHere => transfers::code_transferred_here(cx),
        Template::TransferRefused => transfers::transfer_refused(cx),
        Template::SignUp => accounts::sign_up(cx),
        Template::AccountExists => accounts::account_exists(cx),
    };
    layout::write(subject, &blocks, cx.lang, cx.brand(template).as_ref())
}

#[cfg(test)]
mod tests;
