//! A tenant's time zone: its console shows every time in it, reads typed
//! dates in it and counts the dashboard's days in it; stored instants stay
//! UTC. Checked through the pages and forms, then with SQL.

use serde_json::{Value, json};
use sqlx::PgPool;
use time::{OffsetDateTime, UtcOffset};

use crate::support::app::spawn_app;
use crate::support::course::{admin, course, enter_code, issue, learners, open};

#[sqlx::test(migrations = "../migrations")]
async fn a_tenant_in_shanghai_reads_types_and_counts_local_times(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let tenant = admin.tenant.to_string();
    let course = course(&app, &admin, json!({})).await;
    let zone_of = || async {
        sqlx::query_scalar::<_, String>("SELECT time_zone FROM tenants WHERE id = $1")
            .bind(admin.tenant)
            .fetch_one(&app.pool)
            .await
            .expect("zone")
    };
    assert_eq!(zone_of().await, "UTC", "a new tenant is in UTC");

    // A name that is no time zone: a clear error on its field, nothing saved.
    for bad in ["Mars/Olympus", "Asia/Shanghai; DROP TABLE tenants", "上海"] {
        let refused = app
            .post_form_as(
                &admin.client,
                "/api/admin/tenant/settings",
                &[("tenant_id", &tenant), ("time_zone", bad)],
            )
            .await;
        assert_eq!(refused.status(), 422, "{bad:?}");
        let error: Value = refused.json().await.expect("error");
        assert_eq!(error["Invalid"]["field"], "time_zone", "{error}");
    }
    assert_eq!(zone_of().await, "UTC");

    let saved = app
        .post_form_as(
            &admin.client,
            "/api/admin/tenant/settings",
            &[("tenant_id", &tenant), ("time_zone", " Asia/Shanghai ")],
        )
        .await;
    assert_eq!(
        saved.status(),
        200,
        "{}",
        saved.text().await.unwrap_or_default()
    );
    assert_eq!(zone_of().await, "Asia/Shanghai");

    // Shown: the audit log's time of the share's creation, at UTC+8.
    let created: OffsetDateTime = sqlx::query_scalar(
        "SELECT created_at FROM audit_log WHERE action = 'share.created' AND tenant_id = $1",
    )
    .bind(admin.tenant)
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    let local = created.to_offset(UtcOffset::from_hms(8, 0, 0).expect("offset"));
    let expected = format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC+8",
        local.year(),
        u8::from(local.month()),
        local.day(),
        local.hour(),
        local.minute()
    );
    let page = app
        .get_page_as(&admin.client, &format!("/admin/t/{tenant}/audit"))
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains(&expected), "{expected} not on the audit page");
    assert!(!page.contains(" UTC<"), "no time is left in UTC");

    // Typed: "closes 2031-01-01 08:00" in Shanghai is midnight UTC.
    let share = course.share.to_string();
    let updated = app
        .post_form_as(
            &admin.client,
            "/api/admin/share/update",
            &[
                ("tenant_id", &tenant),
                ("share_id", &share),
                ("title", "Rust in Depth"),
                ("slug", &course.slug),
                ("description", ""),
                ("status", "active"),
                ("valid_from", ""),
                ("valid_until", "2031-01-01T08:00"),
                ("per_learner_limit", ""),
                ("quota", ""),
            ],
        )
        .await;
    assert_eq!(
        updated.status(),
        200,
        "{}",
        updated.text().await.unwrap_or_default()
    );
    let until: OffsetDateTime = sqlx::query_scalar("SELECT valid_until FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("share");
    assert_eq!(until, time::macros::datetime!(2031-01-01 00:00 UTC));
    let editor = app
        .get_page_as(&admin.client, &format!("/admin/t/{tenant}/s/{share}"))
        .await
        .text()
        .await
        .expect("page");
    assert!(
        editor.contains("2031-01-01T08:00"),
        "the form shows it back in Shanghai time"
    );
    assert!(editor.contains("Closes (Asia/Shanghai)"));

    // Counted: an access at 00:30 in Shanghai (16:30 UTC the day before)
    // is today's in Shanghai, yesterday's in UTC.
    let code = issue(&app, &admin, course.share, 1).await.remove(0).1;
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &code)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    sqlx::query(
        "UPDATE access_records SET granted_at =
           (date_trunc('day', now() AT TIME ZONE 'Asia/Shanghai') + interval '30 minutes')
             AT TIME ZONE 'Asia/Shanghai'
         WHERE share_id = $1",
    )
    .bind(course.share)
    .execute(&app.pool)
    .await
    .expect("move the access");
    let tenant_id = engine::tenants::TenantId(admin.tenant);
    // The access's day as each zone reads it (the moment is fixed above;
    // the span of three days holds it whenever the test runs).
    let (shanghai_day, utc_day): (time::Date, time::Date) = sqlx::query_as(
        "SELECT (granted_at AT TIME ZONE 'Asia/Shanghai')::date, (granted_at AT TIME ZONE 'UTC')::date
         FROM access_records WHERE share_id = $1",
    )
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("days");
    assert_eq!(
        utc_day.next_day(),
        Some(shanghai_day),
        "00:30 in Shanghai is the day before in UTC"
    );
    let counted_on = |days: Vec<engine::read_models::DayActivity>| {
        days.into_iter()
            .filter(|d| d.accesses > 0)
            .map(|d| (d.day, d.accesses))
            .collect::<Vec<_>>()
    };
    let shanghai = engine::zone::Zone::parse("Asia/Shanghai").expect("zone");
    let days = engine::read_models::activity(
        &engine::db::Reads::primary_only(app.pool.clone()),
        tenant_id,
        &shanghai,
        3,
    )
    .await
    .expect("activity");
    assert_eq!(counted_on(days), [(shanghai_day, 1)], "Shanghai's day");
    let days = engine::read_models::activity(
        &engine::db::Reads::primary_only(app.pool.clone()),
        tenant_id,
        &engine::zone::Zone::utc(),
        3,
    )
    .await
    .expect("activity");
    assert_eq!(counted_on(days), [(utc_day, 1)], "UTC's day");
}
