//! A tenant's storage quota: an upload that would take the tenant's live
//! resources past it is refused (413 `storage_quota_exceeded`) and leaves
//! nothing, stored bytes included; parallel uploads at the edge never
//! overfill it; a removed resource frees its bytes; a tenant's own quota
//! (`tenants.storage_quota_bytes`) overrides the configured one; and one
//! tenant's uploads never count against another's.

use std::path::{Path, PathBuf};

use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app_with};
use crate::support::course::{Admin, admin, error_of, load_settings, post_json};

const QUOTA: u64 = 10_000;

/// The app, and the storage root it keeps uploads under.
async fn app_with_quota(pool: PgPool) -> (TestApp, PathBuf) {
    let mut settings = load_settings();
    settings.storage.tenant_quota_bytes = QUOTA;
    let root = std::env::temp_dir().join(format!("admitone-quota-{}", Uuid::new_v4()));
    settings.storage.root = root.to_string_lossy().into_owned();
    (spawn_app_with(pool, settings).await, root)
}

async fn share(app: &TestApp, admin: &Admin) -> Uuid {
    let response = post_json(
        app,
        &admin.client,
        &format!("/api/v1/tenants/{}/shares", admin.tenant),
        serde_json::json!({ "title": "Films" }),
    )
    .await;
    let share: serde_json::Value = response.json().await.expect("json");
    share["id"].as_str().expect("id").parse().expect("uuid")
}

async fn try_upload(app: &TestApp, admin: &Admin, share: Uuid, bytes: usize) -> reqwest::Response {
    let part = reqwest::multipart::Part::bytes(vec![7u8; bytes]).file_name("film.bin");
    admin
        .client
        .post(format!("{}/api/v1/shares/{share}/resources", app.address))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload")
}

/// (live resources, their bytes) of a tenant, in SQL.
async fn stored(app: &TestApp, tenant: Uuid) -> (i64, i64) {
    sqlx::query_as(
        "SELECT count(*), coalesce(sum(size_bytes), 0)::bigint FROM resources \
          WHERE tenant_id = $1 AND deleted_at IS NULL",
    )
    .bind(tenant)
    .fetch_one(&app.pool)
    .await
    .expect("resources")
}

/// Files under the app's storage root for a tenant (what the disk holds).
fn files(root: &Path, tenant: Uuid) -> usize {
    fn walk(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() { walk(&path) } else { 1 }
                })
                .sum()
        })
    }
    walk(&root.join(tenant.to_string()))
}

#[sqlx::test(migrations = "../migrations")]
async fn an_upload_past_the_tenants_quota_is_refused_and_leaves_nothing(pool: PgPool) {
    let (app, root) = app_with_quota(pool).await;
    let admin = admin(&app).await;
    let share = share(&app, &admin).await;
    let first = try_upload(&app, &admin, share, 6_000).await;
    assert_eq!(first.status(), 201);
    let first: serde_json::Value = first.json().await.expect("json");

    let refused = try_upload(&app, &admin, share, 6_000).await;
    assert_eq!(
        error_of(refused).await,
        (413, "storage_quota_exceeded".into())
    );
    assert_eq!(stored(&app, admin.tenant).await, (1, 6_000));
    assert_eq!(
        files(&root, admin.tenant),
        1,
        "the refused upload's bytes were removed"
    );

    // Exactly up to the quota is allowed.
    let fits = try_upload(&app, &admin, share, 4_000).await;
    assert_eq!(fits.status(), 201);
    assert_eq!(stored(&app, admin.tenant).await, (2, 10_000));
    let one_more = try_upload(&app, &admin, share, 1).await;
    assert_eq!(
        error_of(one_more).await,
        (413, "storage_quota_exceeded".into())
    );

    // Removing a resource frees its bytes.
    let removed = admin
        .client
        .delete(format!(
            "{}/api/v1/shares/{share}/resources/{}",
            app.address,
            first["id"].as_str().expect("id")
        ))
        .send()
        .await
        .expect("remove");
    assert!(removed.status().is_success(), "{}", removed.status());
    let again = try_upload(&app, &admin, share, 6_000).await;
    assert_eq!(again.status(), 201);
    assert_eq!(stored(&app, admin.tenant).await, (2, 10_000));
    std::fs::remove_dir_all(&root).ok();
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tenants_own_quota_overrides_the_configured_one_and_tenants_are_apart(pool: PgPool) {
    let (app, root) = app_with_quota(pool).await;
    let (big, small) = (admin(&app).await, admin(&app).await);
    sqlx::query("UPDATE tenants SET storage_quota_bytes = 30000 WHERE id = $1")
        .bind(big.tenant)
        .execute(&app.pool)
        .await
        .expect("a tenant's own quota");
    let (big_share, small_share) = (share(&app, &big).await, share(&app, &small).await);
    for _ in 0..3 {
        assert_eq!(try_upload(&app, &big, big_share, 9_000).await.status(), 201);
    }
    // The other tenant still has the whole configured quota.
    assert_eq!(
        try_upload(&app, &small, small_share, 9_000).await.status(),
        201
    );
    let refused = try_upload(&app, &small, small_share, 2_000).await;
    assert_eq!(
        error_of(refused).await,
        (413, "storage_quota_exceeded".into())
    );
    let refused = try_upload(&app, &big, big_share, 4_000).await;
    assert_eq!(
        error_of(refused).await,
        (413, "storage_quota_exceeded".into())
    );
    assert_eq!(stored(&app, big.tenant).await, (3, 27_000));
    assert_eq!(stored(&app, small.tenant).await, (1, 9_000));
    std::fs::remove_dir_all(&root).ok();
}

/// Twelve uploads of 3,000 bytes at once into a quota of 10,000: exactly
/// three are stored, whatever the interleaving.
#[sqlx::test(migrations = "../migrations")]
async fn parallel_uploads_at_the_edge_never_overfill_the_quota(pool: PgPool) {
    let (app, root) = app_with_quota(pool).await;
    let admin = admin(&app).await;
    let share = share(&app, &admin).await;
    let answers = futures::future::join_all((0..12).map(|_| {
        let (app, admin) = (&app, &admin);
        async move {
            let response = try_upload(app, admin, share, 3_000).await;
            if response.status() == 201 {
                (201, String::new())
            } else {
                error_of(response).await
            }
        }
    }))
    .await;
    let accepted = answers.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(accepted, 3, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|a| a.0 == 201 || *a == (413, "storage_quota_exceeded".to_owned())),
        "{answers:?}"
    );
    assert_eq!(stored(&app, admin.tenant).await, (3, 9_000));
    assert_eq!(files(&root, admin.tenant), 3);
    std::fs::remove_dir_all(&root).ok();
}
