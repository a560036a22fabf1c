//! Which unique keys of a tenant's table may be global, read from the
//! catalog.
//!
//! Why: a database sharded by tenant (Citus-style) keeps a unique index
//! only when it leads with the shard key, so every unique key of a table
//! that carries `tenant_id` must lead with it; what has to be found before
//! the tenant is known goes through the `directory` schema (migration
//! `20261213000001_tenant_directory.sql`, docs/design/tenancy.md). The
//! test below reads `pg_index` and fails on a key that breaks the rule and
//! is not in [`ALLOWED`], so a new global key cannot slip in unnoticed.

use anyhow::Context as _;
use sqlx::PgPool;

/// The unique indexes on tables carrying `tenant_id` that may lead with
/// something else, each with why.
pub const ALLOWED: &[(&str, &str)] = &[(
    "mail_outbox_pkey",
    "one outbox for every mail: most mails (sign-in, reset, receipts of no tenant) have no \
         tenant (`tenant_id` is nullable), and the relay claims due mail across tenants",
)];

/// Every unique index in `public` on a table with a `tenant_id` column
/// whose first column is not `tenant_id` (an expression counts as not),
/// by name, sorted; [`ALLOWED`] included.
pub async fn not_led_by_tenant(pool: &PgPool) -> anyhow::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT i.relname::text AS "name!"
           FROM pg_index x
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
           WHERE x.indisunique
             AND t.relnamespace = 'public'::regnamespace
             AND EXISTS (SELECT 1 FROM pg_attribute a
                         WHERE a.attrelid = t.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
             AND coalesce((SELECT a.attname <> 'tenant_id' FROM pg_attribute a
                           WHERE a.attrelid = t.oid AND a.attnum = x.indkey[0]), true)
           ORDER BY 1"#
    )
    .fetch_all(pool)
    .await
    .context("reading the unique indexes")
}

#[cfg(test)]
mod tests {
    use sqlx::PgPool;

    use super::{ALLOWED, not_led_by_tenant};

    fn allowed() -> Vec<String> {
        let mut names: Vec<String> = ALLOWED.iter().map(|(n, _)| (*n).to_owned()).collect();
        names.sort();
        names
    }

    /// Every unique key of a tenant's table leads with `tenant_id`, but
    /// those allowed by name; and each allowed one still exists (a stale
    /// entry would let its name back in unnoticed).
    #[sqlx::test(migrations = "../../migrations")]
    async fn every_unique_key_of_a_tenant_table_leads_with_the_tenant(pool: PgPool) {
        assert_eq!(not_led_by_tenant(&pool).await.expect("catalog"), allowed());
    }

    /// The check catches a key that does not lead with the tenant, whatever
    /// its shape: a column, `tenant_id` second, an expression.
    #[sqlx::test(migrations = "../../migrations")]
    async fn a_global_unique_key_on_a_tenant_table_is_caught(pool: PgPool) {
        for ddl in [
            "CREATE UNIQUE INDEX resources_everywhere ON resources (storage_key)",
            "CREATE UNIQUE INDEX code_batches_tenant_second ON code_batches (id, tenant_id)",
            "CREATE UNIQUE INDEX outbox_by_expression ON outbox ((id::text), tenant_id)",
            "ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_url_key UNIQUE (url)",
        ] {
            sqlx::query(ddl).execute(&pool).await.expect(ddl);
        }
        let mut expected = allowed();
        expected.extend(
            [
                "resources_everywhere",
                "code_batches_tenant_second",
                "outbox_by_expression",
                "webhook_endpoints_url_key",
            ]
            .map(str::to_owned),
        );
        expected.sort();
        assert_eq!(not_led_by_tenant(&pool).await.expect("catalog"), expected);
        // A key led by the tenant is fine, and so is a global key on a
        // table that is not a tenant's.
        sqlx::query("CREATE UNIQUE INDEX resources_led ON resources (tenant_id, storage_key)")
            .execute(&pool)
            .await
            .expect("tenant-led");
        sqlx::query("CREATE UNIQUE INDEX accounts_by_name ON accounts (display_name, id)")
            .execute(&pool)
            .await
            .expect("global table");
        assert_eq!(not_led_by_tenant(&pool).await.expect("catalog"), expected);
    }
}
