//! The share page: drafts, archived and unknown shares are not found, and
//! each state in which a course cannot be opened is explained to the learner.

use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{Course, admin, course, learners};
use crate::support::learner::page;

#[sqlx::test(migrations = "../migrations")]
async fn drafts_archived_and_unknown_shares_are_not_found(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let draft = course(&app, &admin, json!({ "status": "draft" })).await;
    let archived = course(&app, &admin, json!({ "status": "archived" })).await;
    let client = crate::support::app::new_client();
    for path in [
        format!("/s/{}", draft.slug),
        format!("/s/{}", archived.slug),
        "/s/no-such-course".to_owned(),
        format!("/s/{}/r/{}", draft.slug, draft.resource),
    ] {
        let (status, html) = page(&app, &client, &path).await;
        assert_eq!(status, 404, "{path}");
        assert!(html.contains("Page not found"), "{path}: {html}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn each_unavailable_state_is_explained_on_the_share_page(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let now = time::OffsetDateTime::now_utc();
    let rfc = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .expect("rfc3339")
    };
    let cases: Vec<(Course, &str)> = vec![
        (
            course(&app, &admin, json!({ "status": "paused" })).await,
            "This course is paused by its provider.",
        ),
        (
            course(
                &app,
                &admin,
                json!({ "valid_from": rfc(now - time::Duration::days(3)), "valid_until": rfc(now - time::Duration::days(1)) }),
            )
            .await,
            "This course has closed.",
        ),
        (
            course(
                &app,
                &admin,
                json!({ "valid_from": rfc(now + time::Duration::days(1)) }),
            )
            .await,
            "This course is not open yet.",
        ),
    ];
    let (_, client) = learners(&app, 1).await.remove(0);
    // Each reason in Chinese too: pages translate the reason itself
    // (`Unavailability`), not its English sentence.
    let chinese = [
        "课程提供方已暂停这门课程。",
        "这门课程已结束。",
        "这门课程尚未开放。",
    ];
    // The JSON door gives the same reason as a word to match on.
    let words = ["paused", "closed", "not_open_yet"];
    for (((course, message), chinese), word) in cases.into_iter().zip(chinese).zip(words) {
        let json: serde_json::Value = client
            .get(format!("{}/api/v1/s/{}", app.address, course.slug))
            .send()
            .await
            .expect("share json")
            .json()
            .await
            .expect("json");
        assert_eq!(json["available"], false, "{json}");
        assert_eq!(json["unavailable"], word, "{json}");
        assert_eq!(
            json["unavailable_reason"],
            message.trim_end_matches('.').to_lowercase(),
            "{json}"
        );
        let (status, html) = page(&app, &client, &format!("/s/{}", course.slug)).await;
        assert_eq!(status, 200);
        assert!(html.contains(r#"data-state="unavailable""#), "{html}");
        assert!(html.contains(message), "{message}: {html}");
        assert!(!html.contains(r#"name="code""#), "no code form");
        let html = client
            .get(format!("{}/s/{}", app.address, course.slug))
            .header("accept", "text/html")
            .header("accept-language", "zh-CN")
            .send()
            .await
            .expect("page")
            .text()
            .await
            .expect("html");
        assert!(html.contains(chinese), "{chinese}: {html}");
    }
}
