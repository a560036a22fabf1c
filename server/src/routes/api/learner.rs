//! The learner's side of the API: a share's page data, phase 1+2 (enter a
//! code: validate, keep it pending in the session), phase 3 (open a
//! resource: settle, the one request that binds and counts) and its bytes
//! (served with Range support under the live grant an opening left).

use std::net::SocketAddr;

use axum::{
    Json,
    body::Body,
    extract::{ConnectInfo, Path, Request, State, rejection::JsonRejection},
    http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use engine::{
    accounts::Principal,
    settlement::{RequestId, SettlementError},
    shares::Share,
    storage::ByteRange,
};
use model::ResourceKind;
use serde::Deserialize;
use service::{
    content,
    learner::{self, CodeEntered, Standing},
    session::{self, client_ip},
};
use tower_sessions::Session;
use uuid::Uuid;

use super::{
    error::{ApiError, rejection},
    schema::{self, ErrorBody, Me, PublicShare, SharePage},
};
use crate::startup::ServerState;

async fn visible_share(state: &ServerState, slug: &str) -> Result<Share, ApiError> {
    Ok(learner::visible_share(&state.services, slug).await?)
}

async fn signed_in(state: &ServerState, session: &Session) -> Result<Principal, ApiError> {
    Ok(session::learner_of(&state.services, session).await?)
}

/// A share's page data and where the caller stands (drafts and archived
/// shares do not exist for learners).
#[utoipa::path(get, path = "/api/v1/s/{slug}", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    responses(
        (status = 200, description = "The share", body = SharePage),
        (status = 404, description = "No such share", body = ErrorBody),
    ))]
