//! The languages of the interface: English, Simplified Chinese (zh-CN) and
//! Traditional Chinese (zh-TW, also chosen for zh-HK and zh-MO).
//!
//! Many people who sell courses this way, and their learners, read Chinese
//! first. Every string a person sees is a message of the translation
//! catalogues (`server/model/locales/<tag>/messages.ftl`, Fluent), named
//! by its id: `t(Msg::SignIn)`, or `tf(Msg::CodesFor, &[("total", &n)])`
//! with variables and plural forms. The build compiles the catalogues and
//! refuses one that lacks a message or gives it other variables (see
//! `server/model/build.rs`); `tests/translations.rs` fails on any literal a
//! page shows without a catalogue. The domain errors' messages are in
//! `errors.ftl` (see [`errors`], server only), and the few the browser
//! shows by itself in `browser-errors.ftl` ([`code_format_error`], the
//! console's upload refusals).
//!
//! The language is chosen per request: the `lang` cookie set by the
//! switcher (`/lang/{tag}`) wins, then `Accept-Language`, then English. The
//! server writes it into `<html lang>`, and the browser reads it back from
//! there when it hydrates, so both render the same words. The JSON API
//! (`/api/v1`) always answers in English: machines match on stable codes.

#[cfg(feature = "ssr")]
pub mod errors;
mod uploads;

use model::{CodeState, ResourceKind, ShareStatus};

pub use model::{BrowserErrorMsg, ErrorMsg, Lang, Msg, catalogue::Args};
pub use uploads::upload_refusal;

/// The language of the page being rendered or the server function being
/// served: provided by [`crate::App`]; on the server read from the request
/// where no page provides it (server functions); in the browser read back
/// from `<html lang>`.
pub fn lang() -> Lang {
    use leptos::prelude::use_context;
    if let Some(lang) = use_context::<Lang>() {
        return lang;
    }
    #[cfg(feature = "ssr")]
    if let Some(parts) = use_context::<http::request::Parts>() {
        return Lang::from_headers(&parts.headers);
    }
    #[cfg(feature = "hydrate")]
    if let Some(tag) = leptos::prelude::document()
        .document_element()
        .and_then(|html| html.get_attribute("lang"))
    {
        return Lang::parse(&tag).unwrap_or_default();
    }
    Lang::En
}

/// A message in the current language.
pub fn t(msg: Msg) -> &'static str {
    lang().text(msg)
}

/// A message with variables in the current language.
pub fn tf(msg: Msg, args: Args<'_>) -> String {
    lang().format(msg, args)
}

/// A number with thousands separators (`100,000`), the same in every
/// language.
pub fn number(n: impl Into<i64>) -> String {
    let n: i64 = n.into();
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share's status as a word.
pub fn share_status(status: ShareStatus) -> &'static str {
    match status {
        ShareStatus::Draft => t(Msg::Draft),
        ShareStatus::Active => t(Msg::Active),
        ShareStatus::Paused => t(Msg::Paused),
        ShareStatus::Archived => t(Msg::Archived),
    }
}

/// A code's state as a word.
pub fn code_state(state: CodeState) -> &'static str {
    match state {
        CodeState::Unused => t(Msg::Unused),
        CodeState::Bound => t(Msg::Bound),
        CodeState::Revoked => t(Msg::Revoked),
        CodeState::Expired => t(Msg::CodeStateExpired),
    }
}

/// An audit action (`code.revoked`, …) as a phrase.
pub fn audit_action(action: &str) -> String {
    let phrase = match action {
        "share.created" => t(Msg::ShareCreated),
        "share.updated" => t(Msg::ShareEdited),
        "share.status_changed" => t(Msg::StatusChanged),
        "resource.uploaded" => t(Msg::ResourceUploaded),
        "resource.renamed" => t(Msg::ResourceRenamed),
        "resource.moved" => t(Msg::ResourceMoved),
        "resource.deleted" => t(Msg::ResourceRemoved),
        "batch.issued" => t(Msg::CodesIssued2),
        "batch.imported" => t(Msg::CodesImported),
        "batch.unused_revoked" => t(Msg::UnusedCodesOfABatchRevoked),
        "batch.downloaded" => t(Msg::CodesDownloadedCsv),
        "batch.download_broken" => t(Msg::CodesDownloadBrokeOffTheCodes),
        "code.revoked" => t(Msg::CodeRevoked),
        "code.replaced" => t(Msg::CodeReplaced),
        "order.placed" => t(Msg::AuditOrderPlaced),
        "order.refunded" => t(Msg::AuditOrderRefunded),
        "order.refund_grace_ended" => t(Msg::AuditOrderRefundGraceEnded),
        "order.refund_repeated" => t(Msg::AuditOrderRefundRepeated),
        "share.refund_policy_set" => t(Msg::AuditRefundPolicySet),
        "code.transferred" => t(Msg::CodeMovedToAnotherAccount),
        "transfer.requested" => t(Msg::TransferRequested),
        "transfer.confirmed" => t(Msg::TransferConfirmedByTheReceivingAccount),
        "transfer.cancelled" => t(Msg::TransferRequestCancelled),
        "transfer.refused" => t(Msg::TransferRefused),
        "code.expiry_changed" => t(Msg::CodeExpiryChanged),
        "batch.expiry_changed" => t(Msg::BatchExpiryChanged),
        "access.extended" => t(Msg::AccessExtended),
        "access.extended_all" => t(Msg::AccessExtendedAll),
        "code.unbound" => t(Msg::CodeUnbound),
        "code.bound" => t(Msg::CodeBound),
        "token.created" => t(Msg::ApiTokenCreated),
        "token.revoked" => t(Msg::ApiTokenRevoked),
        "webhook.created" => t(Msg::WebhookAdded),
        "webhook.disabled" => t(Msg::WebhookDisabled),
        "webhook.updated" => t(Msg::WebhookChanged),
        "webhook.redelivered" => t(Msg::WebhookDeliverySentAgain),
        other => return other.to_owned(),
    };
    phrase.to_owned()
}

