//! A share's learners as CSV, with their use of it:
//! `email,code_hint,bound_at,accesses,last_access,suspended,access_ends`.

use axum::{body::Body, response::Response};
use engine::{
    db::Reads,
    shares::{Share, ShareId},
    tenants::TenantId,
};
use uuid::Uuid;

use super::{csv_field, csv_response};
use crate::problem::ApiError;

/// A share's learners as CSV (the console's route and the JSON API's
/// `GET /api/v1/shares/{id}/learners.csv`).
pub fn learners(reads: &Reads, share: &Share) -> Result<Response, ApiError> {
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}email,code_hint,bound_at,accesses,last_access,suspended,access_ends\r\n"
                .as_bytes(),
        ))
    });
    let rows = learner_rows(reads.clone(), share.tenant(), share.id);
    csv_response(
        Body::from_stream(header.chain(rows)),
        &format!("learners-{}.csv", share.slug),
    )
}

/// Rows fetched per query while streaming the learners CSV: the most the
/// query returns (a larger page would be cut short and look like the end).
const LEARNERS_PAGE: i64 = engine::read_models::PAGE_MAX;

/// The learners as CSV lines, a keyset page at a time (by code id); a
/// database error ends the stream with an error.
fn learner_rows(
    reads: Reads,
    tenant: TenantId,
    share: ShareId,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    let start: Option<Option<Uuid>> = Some(None);
    futures::stream::unfold(start, move |cursor| {
        let reads = reads.clone();
        async move {
            let after = cursor?;
            match engine::read_models::learners(&reads, tenant, share, after, LEARNERS_PAGE).await {
                Ok(rows) => {
                    let next = (rows.len() as i64 == LEARNERS_PAGE)
                        .then(|| rows.last().map(|r| r.code_id));
                    let format = time::format_description::well_known::Rfc3339;
                    let mut chunk = String::with_capacity(rows.len() * 96);
                    for r in &rows {
                        chunk.push_str(&format!(
                            "{},{},{},{},{},{},{}\r\n",
                            csv_field(&r.email),
                            csv_field(&r.hint),
                            r.bound_at.format(&format).unwrap_or_default(),
                            r.accesses,
                            r.last_access
                                .and_then(|at| at.format(&format).ok())
                                .unwrap_or_default(),
                            r.suspended,
                            // Empty: for good.
                            r.access_ends
                                .and_then(|at| at.format(&format).ok())
                                .unwrap_or_default(),
                        ));
                    }
                    Some((Ok(bytes::Bytes::from(chunk)), next))
                }
                Err(error) => {
                    tracing::error!(error = format!("{error:#}"), "streaming learners failed");
                    Some((Err(std::io::Error::other("reading learners failed")), None))
                }
            }
        }
    })
}
