//! The one-time CSV of a freshly issued batch: the plain codes, handed
//! over once under a Redis lease (`engine::handover`), a chunk at a time.

use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::Response,
};
use engine::{
    accounts::AccountId,
    handover::{self, Download, DownloadLease},
    shares::Share,
};
use service::Services;
use uuid::Uuid;

use super::csv_field;
use crate::problem::ApiError;

/// The one-time CSV of `batch` (a batch, or a single replacement code) of
/// `share`, parked for `admin`, downloaded by its `login` (`session`,
/// `token:<id>`: the audit entry names it): the console's route and the JSON API's
/// `GET /api/v1/batches/{id}/codes.csv` both answer with it, after each
/// authorised its caller.
pub async fn download(
    services: &Services,
    admin: AccountId,
    login: &str,
    share: &Share,
    batch: Uuid,
) -> Result<Response, ApiError> {
    let tenant = share.tenant();
    // A batch, or a single replacement code (labelled with its batch).
    let label = engine::read_models::handover_label(&services.pool, tenant, share.id, batch)
        .await?
        .ok_or_else(ApiError::not_found)?;
    // One download at a time; the codes are removed only once the whole
    // body has been sent (see `engine::handover`), so a broken download can
    // be repeated.
    let (codes, lease) = match handover::start_download(
        &services.pool,
        &services.redis,
        tenant,
        admin,
        batch,
    )
    .await?
    {
        Download::Ready(codes, mut lease) => {
            lease.via(login.to_owned());
            (codes, lease)
        }
        Download::InProgress => {
            return Err(ApiError::new(
                engine::outcome::ErrorKind::Busy,
                "download_in_progress",
                "this batch's codes are being downloaded right now; try again in a minute",
            ));
        }
        Download::Gone => {
            return Err(ApiError::new(
                engine::outcome::ErrorKind::Gone,
                "already_downloaded",
                "no plain codes are held for you under this id: they were downloaded once already, their 15 minutes passed, or they were handed to whoever issued them (a batch issued through the API has its codes in the issuing answer); only their hints remain",
            ));
        }
    };
    let link = format!("{}/s/{}", services.public_origin, share.slug);
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