/// Why an import left a line out (`engine::imports::Rejection`'s stable
/// name), in `lang`.
pub fn import_rejection(reason: &str, lang: Lang) -> &'static str {
    lang.text(match reason {
        "bad_symbol" => Msg::ImportReasonBadSymbol,
        "wrong_length" => Msg::ImportReasonWrongLength,
        "typo" => Msg::ImportReasonTypo,
        "outside_alphabet" => Msg::ImportReasonOutsideAlphabet,
        "duplicate_in_file" => Msg::ImportReasonDuplicateInFile,
        _ => Msg::ImportReasonAlreadyExists,
    })
}

/// What is wrong with a typed code, in the current language (the browser
/// checks codes before they are sent, so this is not server-only).
pub fn code_format_error(error: &codeformat::CodeFormatError) -> String {
    let lang = lang();
    code_format_message(error, lang).unwrap_or_else(|| error.to_string())
}

/// A code format problem in `lang` (`None` in English: its `Display`).
pub fn code_format_message(error: &codeformat::CodeFormatError, lang: Lang) -> Option<String> {
    use codeformat::CodeFormatError as E;
    let msg = match error {
        E::WrongLength => BrowserErrorMsg::CodeWrongLength,
        E::ForeignWrongLength => BrowserErrorMsg::CodeForeignWrongLength,
        E::BadSymbol => BrowserErrorMsg::CodeBadSymbol,
        E::BadCheckSymbol => BrowserErrorMsg::CodeBadCheckSymbol,
    };
    lang.browser_error(msg, &[])
}

/// Where a transfer request stands, as a phrase.
pub fn transfer_status(status: model::TransferStatus) -> String {
    use model::TransferStatus as S;
    t(match status {
        S::AwaitingTarget => Msg::TransferStatusAwaitingTarget,
        S::AwaitingAdmin => Msg::TransferStatusAwaitingAdmin,
        S::Approved => Msg::TransferStatusApproved,
        S::Refused => Msg::TransferStatusRefused,
        S::Cancelled => Msg::TransferStatusCancelled,
    })
    .to_owned()
}

/// Where a recipient of a mailed code stands (`engine::mailings`'s
/// `queued`, `sent`, `failed`, `redeemed`, `revoked`), as a word.
pub fn recipient_state(state: &str) -> &'static str {
    t(match state {
        "queued" => Msg::RecipientQueued,
        "sent" => Msg::RecipientSent,
        "failed" => Msg::RecipientFailed,
        "redeemed" => Msg::RecipientRedeemed,
        _ => Msg::RecipientRevoked,
    })
}

/// A resource's kind as a word.
pub fn resource_kind(kind: ResourceKind) -> &'static str {
    match kind {
        ResourceKind::Video => t(Msg::Video),
        ResourceKind::Page => t(Msg::Page),
        ResourceKind::File => t(Msg::File),
    }
}

/// What an audit entry is about (`share`, `code`, …) as a word.
pub fn target_type(kind: &str) -> String {
    let word = match kind {
        "share" => t(Msg::Share2),
        "code" | "auth_code" => t(Msg::Code4),
        "code_batch" => t(Msg::Batch2),
        "resource" => t(Msg::Resource2),
        "api_token" => t(Msg::Token),
        "webhook_endpoint" => t(Msg::Webhook),
        "account" => t(Msg::Account),
        "transfer" => t(Msg::TransferRequest),
        other => return other.to_owned(),
    };
    word.to_owned()
}

/// A webhook event (`code.bound`, …) as a phrase.
pub fn event(event: &str) -> String {
    let phrase = match event {
        "code.bound" => t(Msg::CodeBound2),
        "code.unbound" => t(Msg::CodeUnbound2),
        "code.revoked" => t(Msg::CodeRevoked2),
        "code.replaced" => t(Msg::CodeReplaced2),
        "code.transferred" => t(Msg::CodeMovedToAnotherAccount2),
        "code.leak_suspected" => t(Msg::CodeProbablyLeaked),
        "access.recorded" => t(Msg::AccessRecorded),
        "batch.issued" => t(Msg::CodesIssued3),
        "order.placed" => t(Msg::ShopOrderPlaced),
        "order.refunded" => t(Msg::ShopOrderRefunded),
        other => return other.to_owned(),
    };
    phrase.to_owned()
}

/// An API token scope (`read`, `write`) as a word.
pub fn scope(scope: &str) -> String {
    let word = match scope {
        "read" => t(Msg::Read),
        "write" => t(Msg::Write),
        "integrations" => t(Msg::Integrations),
        other => return other.to_owned(),
    };
    word.to_owned()
}
#[cfg(test)]
mod tests {
    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(super::number(0), "0");
        assert_eq!(super::number(999), "999");
        assert_eq!(super::number(100_000), "100,000");
        assert_eq!(super::number(-1_234_567), "-1,234,567");
    }
}
