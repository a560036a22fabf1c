//! A file uploaded to a share, stored as a new resource: the multipart body
//! streamed into storage (never all in memory, never past
//! `storage.max_upload_bytes`), a bounded title, and the resource's row;
//! the bytes are removed again if anything fails, the upload that would
//! take the tenant past its storage quota included. The JSON API's upload
//! and the console's form upload both store with [`upload`], after its
//! check of the caller.

use axum::extract::Multipart;
use engine::{
    resources,
    storage::{Storage, StorageError},
    tenants::Permission,
};
use uuid::Uuid;

use crate::{
    caller::{Caller, member_of_share},
    problem::{ApiError, rejection},
    state::ServerState,
};

/// Stores an uploaded file as a new resource of the share (its admins
/// only); the bytes are removed again if anything fails.
pub async fn upload(
    state: &ServerState,
    caller: &Caller,
    share_id: &str,
    mut multipart: Multipart,
) -> Result<resources::Resource, ApiError> {
    let (share, admin) =
        member_of_share(state, caller, share_id, Permission::ManageCourses).await?;
    // A tenant already at its quota is told before a byte is stored, and
    // no upload stores more than the quota leaves (nor more than
    // `storage.max_upload_bytes`); the recorded row decides
    // (`add_resource`), under the tenant's lock.
    let storage = {
        let mut conn = state
            .services
            .pool
            .acquire()
            .await
            .map_err(|e| ApiError::from(anyhow::Error::new(e).context("a connection")))?;
        resources::storage_use(&mut conn, share.tenant(), state.services.tenant_quota_bytes).await?
    };
    if storage.left <= 0 {
        return Err(resources::ResourceError::StorageFull {
            quota: storage.quota,
        }
        .into());
    }
    let resource_id = Uuid::now_v7();
    let key = Storage::key_for(share.tenant_id, share.id, resource_id);
    let left = u64::try_from(storage.left).unwrap_or(0);
    let limit = if left < state.services.max_upload_bytes {
        Limit {
            bytes: left,
            quota: Some(storage),
        }
    } else {
        Limit {
            bytes: state.services.max_upload_bytes,
            quota: None,
        }
    };
    let stored = store_upload(state, &key, &mut multipart, limit).await;
    let result = match stored {
        Ok((title, size, content_type)) => resources::add_resource(
            &state.services.pool,
            share.tenant(),
            admin.id,
            share.id,
            resource_id,
            &title,
            &content_type,
            i64::try_from(size).unwrap_or(i64::MAX),
            &key,
            state.services.tenant_quota_bytes,
        )
        .await
        .map_err(ApiError::from),
        Err(error) => Err(error),
    };
    match result {
        Ok(resource) => Ok(resource),
        Err(error) => {
            // Nothing points at stored bytes of a failed upload: remove them.
            if let Err(cleanup) = state.services.storage.delete(&key).await {
                tracing::warn!(
                    error = format!("{cleanup:#}"),
                    "removing an orphaned upload failed"
                );
            }
            Err(error)
        }
    }
}

/// The most an upload may store, and the quota when that is what bounds it.
#[derive(Clone, Copy)]
struct Limit {
    bytes: u64,
    quota: Option<resources::StorageUse>,
}

/// Longest accepted resource title field, in bytes.
const MAX_TITLE_BYTES: usize = 1_024;

/// Reads the multipart body: streams `file` into storage, reads a bounded
/// `title`. Returns (title, size, content type).
async fn store_upload(
    state: &ServerState,
    key: &str,
    multipart: &mut Multipart,
    limit: Limit,
) -> Result<(String, u64, String), ApiError> {
    let mut title: Option<String> = None;
    let mut stored: Option<(String, u64, String)> = None;
    while let Some(mut field) = multipart
        .next_field()
        .await
        .map_err(|e| rejection(e, "invalid_multipart"))?
    {
        match field.name() {
            Some("title") => {
                let mut bytes = Vec::new();
                while let Some(chunk) = field
                    .chunk()
                    .await
                    .map_err(|e| rejection(e, "invalid_multipart"))?
                {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > MAX_TITLE_BYTES {
                        return Err(ApiError::invalid(
                            "title",
                            "a title needs 1 to 200 visible characters",
                        ));
                    }
                }
                title = Some(
                    String::from_utf8(bytes)
                        .map_err(|_| ApiError::invalid("title", "a title is text"))?,
                );
            }
            Some("file") if stored.is_none() => {
                let file_name = field.file_name().unwrap_or("file").to_owned();
                let content_type = field
                    .content_type()
                    .filter(|ct| !ct.is_empty())
                    .unwrap_or("application/octet-stream")
                    .to_owned();
                let size = state
                    .services
                    .storage
                    .put(key, field, limit.bytes)
                    .await
                    .map_err(|error| match (error, limit.quota) {
                        (StorageError::TooLarge { .. }, Some(quota)) => {
                            ApiError::from(resources::ResourceError::StorageQuotaExceeded {
                                left: quota.left,
                                quota: quota.quota,
                            })
                        }
                        (error, _) => ApiError::from(error),
                    })?;
                stored = Some((file_name, size, content_type));
            }
            _ => {}
        }
    }
    let (file_name, size, content_type) = stored.ok_or_else(|| {
        ApiError::invalid(
            "file",
            "attach the file in a multipart field named \"file\"",
        )
    })?;
    let title = title.filter(|t| !t.trim().is_empty()).unwrap_or(file_name);
    Ok((title, size, content_type))
}
