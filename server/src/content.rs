//! A resource's bytes, as learners get them: `Range` (206, 416), the type
//! it was stored with, and the headers every copy of learner content
//! carries (no caching, no sniffing; pages sandboxed, files as downloads
//! named after their title). The learner's content route and the console's
//! preview both answer with [`serve`], after each decided access its own
//! way.

use axum::{
    body::Body,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use engine::{
    resources::Resource,
    storage::{ByteRange, Storage},
};
use model::ResourceKind;

use crate::problem::ApiError;

/// The bytes of `resource` with Range support and the headers every copy
/// of learner content carries (no caching, no sniffing; pages sandboxed,
/// files as downloads). Whoever calls this has decided access already.
pub async fn serve(
    storage: &Storage,
    resource: &Resource,
    request_headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let range = request_headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(ByteRange::parse);
    let read = storage.get(&resource.storage_key, range).await;
    let read = match read {
        Err(error) if error.is::<engine::storage::Missing>() => return Err(ApiError::not_found()),
        other => other?,
    };
    let mut response = match read {
        Ok(read) => {
            let mut response = Response::new(Body::from_stream(read.body));
            let headers = response.headers_mut();
            headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            let content_type = HeaderValue::from_str(&resource.content_type)
                .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
            headers.insert(header::CONTENT_TYPE, content_type);
            match read.range {
                Some(served) => {
                    *response.status_mut() = StatusCode::PARTIAL_CONTENT;
                    let headers = response.headers_mut();
                    headers.insert(
                        header::CONTENT_LENGTH,
                        HeaderValue::from(served.end - served.start),
                    );
                    let value = format!(
                        "bytes {}-{}/{}",
                        served.start,
                        served.end.saturating_sub(1),
                        read.size
                    );
                    headers.insert(
                        header::CONTENT_RANGE,
                        HeaderValue::from_str(&value).map_err(anyhow::Error::new)?,
                    );
                }
                None => {
                    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(read.size));
                }
            }
            response
        }
        Err(size) => {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            let value = format!("bytes */{size}");
            response.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&value).map_err(anyhow::Error::new)?,
            );
            response
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let headers = response.headers_mut();
    match resource.kind {
        // Uploaded pages run sandboxed: no scripts on our origin. Framed
        // by our own resource page only.
        ResourceKind::Page => {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'self'",
                ),
            );
            headers.insert(
                header::X_FRAME_OPTIONS,
                HeaderValue::from_static("SAMEORIGIN"),
            );
        }
        ResourceKind::File => {
            let disposition = attachment(&resource.title, &resource.content_type);
            headers.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_str(&disposition)
                    .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
            );
        }
        // Played inline, seeking with Range.
        ResourceKind::Video => {}
    }
    Ok(response)
}

/// `Content-Disposition` of a downloaded file: the resource's title with
/// its stored type's usual extension (added unless the title already ends
/// with it: "Week 3.10" as a PDF is `Week 3.10.pdf`, "notes.txt" stored as a
/// PDF is `notes.txt.pdf`), as `filename*` in UTF-8 (RFC 6266 / 8187) and an
/// ASCII `filename` for old clients (each run of other characters an
/// underscore). Direction overrides and other invisible format characters
/// are dropped, so a title cannot make `…fdp.exe` look like `…exe.pdf`.
fn attachment(title: &str, content_type: &str) -> String {
    let visible: String = title
        .chars()
        .filter(|&c| !c.is_control() && !is_invisible_format(c))
        .collect();
    let stem = match visible.trim() {
        "" => "download",
        stem => stem,
    };
    let name = match extension_of(content_type) {
        Some(ext) => {
            let lower = stem.to_lowercase();
            let has_it =
                lower.ends_with(&format!(".{ext}")) || (ext == "jpg" && lower.ends_with(".jpeg"));
            if has_it {
                stem.to_owned()
            } else {
                format!("{stem}.{ext}")
            }
        }
        None => stem.to_owned(),
    };
    let mut ascii = String::with_capacity(name.len());
    for c in name.chars() {
        // Quotes and backslashes would end or escape the quoted string;
        // some browsers decode `%` and keep path separators in `filename`.
        let keep = c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '%' | '/') || c == ' ';
        if keep {
            ascii.push(c);
        } else if !ascii.ends_with('_') {
            ascii.push('_');
        }
    }
    let mut encoded = String::with_capacity(name.len() * 3);
    for byte in name.bytes() {
        // RFC 8187 attr-char: ALPHA / DIGIT / "!#$&+-.^_`|~".
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// Characters that change how a name is displayed without showing
/// themselves: bidirectional embeddings, overrides, isolates and marks,
/// zero-width characters, the byte-order mark.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
}

