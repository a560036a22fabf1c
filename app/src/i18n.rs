//! The two languages of the interface: English and Simplified Chinese.
//!
//! Many people who sell courses this way, and their learners, read Chinese
//! first. Every string a person sees is written in both languages at the
//! place it is used (`t("Sign in", "登录")`), so a page cannot gain an
//! untranslated string without its author seeing the gap, and no key file
//! can drift from the code.
//!
//! The language is chosen per request: the `lang` cookie set by the
//! switcher (`/lang/{tag}`) wins, then `Accept-Language`, then English. The
//! server writes it into `<html lang>`, and the browser reads it back from
//! there when it hydrates, so both render the same words. The JSON API
//! (`/api/v1`) always answers in English: machines match on stable codes.

#[cfg(feature = "ssr")]
pub mod errors;

use model::{CodeState, ResourceKind, ShareStatus};

pub use model::Lang;

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

/// `en` or `zh`, in the current language.
pub fn t(en: &'static str, zh: &'static str) -> &'static str {
    lang().pick(en, zh)
}

/// A number with thousands separators (`100,000`), the same in both
/// languages.
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
        ShareStatus::Draft => t("Draft", "草稿"),
        ShareStatus::Active => t("Active", "开放中"),
        ShareStatus::Paused => t("Paused", "已暂停"),
        ShareStatus::Archived => t("Archived", "已归档"),
    }
}

/// A code's state as a word.
pub fn code_state(state: CodeState) -> &'static str {
    match state {
        CodeState::Unused => t("Unused", "未使用"),
        CodeState::Bound => t("Bound", "已绑定"),
        CodeState::Revoked => t("Revoked", "已作废"),
    }
}

/// An audit action (`code.revoked`, …) as a phrase.
pub fn audit_action(action: &str) -> String {
    let phrase = match action {
        "share.created" => t("Share created", "创建课程分享"),
        "share.updated" => t("Share edited", "修改课程分享"),
        "share.status_changed" => t("Status changed", "状态变更"),
        "resource.uploaded" => t("Resource uploaded", "上传资源"),
        "resource.renamed" => t("Resource renamed", "资源改名"),
        "resource.moved" => t("Resource moved", "资源排序"),
        "resource.deleted" => t("Resource removed", "删除资源"),
        "batch.issued" => t("Codes issued", "生成兑换码"),
        "batch.unused_revoked" => t("Unused codes of a batch revoked", "作废批次中未用的码"),
        "batch.downloaded" => t("Codes downloaded (CSV)", "下载兑换码（CSV）"),
        "batch.download_broken" => t(
            "Codes download broke off (the codes stay downloadable)",
            "兑换码下载中断（仍可重新下载）",
        ),
        "code.revoked" => t("Code revoked", "作废兑换码"),
        "code.replaced" => t("Code replaced", "补发兑换码"),
        "code.unbound" => t("Code unbound", "解绑兑换码"),
        "code.bound" => t("Code bound", "兑换码绑定"),
        "token.created" => t("API token created", "创建 API 令牌"),
        "token.revoked" => t("API token revoked", "吊销 API 令牌"),
        "webhook.created" => t("Webhook added", "添加 Webhook"),
        "webhook.disabled" => t("Webhook disabled", "停用 Webhook"),
        "webhook.redelivered" => t("Webhook delivery sent again", "重新投递 Webhook"),
        other => return other.to_owned(),
    };
    phrase.to_owned()
}

/// What is wrong with a typed code, in the current language (the browser
/// checks codes before they are sent, so this is not server-only).
pub fn code_format_error(error: &codeformat::CodeFormatError) -> String {
    match lang() {
        Lang::En => error.to_string(),
        Lang::Zh => code_format_error_zh(error).to_owned(),
    }
}

/// A code format problem in Chinese.
pub fn code_format_error_zh(error: &codeformat::CodeFormatError) -> &'static str {
    use codeformat::CodeFormatError as E;
    match error {
        E::WrongLength => "兑换码由 12 位字母和数字组成，例如 ABCD-2345-WXYZ",
        E::BadSymbol => "兑换码只包含字母和数字",
        E::BadCheckSymbol => "兑换码有输入错误，请核对后重试",
    }
}

/// A resource's kind as a word.
pub fn resource_kind(kind: ResourceKind) -> &'static str {
    match kind {
        ResourceKind::Video => t("Video", "视频"),
        ResourceKind::Page => t("Page", "页面"),
        ResourceKind::File => t("File", "文件"),
    }
}

/// What an audit entry is about (`share`, `code`, …) as a word.
pub fn target_type(kind: &str) -> String {
    let word = match kind {
        "share" => t("share", "课程分享"),
        "code" | "auth_code" => t("code", "兑换码"),
        "code_batch" => t("batch", "批次"),
        "resource" => t("resource", "资源"),
        "api_token" => t("token", "令牌"),
        "webhook_endpoint" => t("webhook", "Webhook"),
        "account" => t("account", "账号"),
        other => return other.to_owned(),
    };
    word.to_owned()
}

/// A webhook event (`code.bound`, …) as a phrase.
pub fn event(event: &str) -> String {
    let phrase = match event {
        "code.bound" => t("code bound", "兑换码绑定"),
        "code.unbound" => t("code unbound", "兑换码解绑"),
        "code.revoked" => t("code revoked", "兑换码作废"),
        "access.recorded" => t("access recorded", "访问记录"),
        "batch.issued" => t("codes issued", "生成兑换码"),
        other => return other.to_owned(),
    };
    phrase.to_owned()
}

/// An API token scope (`read`, `write`) as a word.
pub fn scope(scope: &str) -> String {
    let word = match scope {
        "read" => t("read", "读取"),
        "write" => t("write", "写入"),
        "integrations" => t("integrations", "集成"),
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
