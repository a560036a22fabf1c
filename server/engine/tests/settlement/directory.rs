//! The global directory (`directory.*`, docs/design/tenancy.md): what is
//! found before its tenant is known (a share's link, a secret's digest, a
//! logo's id) is kept there by triggers, in step with the tenants' tables
//! through every insert, rename and delete; and with the old global
//! indexes gone (`20261214000001_drop_global_keys.sql`), the directory
//! alone refuses a second tenant's taken key.

use engine::{
    shares::{self, NewShare, ShareError, ShareSlug, ShareStatus},
    tenants::{self, TenantId, TenantName, TenantSlug},
};
use sqlx::PgPool;
use uuid::Uuid;

use crate::fixture::{Policy, World};

async fn other_tenant(world: &World) -> TenantId {
    tenants::ensure_tenant_with_owner(
        &world.pool,
        &TenantSlug::parse("other-school").expect("slug"),
        &TenantName::parse("Other School").expect("name"),
        world.admin,
    )
    .await
    .expect("tenant")
    .0
}

/// Every key the directory holds, and every key the tables say it should
/// hold, each as `kind:key@tenant`, sorted.
async fn directory_and_tables(pool: &PgPool) -> (Vec<String>, Vec<String>) {
    let directory: Vec<String> = sqlx::query_scalar(
        "SELECT k FROM (
           SELECT 'link:' || slug || '@' || tenant_id AS k FROM directory.share_links
           UNION ALL SELECT kind || ':' || encode(digest, 'hex') || '@' || tenant_id FROM directory.secrets
           UNION ALL SELECT 'logo:' || id || '@' || tenant_id FROM directory.logos
         ) d ORDER BY k",
    )
    .fetch_all(pool)
    .await
    .expect("the directory");
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT k FROM (
           SELECT 'link:' || slug || '@' || tenant_id AS k FROM shares
           UNION ALL SELECT 'api_token:' || encode(digest, 'hex') || '@' || tenant_id FROM api_tokens
           UNION ALL SELECT 'invitation:' || encode(digest, 'hex') || '@' || tenant_id FROM tenant_invitations
           UNION ALL SELECT 'transfer:' || encode(digest, 'hex') || '@' || tenant_id FROM transfer_requests
           UNION ALL SELECT 'logo:' || id || '@' || tenant_id FROM tenant_logos
         ) t ORDER BY k",
    )
    .fetch_all(pool)
    .await
    .expect("the tables");
    (directory, tables)
}

async fn assert_in_step(pool: &PgPool, expected: usize, context: &str) {
    let (directory, tables) = directory_and_tables(pool).await;
    assert_eq!(directory, tables, "{context}");
    assert_eq!(directory.len(), expected, "{context}: {directory:?}");
}

async fn run(pool: &PgPool, sql: &str, binds: &[Uuid]) -> Result<u64, sqlx::Error> {
    let mut query = sqlx::query(sql);
    for bind in binds {
        query = query.bind(bind);
    }
    query.execute(pool).await.map(|r| r.rows_affected())
}

async fn add_token(
    pool: &PgPool,
    tenant: TenantId,
    admin: Uuid,
    digest: &[u8],
) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "INSERT INTO api_tokens (tenant_id, id, name, scopes, digest, created_by)
         VALUES ($1, $2, 'ci', ARRAY['read'], $3, $4)",
    )
    .bind(tenant.0)
    .bind(Uuid::now_v7())
    .bind(digest)
    .bind(admin)
    .execute(pool)
    .await
    .map(|r| r.rows_affected())
}

async fn add_logo(pool: &PgPool, tenant: TenantId, id: Uuid) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "INSERT INTO tenant_logos (tenant_id, id, content_type, bytes) VALUES ($1, $2, 'image/png', '\\x89')",
    )
    .bind(tenant.0)
    .bind(id)
    .execute(pool)
    .await
    .map(|r| r.rows_affected())
}