/// The usual extension of a content type (the parameters ignored).
fn extension_of(content_type: &str) -> Option<&'static str> {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    Some(match essence.as_str() {
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "application/epub+zip" => "epub",
        "application/json" => "json",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "application/vnd.ms-powerpoint" => "ppt",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => "pptx",
        "audio/mpeg" => "mp3",
        "audio/mp4" => "m4a",
        "audio/wav" | "audio/x-wav" => "wav",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "text/markdown" => "md",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::attachment;

    #[test]
    fn a_download_is_named_after_its_title_in_utf8_with_an_ascii_fallback() {
        assert_eq!(
            attachment("Slides", "application/pdf"),
            "attachment; filename=\"Slides.pdf\"; filename*=UTF-8''Slides.pdf"
        );
        assert_eq!(
            attachment("notes.TXT", "text/plain; charset=utf-8"),
            "attachment; filename=\"notes.TXT\"; filename*=UTF-8''notes.TXT",
            "the type's extension, already there, is not repeated"
        );
        assert_eq!(
            attachment("photo.jpeg", "image/jpeg"),
            "attachment; filename=\"photo.jpeg\"; filename*=UTF-8''photo.jpeg"
        );
        assert_eq!(
            attachment("Week 3.10", "application/pdf"),
            "attachment; filename=\"Week 3.10.pdf\"; filename*=UTF-8''Week%203.10.pdf",
            "a dot in a title is not an extension"
        );
        assert_eq!(
            attachment("notes.txt", "application/pdf"),
            "attachment; filename=\"notes.txt.pdf\"; filename*=UTF-8''notes.txt.pdf",
            "the stored type decides, not the title"
        );
        assert_eq!(
            attachment("Syllabus\u{202E}fdp.exe", "application/pdf"),
            "attachment; filename=\"Syllabusfdp.exe.pdf\"; filename*=UTF-8''Syllabusfdp.exe.pdf",
            "direction overrides are dropped"
        );
        assert_eq!(
            attachment(
                "Sylla\u{00AD}bus\u{2028}\u{E0041}\u{FFF9}",
                "application/pdf"
            ),
            "attachment; filename=\"Syllabus.pdf\"; filename*=UTF-8''Syllabus.pdf",
            "soft hyphens, line separators, tags and annotations are dropped"
        );
        assert_eq!(
            attachment("../a/b;c'd%41*", "application/x-unknown"),
            "attachment; filename=\".._a_b;c'd_41*\"; filename*=UTF-8''..%2Fa%2Fb%3Bc%27d%2541%2A",
            "separators and percent signs never reach either name as such"
        );
        assert_eq!(
            attachment("\u{200B}", "application/pdf"),
            "attachment; filename=\"download.pdf\"; filename*=UTF-8''download.pdf"
        );
        assert_eq!(
            attachment("第一课 讲义", "application/pdf"),
            "attachment; filename=\"_ _.pdf\"; filename*=UTF-8''%E7%AC%AC%E4%B8%80%E8%AF%BE%20%E8%AE%B2%E4%B9%89.pdf"
        );
        assert_eq!(
            attachment("say \"hi\" \\ bye", "application/x-unknown"),
            "attachment; filename=\"say _hi_ _ bye\"; filename*=UTF-8''say%20%22hi%22%20%5C%20bye",
            "quotes and backslashes never reach the quoted fallback"
        );
    }
}
