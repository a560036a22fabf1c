//! The console's import form: a CSV imported with its report shown in both
//! languages, the reason shown when nothing was imported (a declared header
//! skipped), only a course manager of the tenant may use it, and imports
//! are limited per tenant (the console's and the API's together).

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{import, import_form, stored};
use crate::support::app::spawn_app;
use crate::support::course::{admin, assert_invariants, course, enter_code, learners, open};

#[sqlx::test(migrations = "../migrations")]
async fn the_console_imports_a_csv_and_shows_its_report_in_both_languages(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let file = "code,email\nSHOP-AAAA-0001,ann@example.com\n\nshop-aaaa-0001,bob@example.com\nSHOP#0003,cy@example.com\n";
    let response = import_form(
        &app,
        &admin.client,
        admin.tenant,
        course.share,
        &[
            ("label", "Shop export"),
            ("format", "foreign"),
            ("alphabet", "A-Z 0-9 shop"),
        ],
        file,
    )
    .await;
    // "A-Z" is not an alphabet: refused, nothing stored, the message shown.
    assert_eq!(response.status(), 303);
    let back = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert_eq!(
        back,
        format!("/admin/t/{}/s/{}#import", admin.tenant, course.share)
    );
    let page = app
        .get_page_as(&admin.client, &back.replace("#import", ""))
        .await
        .text()
        .await
        .expect("page");
    assert!(
        page.contains("an alphabet is 2 to 36 letters"),
        "the flash names the problem"
    );
    assert_eq!(stored(&app, course.share).await, (0, 0, false));

    let response = import_form(
        &app,
        &admin.client,
        admin.tenant,
        course.share,
        &[
            ("label", "Shop export"),
            ("format", "foreign"),
            ("alphabet", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        ],
        file,
    )
    .await;
    assert_eq!(response.status(), 303);
    let report = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let batch: Uuid = report
        .rsplit('/')
        .next()
        .expect("id")
        .parse()
        .expect("uuid");
    assert_eq!(
        report,
        format!(
            "/admin/t/{}/s/{}/imports/{batch}",
            admin.tenant, course.share
        )
    );
    assert_eq!(stored(&app, course.share).await, (1, 1, true));
    let page = app
        .get_page_as(&admin.client, &report)
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains("1 of 3 codes imported"), "{page}");
    assert!(
        page.contains("Line 4: the same code is on an earlier line"),
        "{page}"
    );
    assert!(
        page.contains("Line 5: characters other than letters and digits"),
        "{page}"
    );

    // The same page in Chinese.
    app.get_as(&admin.client, &format!("/lang/zh-CN?back={report}"))
        .await;
    let page = app
        .get_page_as(&admin.client, &report)
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains("已导入 1 个兑换码，共 3 个"), "{page}");
    assert!(
        page.contains("第 4 行: 同一兑换码已在前面的行出现"),
        "{page}"
    );

    // A learner redeems the imported code; the page says any format goes.
    let (_, ann) = learners(&app, 1).await.remove(0);
    let page = app
        .get_page_as(&ann, &format!("/s/{}", course.slug))
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains("Type your code as you received it"), "{page}");
    let entered = enter_code(&app, &ann, &course.slug, "shopaaaa0001").await;
    assert_eq!(entered.status(), 200);
    assert_eq!(open(&app, &ann, &course, None).await.status(), 200);
    assert_invariants(&app, "after the console's import").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn only_a_course_manager_of_the_tenant_can_use_the_import_form(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let stranger = crate::support::course::admin(&app).await;
    // Another tenant's admin, naming their own tenant or this one.
    for tenant in [stranger.tenant, admin.tenant] {
        let response = import_form(
            &app,
            &stranger.client,
            tenant,
            course.share,
            &[],
            "ABCD1234\n",
        )
        .await;
        assert!(
            [403, 404].contains(&response.status().as_u16()),
            "{}",
            response.status()
        );
    }
    let (_, learner) = learners(&app, 1).await.remove(0);
    let response = import_form(
        &app,
        &learner,
        admin.tenant,
        course.share,
        &[],
        "ABCD1234\n",
    )
    .await;
    assert_eq!(response.status(), 403);
    assert_eq!(stored(&app, course.share).await, (0, 0, false));
}

#[sqlx::test(migrations = "../migrations")]
async fn the_console_says_why_nothing_was_imported_and_skips_a_declared_header(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let back = format!("/admin/t/{}/s/{}", admin.tenant, course.share);
    // "Voucher code" would be a code of its own without the tick.
    let file = "Voucher code\nGIFT-0001\n";
    let response = import_form(
        &app,
        &admin.client,
        admin.tenant,
        course.share,
        &[("header", "yes")],
        file,
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(stored(&app, course.share).await, (1, 1, true));
    // The same file again: nothing new, and the share's page says why.
    let response = import_form(
        &app,
        &admin.client,
        admin.tenant,
        course.share,
        &[("header", "yes")],
        file,
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        format!("{back}#import").as_str()
    );
    let page = app
        .get_page_as(&admin.client, &back)
        .await
        .text()
        .await
        .expect("page");
    assert!(
        page.contains("none of the 1 codes could be imported (line 2: this code already exists"),
        "{page}"
    );
    assert_eq!(stored(&app, course.share).await, (1, 1, true));
    // A file over the limit is refused whole.
    let huge = "X".repeat(engine::imports::MAX_REQUEST_BYTES + 1);
    let response = import_form(&app, &admin.client, admin.tenant, course.share, &[], &huge).await;
    assert!(
        [303, 413].contains(&response.status().as_u16()),
        "{}",
        response.status()
    );
    assert_eq!(stored(&app, course.share).await, (1, 1, true));
}

/// An import tells its admin which of its codes their tenant has already:
/// imports are limited per tenant per hour, the console's and the API's
/// together, and a refused one changes nothing.
#[sqlx::test(migrations = "../migrations")]
async fn imports_are_limited_per_tenant(pool: PgPool) {
    let mut settings = crate::support::course::load_settings();
    settings.throttle.imports_per_tenant_per_hour = 2;
    let app = crate::support::app::spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let first = import(
        &app,
        &admin.client,
        course.share,
        json!({ "codes": ["LIMIT-0001"] }),
    )
    .await;
    assert_eq!(first.0, 201, "{}", first.1);
    let second = import_form(
        &app,
        &admin.client,
        admin.tenant,
        course.share,
        &[],
        "LIMIT-0002\n",
    )
    .await;
    assert_eq!(second.status(), 303);
    assert_eq!(stored(&app, course.share).await, (2, 2, true));
    let (status, body) = import(
        &app,
        &admin.client,
        course.share,
        json!({ "codes": ["LIMIT-0003"] }),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("rate_limited")),
        "{body}"
    );
    assert_eq!(stored(&app, course.share).await, (2, 2, true));
    // Another tenant is not held back.
    let other = crate::support::course::admin(&app).await;
    let theirs = crate::support::course::course(&app, &other, json!({ "title": "Theirs" })).await;
    let (status, _) = import(
        &app,
        &other.client,
        theirs.share,
        json!({ "codes": ["LIMIT-0003"] }),
    )
    .await;
    assert_eq!(status, 201);
}
