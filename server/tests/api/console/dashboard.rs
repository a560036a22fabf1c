//! The dashboard's chart: each of the last 14 days' accesses and new
//! bindings, zeros included, nothing older, bars to the axis' scale.

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::console::page;
use crate::support::course::{admin, course, enter_code, issue, learners, open};

/// The dashboard's chart shows the accesses and new bindings planted on
/// known days: the last 14 days (UTC), zeros included, nothing older, bar
/// heights to the axis' scale.
#[sqlx::test(migrations = "../migrations")]
async fn the_dashboard_chart_shows_each_days_accesses_and_bindings(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    // Today: two learners bind and open (2 accesses, 2 bindings).
    for ((_, client), (_, code)) in learners(&app, 2).await.iter().zip(&codes) {
        assert_eq!(
            enter_code(&app, client, &course.slug, code).await.status(),
            200
        );
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    // Earlier days, planted: (days ago, accesses, of which bindings).
    let planted: [(i32, i32, i32); 3] = [(3, 3, 1), (9, 4, 0), (20, 5, 5)];
    for (ago, accesses, bindings) in planted {
        for i in 0..accesses {
            sqlx::query(
                "INSERT INTO access_records
                     (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id,
                      bound_now, granted_at, expires_at)
                 SELECT tenant_id, gen_random_uuid(), share_id, code_id, principal_id, resource_id,
                        'planted-' || gen_random_uuid(), $2,
                        now() - make_interval(days => $1), now() - make_interval(days => $1) + interval '1 hour'
                 FROM access_records WHERE share_id = $3 LIMIT 1",
            )
            .bind(ago)
            .bind(i < bindings)
            .bind(course.share)
            .execute(&app.pool)
            .await
            .expect("plant a record");
        }
    }
    // Each of the last 14 days (oldest first) with its label and expected figures.
    let labels: Vec<(i32, String)> = sqlx::query_as(
        "SELECT ago, to_char((now() AT TIME ZONE 'UTC')::date - ago, 'FMDD Mon')
         FROM generate_series(13, 0, -1) AS ago",
    )
    .fetch_all(&app.pool)
    .await
    .expect("labels");
    let expected: Vec<(String, i64, i64)> = labels
        .into_iter()
        .map(|(ago, label)| {
            let (accesses, bindings) = match ago {
                0 => (2, 2),
                3 => (3, 1),
                9 => (4, 0),
                _ => (0, 0),
            };
            (label, accesses, bindings)
        })
        .collect();

    let (status, html) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}", admin.tenant),
    )
    .await;
    assert_eq!(status, 200);
    let html = html.replace("<!---->", "").replace("<!>", "");
    let chart = html.find("activity-chart").expect("a chart");
    let svg_start = html[..chart].rfind("<svg").expect("the chart's svg");
    let svg = &html[svg_start..svg_start + html[svg_start..].find("</svg>").expect("end")];
    // The axis goes to 5 (the round number above the busiest day's 4).
    let top = 5.0;
    assert!(svg.contains(">5</text>"), "axis top 5: {svg}");
    let plot_h = 220.0 - 28.0 - 12.0;
    let mut seen = Vec::new();
    for bar in svg.split("<rect").skip(1) {
        let tag = &bar[..bar.find('>').expect("end of the tag")];
        let attribute = |name: &str| {
            tag.split(&format!("{name}=\""))
                .nth(1)
                .and_then(|v| v.split('"').next())
                .unwrap_or_else(|| panic!("{name} in <rect{tag}>"))
        };
        let Some(kind) = attribute("class").strip_prefix("bar-") else {
            continue;
        };
        let height: f64 = attribute("height").parse().expect("height");
        let title = bar
            .split("<title>")
            .nth(1)
            .and_then(|t| t.split("</title>").next())
            .expect("title");
        let (label, rest) = title.split_once(": ").expect("label: figure");
        let value: i64 = rest
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("figure");
        let value_f = f64::from(i32::try_from(value).expect("small"));
        assert!(
            (height - plot_h * value_f / top).abs() < 0.11,
            "{title}: bar height {height} for {value} of {top}"
        );
        seen.push((kind.to_owned(), label.to_owned(), value));
    }
    let wanted: Vec<(String, String, i64)> = expected
        .iter()
        .flat_map(|(label, accesses, bindings)| {
            [
                ("accesses".to_owned(), label.clone(), *accesses),
                ("bindings".to_owned(), label.clone(), *bindings),
            ]
        })
        .collect();
    assert_eq!(seen, wanted, "the chart's days and figures");
}