pub async fn share(
    State(state): State<ServerState>,
    session: Session,
    Path(slug): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let overview = learner::share_overview(&state.services, &session, &slug).await?;
    let me = match overview.standing {
        Standing::SignedOut => Me {
            signed_in: false,
            email: None,
            binding: None,
            pending: false,
            must_verify: false,
        },
        Standing::NeedsCode(p) => Me {
            signed_in: true,
            pending: false,
            must_verify: false,
            email: Some(p.email),
            binding: None,
        },
        Standing::Pending {
            principal,
            must_verify,
        } => Me {
            signed_in: true,
            pending: true,
            must_verify,
            email: Some(principal.email),
            binding: None,
        },
        Standing::Holds(p, binding) => Me {
            signed_in: true,
            email: Some(p.email),
            pending: false,
            must_verify: false,
            binding: Some(binding),
        },
    };
    let share = overview.share;
    Ok(Json(SharePage {
        share: PublicShare {
            id: share.id.0,
            slug: share.slug,
            title: share.title,
            description: share.description,
            status: share.status,
        },
        available: overview.unavailable.is_none(),
        unavailable: overview.unavailable,
        unavailable_reason: overview.unavailable.map(|why| why.to_string()),
        resources: overview.resources,
        me,
        brand: overview.branding.map(Into::into),
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct CodeBody {
    /// As typed: spaces, dashes, lower case and O/0, I/L/1 are forgiven.
    code: String,
}

/// Phases 1+2: checks a code and keeps it pending for this session. Binds
/// nothing: the first opening of content does.
#[utoipa::path(post, path = "/api/v1/s/{slug}/code", tag = "learner",
    params(("slug" = String, Path, description = "The share's link name")),
    request_body = CodeBody,
    responses(
        (status = 200, description = "Pending (or already yours)", body = schema::CodeEntered),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "The share is paused or closed", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "Used by another account (`code_bound`), revoked (`code_revoked`), past its date (`code_expired`), or you already have access (`already_has_access`)", body = ErrorBody),
        (status = 422, description = "Not a code (typo), or not this share's", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
        (status = 503, description = "Degraded: retry", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn enter_code(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Result<Json<CodeBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let principal = signed_in(&state, &session).await?;
    let share = visible_share(&state, &slug).await?;
    let ip = client_ip(&state.services, &peer, &headers);
    let entered = learner::enter_code(
        &state.services,
        &session,
        &principal,
        ip,
        &share,
        &body.code,
    )
    .await?;
    Ok(Json(match entered {
        CodeEntered::AlreadyBound => schema::CodeEntered {
            status: "bound".into(),
            message: None,
        },
        CodeEntered::Pending => schema::CodeEntered {
            status: "pending".into(),
            message: Some(
                "Code accepted. It will be bound to this account when you first open the course."
                    .into(),
            ),
        },
    }))
}

/// The request id of this attempt: the caller's `Idempotency-Key`, or new.
fn request_id(request: &Request) -> Result<RequestId, ApiError> {
    match request.headers().get("idempotency-key") {
        Some(value) => {
            let value = value
                .to_str()
                .map_err(|_| ApiError::from(SettlementError::InvalidRequestId))?;
            Ok(RequestId::parse(value)?)
        }
        None => Ok(RequestId::generate()),
    }
}

/// The answer to opening a resource.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Opened {
    /// `bound` (this opening bound your code), `counted` (a new access),
    /// `reused` (a live grant of this resource already held) or `replayed`
    /// (a retry with the same `Idempotency-Key`, answered from its record).
    access: &'static str,
    /// The code this access is through.
    code_id: Uuid,
    /// Until when the bytes are served without opening it again.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    expires_at: time::OffsetDateTime,
    /// Where the bytes are (`GET`, with `Range`), under this grant.
    content_url: String,
}

/// Phase 3: opens a resource, the one moment an access is counted. A first
/// opening binds the pending code for good; later ones count a new access
/// once the last one expired, or reuse the live grant. A retry with the
/// same `Idempotency-Key` is answered from the first attempt. Cross-site
/// requests are refused (the `Origin` check).
#[utoipa::path(post, path = "/api/v1/s/{slug}/resources/{resource_id}/open", tag = "learner",
    params(
        ("slug" = String, Path, description = "The share's link name"),
        ("resource_id" = Uuid, Path, description = "The resource"),
        ("Idempotency-Key" = Option<String>, Header, description = "Reuse for retries of one attempt"),
    ),
    responses(
        (status = 200, description = "Opened: the grant and where its bytes are", body = Opened),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "No access: enter a code first (`code_required`), paused, limit reached, your access period ended (`access_ended`, with its date), or a request from another site", body = ErrorBody),
        (status = 404, description = "No such share or resource", body = ErrorBody),
        (status = 409, description = "Code used by another account (`code_bound`), revoked (`code_revoked`), past its date before it was bound (`code_expired`), or busy: retry", body = ErrorBody),
        (status = 422, description = "Bad Idempotency-Key", body = ErrorBody),
        (status = 503, description = "Degraded: retry", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn open(
    State(state): State<ServerState>,
    session: Session,
    Path((slug, resource_id)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    // Signed in, as the session says: the settlement checks the account.
    let claim = session::claimed(&state.services, &session).await?;
    let share = learner::share_to_open(&state.services, &slug).await?;
    let resource_id = Uuid::parse_str(&resource_id).map_err(|_| ApiError::not_found())?;
    let request_id = request_id(&request)?;
    let cross_site = learner::is_cross_site(request.headers());
    let grant = learner::open(
        &state.services,
        &session,
        claim,
        learner::Opening {
            share: &share,
            resource: resource_id,
            request_id,
            cross_site,
            patience: learner::Patience::AnswerAtOnce,
        },
    )
    .await?;
    let access = if grant.replayed {
        "replayed"
    } else if grant.bound_now {
        "bound"
    } else if grant.counted {
        "counted"
    } else {
        "reused"
    };
    let mut response = Json(Opened {
        access,
        code_id: grant.code_id,
        expires_at: grant.expires_at,
        content_url: format!("/api/v1/s/{}/resources/{resource_id}/content", share.slug),
    })
    .into_response();
    response.headers_mut().insert(
        HeaderName::from_static("x-admitone-access"),
        HeaderValue::from_static(access),
    );
    Ok(response)
}

/// A resource's bytes, with `Range`, under the live grant an opening left
/// (`POST …/open` or the resource page). Never counts, binds or debits: a
/// request from any site serves only what the learner opened. A revoke,
/// an unbind, a pause or "sign out everywhere" stops it within
/// `settlement.grant_recheck_secs` (5 s by default).
#[utoipa::path(get, path = "/api/v1/s/{slug}/resources/{resource_id}/content", tag = "learner",
    params(
        ("slug" = String, Path, description = "The share's link name"),
        ("resource_id" = Uuid, Path, description = "The resource"),
    ),
    responses(
        (status = 200, description = "The bytes", content_type = "application/octet-stream"),
        (status = 206, description = "A byte range", content_type = "application/octet-stream"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "No live grant (`open_from_course_page`: open it first), a paused share, a revoked code, or an ended access period (`access_ended`)", body = ErrorBody),
        (status = 404, description = "No such share or resource", body = ErrorBody),
        (status = 416, description = "Range not satisfiable"),
        (status = 429, description = "Too many requests from this account", body = ErrorBody),
        (status = 503, description = "Degraded: retry", body = ErrorBody),
    ),
    security(("session" = [])))]
pub async fn content(
    State(state): State<ServerState>,
    session: Session,
    Path((slug, resource_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let resource_id = Uuid::parse_str(&resource_id).map_err(|_| ApiError::not_found())?;
    let grant = content::live_grant(&state.services, &session, &slug, resource_id).await?;
    serve(&state, &grant.resource, &headers).await
}

/// The bytes of `resource` with Range support and the headers every copy
/// of learner content carries (no caching, no sniffing; pages sandboxed,
/// files as downloads). Whoever calls this has decided access already.
pub async fn serve(
    state: &ServerState,
    resource: &engine::resources::Resource,
    request_headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let range = request_headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(ByteRange::parse);
    let read = state
        .services
        .storage
        .get(&resource.storage_key, range)
        .await;
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