#[sqlx::test(migrations = "../../migrations")]
async fn the_directory_follows_every_write_to_its_tables(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let pool = &world.pool;
    let other = other_tenant(&world).await;
    let elsewhere = World::in_tenant(&world, other).await;
    assert_in_step(pool, 2, "the shares of both tenants").await;

    add_token(pool, world.tenant, world.admin.0, b"token-one")
        .await
        .expect("token");
    add_token(pool, other, world.admin.0, b"token-two")
        .await
        .expect("token");
    run(
        pool,
        "INSERT INTO tenant_invitations (tenant_id, id, email, role, digest, invited_by, expires_at)
         VALUES ($1, $2, 'new@example.com', 'support', 'invite-one', $3, now() + interval '1 day')",
        &[world.tenant.0, Uuid::now_v7(), world.admin.0],
    )
    .await
    .expect("invitation");
    run(
        pool,
        "INSERT INTO transfer_requests (tenant_id, id, share_id, code_id, from_account, to_email,
                                        status, digest, link_expires_at)
         VALUES ($1, $2, $3, $4, $5, 'to@example.com', 'awaiting_target', 'transfer-one',
                 now() + interval '1 day')",
        &[
            other.0,
            Uuid::now_v7(),
            elsewhere.share.id.0,
            elsewhere.code(0),
            world.admin.0,
        ],
    )
    .await
    .expect("transfer request");
    let logo = Uuid::now_v7();
    add_logo(pool, other, logo).await.expect("logo");
    assert_in_step(pool, 7, "after inserts").await;

    // Renames: a share's link, a token's digest, a logo replaced in place.
    run(
        pool,
        "UPDATE shares SET slug = 'renamed' WHERE tenant_id = $1",
        &[other.0],
    )
    .await
    .expect("rename");
    run(
        pool,
        "UPDATE api_tokens SET digest = 'token-three' WHERE tenant_id = $1",
        &[world.tenant.0],
    )
    .await
    .expect("new digest");
    run(
        pool,
        "UPDATE tenant_logos SET id = $2 WHERE tenant_id = $1",
        &[other.0, Uuid::now_v7()],
    )
    .await
    .expect("new logo");
    // An update that keeps the key changes nothing in the directory.
    run(
        pool,
        "UPDATE shares SET title = 'Retitled', slug = slug",
        &[],
    )
    .await
    .expect("retitle");
    assert_in_step(pool, 7, "after renames").await;
    let old_logo: i64 = sqlx::query_scalar("SELECT count(*) FROM directory.logos WHERE id = $1")
        .bind(logo)
        .fetch_one(pool)
        .await
        .expect("old logo");
    assert_eq!(old_logo, 0, "the replaced logo's id is gone");

    // Deletes.
    run(pool, "DELETE FROM tenant_invitations", &[])
        .await
        .expect("delete");
    run(
        pool,
        "DELETE FROM api_tokens WHERE tenant_id = $1",
        &[other.0],
    )
    .await
    .expect("delete");
    run(pool, "DELETE FROM tenant_logos", &[])
        .await
        .expect("delete");
    assert_in_step(pool, 4, "after deletes").await;
}

#[sqlx::test(migrations = "../../migrations")]
async fn the_directory_alone_refuses_a_key_another_tenant_holds(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let pool = &world.pool;
    let other = other_tenant(&world).await;
    add_token(pool, world.tenant, world.admin.0, b"same-digest")
        .await
        .expect("token");
    let logo = Uuid::now_v7();
    add_logo(pool, world.tenant, logo).await.expect("logo");
    // The global keys are gone (20261214000001_drop_global_keys.sql):
    // what refuses below is the directory alone.
    let left: Vec<String> = sqlx::query_scalar(
        "SELECT relname::text FROM pg_class
         WHERE relname IN ('shares_slug_key', 'api_tokens_digest_key', 'tenant_logos_id_key')",
    )
    .fetch_all(pool)
    .await
    .expect("pg_class");
    assert_eq!(left, Vec::<String>::new(), "the global keys were dropped");

    // The other tenant cannot take this tenant's link: a clear refusal.
    let taken = shares::create_share(
        pool,
        other,
        world.admin,
        NewShare {
            title: "Same link".into(),
            slug: ShareSlug::parse(&world.share.slug).expect("slug"),
            description: String::new(),
            status: ShareStatus::Active,
            per_learner_limit: None,
            quota: None,
            access_days: None,
            valid_from: None,
            valid_until: None,
        },
    )
    .await;
    assert!(matches!(taken, Err(ShareError::SlugTaken)), "{taken:?}");
    let error = add_token(pool, other, world.admin.0, b"same-digest")
        .await
        .expect_err("a digest another tenant has");
    assert_eq!(
        error.as_database_error().and_then(|e| e.constraint()),
        Some("secrets_pkey")
    );
    let error = add_logo(pool, other, logo)
        .await
        .expect_err("a logo id another tenant has");
    assert_eq!(
        error.as_database_error().and_then(|e| e.constraint()),
        Some("logos_pkey")
    );
    // Nothing of the refused writes is left, in the tables or the directory.
    assert_in_step(pool, 3, "after the refusals").await;
}

/// A share, a code or a batch named by id alone is found only among the
/// tenants the caller names: another tenant's is not found at all (the
/// API then answers it like an id that does not exist).
#[sqlx::test(migrations = "../../migrations")]
async fn lookups_by_id_stay_inside_the_tenants_named(pool: PgPool) {
    let world = World::new(pool, Policy::default()).await;
    let pool = &world.pool;
    let other = other_tenant(&world).await;
    let (code, share) = (world.code(0), world.share.id);
    let batch: Uuid = sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(code)
        .fetch_one(pool)
        .await
        .expect("the code's batch");

    let own = [world.tenant];
    let found = shares::get_among(pool, &own, share).await.expect("read");
    assert_eq!(found.map(|s| s.id), Some(share));
    assert_eq!(
        engine::code_table::share_of_code(pool, &own, code)
            .await
            .expect("read"),
        Some((world.tenant, share))
    );
    assert_eq!(
        engine::batches::owner_of_batch(pool, &own, batch)
            .await
            .expect("read"),
        Some((world.tenant, share))
    );

    for among in [&[other][..], &[]] {
        let found = shares::get_among(pool, among, share).await.expect("read");
        assert!(found.is_none(), "{among:?}");
        assert_eq!(
            engine::code_table::share_of_code(pool, among, code)
                .await
                .expect("read"),
            None,
            "{among:?}"
        );
        assert_eq!(
            engine::batches::owner_of_batch(pool, among, batch)
                .await
                .expect("read"),
            None,
            "{among:?}"
        );
    }
    // Named with another tenant beside it, it is found in its own.
    let both = [other, world.tenant];
    assert_eq!(
        engine::code_table::share_of_code(pool, &both, code)
            .await
            .expect("read"),
        Some((world.tenant, share))
    );
}
