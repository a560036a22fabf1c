//! A share's code table as CSV, as the admin filtered it (hints, never
//! plain codes):
//! `hint,state,learner_email,first_used_at,access_count,batch_label,expires_at,addressed_to,former_learner_email`.

use std::collections::HashMap;

use axum::{body::Body, response::Response};
use engine::{
    code_table::{self, CodeFilter, Cursor},
    db::PgPool,
    shares::{Share, ShareId},
    tenants::TenantId,
};
use service::Services;
use uuid::Uuid;

use super::{csv_field, csv_response};
use crate::problem::ApiError;

/// The code table of `share` under `filter`, its batches named by label.
pub async fn code_table(
    services: &Services,
    share: &Share,
    filter: CodeFilter,
) -> Result<Response, ApiError> {
    let tenant = share.tenant();
    let labels: HashMap<Uuid, String> =
        engine::read_models::batches(&services.reads, tenant, share.id)
            .await?
            .into_iter()
            .map(|b| (b.id, csv_field(&b.label)))
            .collect();
    let rows = code_table_rows(services.pool.clone(), tenant, share.id, filter, labels);
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}hint,state,learner_email,first_used_at,access_count,batch_label,expires_at,addressed_to,former_learner_email\r\n"
                .as_bytes(),
        ))
    });
    csv_response(
        Body::from_stream(header.chain(rows)),
        &format!("codes-{}.csv", share.slug),
    )
}

/// Rows fetched per query while streaming the code table.
const CODES_PAGE: i64 = 1_000;

/// The code table's rows as CSV lines, a keyset page at a time; a database
/// error ends the stream with an error (a truncated download; the log says
/// why).
fn code_table_rows(
    pool: PgPool,
    tenant: TenantId,
    share: ShareId,
    filter: CodeFilter,
    labels: HashMap<Uuid, String>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    futures::stream::unfold(Some(Cursor::First), move |cursor| {
        let (pool, filter, labels) = (pool.clone(), filter.clone(), labels.clone());
        async move {
            let cursor = cursor?;
            match code_table::list_codes(&pool, tenant, share, &filter, cursor, CODES_PAGE).await {
                Ok(page) => {
                    let format = time::format_description::well_known::Rfc3339;
                    let mut chunk = String::with_capacity(page.codes.len() * 96);
                    for c in &page.codes {
                        chunk.push_str(&format!(
                            "{},{},{},{},{},{},{},{},{}\r\n",
                            csv_field(&c.hint),
                            c.state.as_str(),
                            csv_field(c.bound_email.as_deref().unwrap_or_default()),
                            c.first_used_at
                                .and_then(|at| at.format(&format).ok())
                                .unwrap_or_default(),
                            c.access_count,
                            labels.get(&c.batch_id).map_or("", String::as_str),
                            c.expires_at
                                .and_then(|at| at.format(&format).ok())
                                .unwrap_or_default(),
                            csv_field(c.addressed_to.as_deref().unwrap_or_default()),
                            csv_field(c.former_email.as_deref().unwrap_or_default()),
                        ));
                    }
                    Some((
                        Ok(bytes::Bytes::from(chunk)),
                        page.next_after.map(Cursor::After),
                    ))
                }
                Err(error) => {
                    tracing::error!(
                        error = format!("{error:#}"),
                        "streaming the code table failed"
                    );
                    Some((
                        Err(std::io::Error::other("reading the code table failed")),
                        None,
                    ))
                }
            }
        }
    })
}
