//! The console's two plain-HTTP routes that server functions cannot be:
//! a multipart upload from a browser form (answered with a redirect back to
//! the share's page, so it works without JavaScript) and the one-time CSV
//! of a freshly issued batch (a file download).

use app::{
    auth::{Flash, FlashKind, guard},
    i18n::Lang,
    pages::console::upload_refusal,
};
use axum::{
    body::Body,
    extract::{Multipart, Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use engine::{
    handover::{self, Download, DownloadLease},
    shares::{self, ShareId},
    tenants::{Permission, TenantId},
};
use tower_sessions::Session;
use uuid::Uuid;

use super::api::{
    admin::{Caller, upload},
    error::ApiError,
};
use crate::startup::ServerState;

/// `POST /admin/t/{tenant}/s/{share}/upload`: stores the file, then back to
/// the share's page with a message either way.
pub async fn upload_form(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<Response, ApiError> {
    let lang = Lang::from_headers(&headers);
    let multipart = multipart.map_err(|e| super::api::error::rejection(e, "invalid_multipart"))?;
    let back = format!("/admin/t/{tenant}/s/{share}");
    let caller = Caller::Session(session.clone());
    let flash = match upload(&state, &caller, &share.to_string(), multipart).await {
        Ok(resource) => Flash {
            kind: FlashKind::Success,
            message: lang.pick(
                format!("Uploaded {}.", resource.title),
                format!("已上传 {}。", resource.title),
            ),
        },
        Err(error)
            if error.status().is_client_error() && error.status() != StatusCode::FORBIDDEN =>
        {
            Flash {
                kind: FlashKind::Error,
                message: upload_refusal(lang, &error.code, error.field.as_deref(), &error.message),
            }
        }
        Err(error) => return Err(error),
    };
    guard::flash_into(&session, &flash).await?;
    Ok(Redirect::to(&back).into_response())
}

/// `GET /admin/t/{tenant}/s/{share}/batches/{batch}/codes.csv`: the batch's
/// plain codes as CSV, once (a download that breaks before its whole body
/// was sent can be retried), for the admin who issued them; `409
/// download_in_progress` while another download of them is in flight.
pub async fn codes_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share, batch)): Path<(Uuid, Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    // Plain codes: for those who may issue them.
    let admin = service::session::member_of(
        &state.services,
        &session,
        TenantId(tenant),
        Permission::ManageCourses,
    )
    .await?;
    let share = shares::get_in(&state.services.pool, TenantId(tenant), ShareId(share))
        .await?
        .ok_or_else(ApiError::not_found)?;
    // A batch, or a single replacement code (labelled with its batch).
    let label =
        engine::console::handover_label(&state.services.pool, TenantId(tenant), share.id, batch)
            .await?
            .ok_or_else(ApiError::not_found)?;
    // One download at a time; the codes are removed only once the whole
    // body has been sent (see `engine::handover`), so a broken download can
    // be repeated.
    let (codes, lease) = match handover::start_download(
        &state.services.pool,
        &state.services.redis,
        TenantId(tenant),
        admin.id,
        batch,
    )
    .await?
    {
        Download::Ready(codes, lease) => (codes, lease),
        Download::InProgress => {
            return Err(ApiError::new(
                engine::outcome::ErrorKind::Conflict,
                "download_in_progress",
                "this batch's codes are being downloaded right now; try again in a minute",
            ));
        }
        Download::Gone => {
            return Err(ApiError::new(
                engine::outcome::ErrorKind::Gone,
                "already_downloaded",
                "these codes were downloaded once already (or 15 minutes passed); only their hints remain",
            ));
        }
    };
    let link = format!("{}/s/{}", state.settings.public_origin(), share.slug);
    let csv = codes_csv_body(CodesCsv {
        lease: Some(lease),
        codes,
        next: 0,
        header_sent: false,
        link: csv_field(&link),
        label: csv_field(&label),
    });
    let mut response = Response::new(Body::from_stream(csv));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!(
            "attachment; filename=\"codes-{}-{}.csv\"",
            share.slug,
            &batch.simple().to_string()[..8]
        ))
        .map_err(anyhow::Error::new)?,
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Rows per chunk of the codes CSV.
const CSV_ROWS_PER_CHUNK: usize = 1_000;

/// Where a codes CSV download has got to.
struct CodesCsv {
    /// Held until the end (`None` after).
    lease: Option<DownloadLease>,
    codes: Vec<String>,
    next: usize,
    header_sent: bool,
    link: String,
    label: String,
}

/// The codes CSV, a chunk at a time. The stream is asked for its end only
/// after hyper has accepted every chunk before it; that is when the codes
/// and the download's lease are removed. A client that goes away midway
/// drops the stream before that: the lease is released, the codes stay
/// parked for another try, and the break is audited with the rows hyper
/// had accepted and those handed out (`DownloadLease::progress`: when the
/// stream is polled, hyper has accepted every chunk before). A download whose lease was lost (see
/// [`DownloadLease::keep_alive`]) stops with an error.
fn codes_csv_body(
    start: CodesCsv,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    futures::stream::unfold(Some(start), |state| async move {
        let mut csv = state?;
        let lease = csv.lease.as_mut()?;
        // Polled again: hyper has accepted everything handed out so far.
        lease.progress(csv.next, csv.next);
        match lease.keep_alive().await {
            Ok(true) => {}
            outcome => {
                if let Err(error) = outcome {
                    tracing::error!(
                        error = format!("{error:#}"),
                        "renewing a codes download's lease failed"
                    );
                }
                return Some((
                    Err(std::io::Error::other("codes download lease lost")),
                    None,
                ));
            }
        }
        if csv.header_sent && csv.next >= csv.codes.len() {
            if let Some(lease) = csv.lease.take()
                && let Err(error) = lease.finish().await
            {
                // The codes expire with the handover TTL anyway.
                tracing::error!(
                    error = format!("{error:#}"),
                    "ending a completed codes download failed (audit or discard)"
                );
            }
            return None;
        }
        let end = (csv.next + CSV_ROWS_PER_CHUNK).min(csv.codes.len());
        let mut chunk =
            String::with_capacity((end - csv.next) * (csv.link.len() + csv.label.len() + 20) + 32);
        if !csv.header_sent {
            // A UTF-8 byte order mark first: Excel then reads non-ASCII
            // labels right (others ignore it).
            chunk.push_str("\u{feff}code,link,batch_label\r\n");
            csv.header_sent = true;
        }
        for code in &csv.codes[csv.next..end] {
            chunk.push_str(code);
            chunk.push(',');
            chunk.push_str(&csv.link);
            chunk.push(',');
            chunk.push_str(&csv.label);
            chunk.push_str("\r\n");
        }
        if let Some(lease) = csv.lease.as_mut() {
            lease.progress(csv.next, end);
        }
        csv.next = end;
        Some((
            Ok::<_, std::io::Error>(bytes::Bytes::from(chunk)),
            Some(csv),
        ))
    })
}

/// A CSV field, quoted when it must be, and never read as a formula by a
/// spreadsheet (a leading `=`, `+`, `-` or `@` gets a quote mark).
fn csv_field(value: &str) -> String {
    // Spreadsheets start a formula with any of these (OWASP's list).
    let safe = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    if safe.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", safe.replace('"', "\"\""))
    } else {
        safe
    }
}

