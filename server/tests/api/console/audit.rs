//! The audit log's pages end exactly with the oldest entry: a full last
//! page offers no empty next page.

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, course};

/// The audit log's pages end exactly with the oldest entry: a full last
/// page offers no (empty) next page.
#[sqlx::test(migrations = "../migrations")]
async fn audit_pages_end_exactly_with_the_oldest_entry(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    course(&app, &admin, json!({})).await;
    let entries = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM audit_log WHERE tenant_id = $1")
            .bind(admin.tenant)
            .fetch_one(&app.pool)
            .await
            .expect("count")
    };
    let pad = |n: i64| {
        sqlx::query(
            "INSERT INTO audit_log (tenant_id, id, action, target_type, created_at)
             SELECT $1, gen_random_uuid(), 'share.updated', 'share', now() - make_interval(secs => g)
             FROM generate_series(1, $2) AS g",
        )
        .bind(admin.tenant)
        .bind(n)
    };
    // Exactly one page (100 entries).
    pad(100 - entries().await)
        .execute(&app.pool)
        .await
        .expect("pad");
    let page = |before: Option<String>| {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/audit", app.address);
        let mut query = vec![("tenant_id", admin.tenant.to_string())];
        if let Some(before) = before {
            query.push(("before", before));
        }
        async move {
            let response = client.get(url).query(&query).send().await.expect("audit");
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let only = page(None).await;
    assert_eq!(only["entries"].as_array().map(Vec::len), Some(100));
    assert_eq!(only["next"], serde_json::Value::Null, "no empty next page");
    // One more: two pages, the second with the oldest entry and no next.
    pad(1).execute(&app.pool).await.expect("pad");
    let first = page(None).await;
    let next = first["next"].as_str().expect("a next page").to_owned();
    let second = page(Some(next)).await;
    assert_eq!(second["entries"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["next"], serde_json::Value::Null);
}
