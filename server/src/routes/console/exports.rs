//! The console's exports (and the JSON API's): a share's learners, its
//! access records and its code table (as the admin filtered it), as CSV
//! streamed a keyset page at a time, never all in memory. UTF-8 with a
//! byte-order mark (Excel then shows Chinese as written), every text field
//! quoted when it must be and defused so a spreadsheet never runs it as a
//! formula.

use axum::{
    body::Body,
    extract::{Path, Query, State, rejection::QueryRejection},
    http::{HeaderValue, header},
    response::Response,
};
use engine::{
    code_admin::{self, CodeFilter, CodeState, Cursor},
    shares::{self, Share, ShareError, ShareId},
    tenants::{Permission, TenantId},
};
use serde::Deserialize;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{
    routes::api::error::{ApiError, rejection},
    startup::ServerState,
};

/// A CSV field, quoted when it must be, and never read as a formula by a
/// spreadsheet (a leading `=`, `+`, `-`, `@`, tab or carriage return gets a
/// quote mark).
pub(super) fn csv_field(value: &str) -> String {
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
    let share = viewed_share(&state, &session, tenant, share).await?;
    records_download(&state, &share)
}

/// A share's access records as CSV (the console's route and the JSON
/// API's `GET /api/v1/shares/{id}/records.csv`, after each authorised its
/// caller).
pub fn records_download(state: &ServerState, share: &Share) -> Result<Response, ApiError> {
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}granted_at,email,code_hint,resource,bound_now\r\n".as_bytes(),
        ))
    });
    let rows = async_stream_records(state.services.pool.clone(), share.tenant(), share.id);
    csv_response(
        Body::from_stream(header.chain(rows)),
        &format!("records-{}.csv", share.slug),
    )
}

/// `GET /admin/t/{tenant}/s/{share}/learners.csv`: the learners bound in a
/// share with their use of it, as the learners page lists them.
pub async fn learners_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    let share = viewed_share(&state, &session, tenant, share).await?;
    learners_download(&state, &share)
}

/// A share's learners as CSV (the console's route and the JSON API's
/// `GET /api/v1/shares/{id}/learners.csv`).
pub fn learners_download(state: &ServerState, share: &Share) -> Result<Response, ApiError> {
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}email,code_hint,bound_at,accesses,last_access,suspended,access_ends\r\n"
                .as_bytes(),
        ))
    });
    let rows = learner_rows(state.services.pool.clone(), share.tenant(), share.id);
    csv_response(
        Body::from_stream(header.chain(rows)),
        &format!("learners-{}.csv", share.slug),
    )
}

/// The share `share` of `tenant`, for a signed-in member who may view the
/// console: 401/403, or 404 for a share of another tenant.
async fn viewed_share(
    state: &ServerState,
    session: &Session,
    tenant: Uuid,
    share: Uuid,
) -> Result<Share, ApiError> {
    service::session::member_of(
        &state.services,
        session,
        TenantId(tenant),
        Permission::ViewConsole,
    )
    .await?;
    shares::get_in(&state.services.pool, TenantId(tenant), ShareId(share))
        .await?
        .ok_or_else(ApiError::not_found)
}

/// The filters of the code table, as its page puts them in the URL.
#[derive(Debug, Default, Deserialize)]
pub struct CodeTableQuery {
    state: Option<String>,
    batch: Option<Uuid>,
    q: Option<String>,
    code: Option<Uuid>,
}

/// Rows fetched per query while streaming the code table.
const CODES_PAGE: i64 = 1_000;

/// `GET /admin/t/{tenant}/s/{share}/codes.csv?state=&batch=&q=&code=`: the
/// code table with the filters the admin chose (hints, never plain codes).
pub async fn code_table_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
    query: Result<Query<CodeTableQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let tenant = TenantId(tenant);
    service::session::member_of(&state.services, &session, tenant, Permission::ViewConsole).await?;
    let share = shares::get_in(&state.services.pool, tenant, ShareId(share))
        .await?
        .ok_or_else(ApiError::not_found)?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let filter = CodeFilter {
        state: query
            .state
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(CodeState::parse)
            .transpose()
            .map_err(ShareError::from)?,
        batch: query.batch,
        search: query.q,
        code: query.code,
    };
    let labels: std::collections::HashMap<Uuid, String> =
        engine::console::batches(&state.services.pool, tenant, share.id)
            .await?
            .into_iter()
            .map(|b| (b.id, csv_field(&b.label)))
            .collect();
    let rows = code_table_rows(
        state.services.pool.clone(),
        tenant,
        share.id,
        filter,
        labels,
    );
    use futures::StreamExt as _;
    let header = futures::stream::once(async {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(
            "\u{feff}hint,state,learner_email,first_used_at,access_count,batch_label,expires_at\r\n"
                .as_bytes(),
        ))
    });
    csv_response(
        Body::from_stream(header.chain(rows)),
        &format!("codes-{}.csv", share.slug),
    )
}

/// The code table's rows as CSV lines, a keyset page at a time; a database
/// error ends the stream with an error (a truncated download; the log says
/// why).
fn code_table_rows(
    pool: engine::db::PgPool,
    tenant: TenantId,
    share: ShareId,
    filter: CodeFilter,
    labels: std::collections::HashMap<Uuid, String>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    futures::stream::unfold(Some(Cursor::First), move |cursor| {
        let (pool, filter, labels) = (pool.clone(), filter.clone(), labels.clone());
        async move {
            let cursor = cursor?;
            match code_admin::list_codes(&pool, tenant, share, &filter, cursor, CODES_PAGE).await {
                Ok(page) => {
                    let format = time::format_description::well_known::Rfc3339;
                    let mut chunk = String::with_capacity(page.codes.len() * 96);
                    for c in &page.codes {
                        chunk.push_str(&format!(
                            "{},{},{},{},{},{},{}\r\n",
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

/// A streamed CSV download named `filename` (ASCII), never cached.
fn csv_response(body: Body, filename: &str) -> Result<Response, ApiError> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!("attachment; filename=\"{filename}\""))
            .map_err(anyhow::Error::new)?,
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Rows fetched per query while streaming the learners CSV: the most the
/// query returns (a larger page would be cut short and look like the end).
const LEARNERS_PAGE: i64 = engine::console::PAGE_MAX;

/// The learners as CSV lines, a keyset page at a time (by code id); a
/// database error ends the stream with an error.
fn learner_rows(
    pool: engine::db::PgPool,
    tenant: TenantId,
    share: ShareId,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    let start: Option<Option<Uuid>> = Some(None);
    futures::stream::unfold(start, move |cursor| {
        let pool = pool.clone();
        async move {
            let after = cursor?;
            match engine::console::learners(&pool, tenant, share, after, LEARNERS_PAGE).await {
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
