//! Why an upload was refused, in the page's language: shared by the
//! browser's upload (`pages/console/upload.rs`) and the plain form's
//! redirect (the server's console routes), which read the same refusal
//! from the JSON API.

use super::{Lang, Msg};

/// Why an upload was refused, in `lang`, from the JSON API's error code,
/// field and (English) message. Shared by the XHR upload and the plain
/// form's redirect.
pub fn upload_refusal(lang: Lang, code: &str, field: Option<&str>, message: &str) -> String {
    use crate::i18n::BrowserErrorMsg as E;
    let reason = match (code, field) {
        ("too_large", _) => E::UploadTooLarge,
        ("storage_quota_exceeded", _) => E::UploadStorageFull,
        (_, Some("title")) => E::UploadBadTitle,
        (_, Some("file")) => E::UploadNoFile,
        ("invalid_multipart", _) => E::UploadIncomplete,
        ("unauthenticated", _) => E::UploadSignInFirst,
        ("forbidden", _) => E::UploadForbidden,
        ("not_found", _) => E::UploadNoShare,
        _ => E::UploadTryLater,
    };
    // English is the API's own message, as for every domain error.
    let reason = lang
        .browser_error(reason, &[])
        .unwrap_or_else(|| crate::error::sentence(message));
    lang.format(Msg::UploadRefused, &[("reason", &reason)])
}