/// `GET /admin/t/{tenant}/s/{share}/records.csv`: every access record of a
/// share, streamed from PostgreSQL row by row (never all in memory).
pub async fn records_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    service::session::member_of(
        &state.services,
        &session,
        TenantId(tenant),
        Permission::ViewConsole,
    )
    .await?;
    let share = shares::get_in(&state.services.pool, TenantId(tenant), ShareId(share))
        .await?
        .ok_or_else(ApiError::not_found)?;
    let pool = state.services.pool.clone();
    let slug = share.slug.clone();
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}granted_at,email,code_hint,resource,bound_now\r\n".as_bytes(),
        ))
    });
    let rows = async_stream_records(pool, TenantId(tenant), share.id);
    let body = Body::from_stream(header.chain(rows));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!("attachment; filename=\"records-{slug}.csv\""))
            .map_err(anyhow::Error::new)?,
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `GET /admin/t/{tenant}/s/{share}/r/{resource}/preview`: a resource as
/// learners get it, for the share's admins (no code, no settlement, no
/// record: previews are not accesses).
pub async fn preview(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share, resource)): Path<(Uuid, Uuid, Uuid)>,
    request_headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    service::session::member_of(
        &state.services,
        &session,
        TenantId(tenant),
        Permission::ViewConsole,
    )
    .await?;
    let resource = engine::resources::resource(
        &state.services.pool,
        TenantId(tenant),
        ShareId(share),
        resource,
    )
    .await?
    .ok_or_else(ApiError::not_found)?;
    super::api::learner::serve(&state, &resource, &request_headers).await
}

/// Rows fetched per query while streaming the records CSV.
const RECORDS_PAGE: i64 = 1_000;

/// The records as CSV lines, fetched a page at a time (keyset); a database
/// error ends the stream with an error (the client sees a truncated
/// download, the log says why).
fn async_stream_records(
    pool: engine::db::PgPool,
    tenant: TenantId,
    share: ShareId,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    let start: Option<Option<(time::OffsetDateTime, Uuid)>> = Some(None);
    futures::stream::unfold(start, move |cursor| {
        let pool = pool.clone();
        async move {
            let before = cursor?;
            match engine::console::records(&pool, tenant, share, None, before, RECORDS_PAGE).await {
                Ok(rows) => {
                    let next = (rows.len() as i64 == RECORDS_PAGE)
                        .then(|| rows.last().map(|r| (r.granted_at, r.id)));
                    let format = time::format_description::well_known::Rfc3339;
                    let mut chunk = String::with_capacity(rows.len() * 96);
                    for r in &rows {
                        chunk.push_str(&format!(
                            "{},{},{},{},{}\r\n",
                            r.granted_at.format(&format).unwrap_or_default(),
                            csv_field(&r.email),
                            csv_field(&r.hint),
                            csv_field(&r.resource),
                            r.bound_now
                        ));
                    }
                    Some((Ok(bytes::Bytes::from(chunk)), next))
                }
                Err(error) => {
                    tracing::error!(
                        error = format!("{error:#}"),
                        "streaming access records failed"
                    );
                    Some((
                        Err(std::io::Error::other("reading access records failed")),
                        None,
                    ))
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_are_quoted_and_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        // Every character a spreadsheet starts a formula with (OWASP's
        // list: tab and carriage return too).
        for risky in ["+1", "-1", "@SUM(1)", "\tcmd", "\rcmd"] {
            let field = csv_field(risky);
            assert!(
                field.starts_with('\'') || field.starts_with("\"'"),
                "{risky:?} → {field:?}"
            );
        }
    }
}
