//! The console's two plain-HTTP routes that server functions cannot be:
//! a multipart upload from a browser form (answered with a redirect back to
//! the share's page, so it works without JavaScript) and the one-time CSV
//! of a freshly issued batch (a file download).

use app::auth::{Flash, FlashKind, guard};
use axum::{
    body::Body,
    extract::{Multipart, Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use engine::{
    handover::{self, Copy},
    shares::{self, ShareId},
    tenants::TenantId,
};
use tower_sessions::Session;
use uuid::Uuid;

use super::api::{admin::upload, error::ApiError};
use crate::startup::ServerState;

/// `POST /admin/t/{tenant}/s/{share}/upload`: stores the file, then back to
/// the share's page with a message either way.
pub async fn upload_form(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
    multipart: Multipart,
) -> Result<Response, ApiError> {
    let back = format!("/admin/t/{tenant}/s/{share}");
    let flash = match upload(&state, &session, &share.to_string(), multipart).await {
        Ok(resource) => Flash {
            kind: FlashKind::Success,
            message: format!("Uploaded {}.", resource.title),
        },
        Err(error) if error.status.is_client_error() && error.status != StatusCode::FORBIDDEN => {
            Flash {
                kind: FlashKind::Error,
                message: format!("Upload refused: {}", error.message),
            }
        }
        Err(error) => return Err(error),
    };
    guard::flash_into(&session, &flash).await?;
    Ok(Redirect::to(&back).into_response())
}

/// `GET /admin/t/{tenant}/s/{share}/batches/{batch}/codes.csv`: the batch's
/// plain codes as CSV, once, for the admin who issued them.
pub async fn codes_csv(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share, batch)): Path<(Uuid, Uuid, Uuid)>,
) -> Result<Response, ApiError> {
    let admin = guard::admin_of(&state.app, &session, TenantId(tenant)).await?;
    let share = shares::get(&state.app.pool, ShareId(share))
        .await?
        .filter(|s| s.tenant_id == tenant)
        .ok_or_else(ApiError::not_found)?;
    let label = sqlx::query_scalar!(
        "SELECT label FROM code_batches WHERE tenant_id = $1 AND share_id = $2 AND id = $3",
        tenant,
        share.id,
        batch,
    )
    .fetch_optional(&state.app.pool)
    .await
    .map_err(anyhow::Error::new)?
    .ok_or_else(ApiError::not_found)?;
    let Some(codes) = handover::take(&state.app.redis, admin.id, batch, Copy::Csv).await? else {
        return Err(ApiError::new(
            StatusCode::GONE,
            "already_downloaded",
            "these codes were downloaded once already (or 15 minutes passed); only their hints remain",
        ));
    };
    let link = format!("{}/s/{}", state.settings.public_origin(), share.slug);
    let mut csv = String::with_capacity(codes.len() * (link.len() + label.len() + 20) + 32);
    csv.push_str("code,link,batch_label\r\n");
    for code in &codes {
        csv.push_str(code);
        csv.push(',');
        csv.push_str(&csv_field(&link));
        csv.push(',');
        csv.push_str(&csv_field(&label));
        csv.push_str("\r\n");
    }
    let mut response = Response::new(Body::from(csv));
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

/// A CSV field, quoted when it must be, and never read as a formula by a
/// spreadsheet (a leading `=`, `+`, `-` or `@` gets a quote mark).
fn csv_field(value: &str) -> String {
    let safe = if value.starts_with(['=', '+', '-', '@']) {
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

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_are_quoted_and_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
    }
}
