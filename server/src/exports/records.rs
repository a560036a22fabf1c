//! A share's access records as CSV:
//! `granted_at,email,code_hint,resource,bound_now`, newest first.

use axum::{body::Body, response::Response};
use engine::{
    db::Reads,
    shares::{Share, ShareId},
    tenants::TenantId,
};
use uuid::Uuid;

use super::{csv_field, csv_response};
use crate::problem::ApiError;

/// A share's access records as CSV (the console's route and the JSON
/// API's `GET /api/v1/shares/{id}/records.csv`, after each authorised its
/// caller).
pub fn records(reads: &Reads, share: &Share) -> Result<Response, ApiError> {
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}granted_at,email,code_hint,resource,bound_now\r\n".as_bytes(),
        ))
    });
    let rows = async_stream_records(reads.clone(), share.tenant(), share.id);
    csv_response(
        Body::from_stream(header.chain(rows)),
        &format!("records-{}.csv", share.slug),
    )
}

/// Rows fetched per query while streaming the records CSV.
const RECORDS_PAGE: i64 = 1_000;

/// The records as CSV lines, fetched a page at a time (keyset); a database
/// error ends the stream with an error (the client sees a truncated
/// download, the log says why).
fn async_stream_records(
    reads: Reads,
    tenant: TenantId,
    share: ShareId,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    let start: Option<Option<(time::OffsetDateTime, Uuid)>> = Some(None);
    futures::stream::unfold(start, move |cursor| {
        let reads = reads.clone();
        async move {
            let before = cursor?;
            match engine::read_models::records(&reads, tenant, share, None, before, RECORDS_PAGE)
                .await
            {
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
