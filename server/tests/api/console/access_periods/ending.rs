//! When an access period ends the learner is refused (`403 access_ended`,
//! saying when), by the settlement and by the bytes route alike, and the
//! binding stays: the code never becomes usable by anyone else. The console
//! asks before a shorter period cuts learners off at once.

use serde_json::{Value, json};
use sqlx::PgPool;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

use super::{age_binding, course_with_learners};
use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    Course, admin, assert_invariants, course, enter_code, error_of, fetch, issue, learners,
    load_settings, open, put_json, state_of,
};

/// The learner's own view of the share (`GET /api/v1/s/{slug}`).
async fn me(app: &TestApp, client: &reqwest::Client, course: &Course) -> Value {
    let response = client
        .get(format!("{}/api/v1/s/{}", app.address, course.slug))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
}

#[sqlx::test(migrations = "../migrations")]
async fn an_access_period_ends_for_the_learner_and_the_binding_stays(pool: PgPool) {
    // Every bytes request asks PostgreSQL (no remembered grant), so the
    // end shows on the very next one.
    let mut settings = load_settings();
    settings.settlement.grant_recheck_secs = 0;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    // The first opening carries a request id: its access record is the
    // one a retry would be answered from.
    let course = course(&app, &admin, json!({ "access_days": 30 })).await;
    let (code, typed) = issue(&app, &admin, course.share, 1).await.remove(0);
    let plain = [typed];
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &plain[0])
            .await
            .status(),
        200
    );
    assert_eq!(
        open(&app, &learner, &course, Some("opened-before-the-end"))
            .await
            .status(),
        200
    );

    // Within the period: the page says until when.
    let page = app
        .get_page_as(&learner, &format!("/s/{}", course.slug))
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains("data-state=\"has-access\""), "{page}");
    assert!(page.contains("Your access lasts until"), "{page}");

    age_binding(&app, code, 31).await;
    let (accesses_before, share_before) = (
        sqlx::query_scalar::<_, i32>("SELECT access_count FROM auth_codes WHERE id = $1")
            .bind(code)
            .fetch_one(&app.pool)
            .await
            .expect("count"),
        state_of(&app, course.share).await,
    );

    // The bytes stop at once (the grant the learner still holds included),
    // and a new opening is refused with its own error, writing nothing.
    let bytes = fetch(&app, &learner, &course, None).await;
    assert_eq!(error_of(bytes).await, (403, "access_ended".to_owned()));
    let refused = open(&app, &learner, &course, None).await;
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["code"], "access_ended", "{body}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|m| m.starts_with("your access to this course ended on 20")),
        "{body}"
    );
    assert_eq!(state_of(&app, course.share).await, share_before);
    let accesses_after: i32 =
        sqlx::query_scalar("SELECT access_count FROM auth_codes WHERE id = $1")
            .bind(code)
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(accesses_after, accesses_before);

    // The binding stays: the learner's own view says it ended, and nobody
    // else can use the code.
    let view = me(&app, &learner, &course).await;
    let ends = view["me"]["binding"]["access_ends"]
        .as_str()
        .and_then(|at| OffsetDateTime::parse(at, &Rfc3339).ok())
        .unwrap_or_else(|| panic!("the learner's view names the end: {view}"));
    assert!(ends < OffsetDateTime::now_utc(), "{view}");
    // A retry of an opening that was granted before the end (its request
    // id reused) is refused too, not answered from its first result.
    let replayed = open(&app, &learner, &course, Some("opened-before-the-end")).await;
    assert_eq!(error_of(replayed).await, (403, "access_ended".to_owned()));
    let page = app
        .get_page_as(&learner, &format!("/s/{}", course.slug))
        .await
        .text()
        .await
        .expect("page");
    assert!(page.contains("data-state=\"ended\""), "{page}");
    assert!(page.contains("Your access has ended"), "{page}");
    let courses: Value = learner
        .get(format!("{}/api/learner/courses", app.address))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(courses[0]["open"], false, "{courses}");
    assert!(
        courses[0]["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("Your access ended on")),
        "{courses}"
    );
    let bound_to: Option<Uuid> =
        sqlx::query_scalar("SELECT bound_principal FROM auth_codes WHERE id = $1")
            .bind(code)
            .fetch_one(&app.pool)
            .await
            .expect("binding");
    assert!(bound_to.is_some(), "the binding stays");
    let (_, stranger) = learners(&app, 1).await.remove(0);
    let refused = enter_code(&app, &stranger, &course.slug, &plain[0]).await;
    assert_eq!(
        error_of(refused).await.1,
        "code_bound",
        "nobody else can use it"
    );
    assert_invariants(&app, "after an access period ended").await;
}

/// The console asks before a shorter period cuts learners off at once: it
/// names how many and changes nothing until the box is ticked; a change
/// that cuts nobody off needs no tick, and neither does the JSON API (a
/// script sends what it means).
#[sqlx::test(migrations = "../migrations")]
async fn the_console_asks_before_a_shorter_period_cuts_learners_off(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let (course, bound, _) = course_with_learners(&app, &admin, 2).await;
    // A 60-day period: Ann bound 40 days ago, Bob today.
    put_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}", course.share),
        json!({ "title": "Course", "access_days": 60 }),
    )
    .await;
    age_binding(&app, bound[0].0, 40).await;
    let days = || async {
        sqlx::query_scalar::<_, Option<i32>>("SELECT access_days FROM shares WHERE id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("days")
    };
    assert_eq!(days().await, Some(60));
    let save = |access_days: &'static str, confirm: bool| {
        let (tenant, share, slug) = (
            admin.tenant.to_string(),
            course.share.to_string(),
            course.slug.clone(),
        );
        let client = admin.client.clone();
        let url = format!("{}/api/admin/share/update", app.address);
        async move {
            let mut form = vec![
                ("tenant_id", tenant),
                ("share_id", share),
                ("title", "Course".to_owned()),
                ("slug", slug),
                ("description", String::new()),
                ("status", "active".to_owned()),
                ("valid_from", String::new()),
                ("valid_until", String::new()),
                ("per_learner_limit", String::new()),
                ("quota", String::new()),
                ("access_days", access_days.to_owned()),
            ];
            if confirm {
                form.push(("confirm_period", "yes".to_owned()));
            }
            let response = client.post(url).form(&form).send().await.expect("save");
            (
                response.status().as_u16(),
                response.text().await.expect("body"),
            )
        }
    };

    // 30 days would end Ann's access now: asked, nothing changes.
    let (status, body) = save("30", false).await;
    assert_eq!(status, 422, "{body}");
    let error: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(error["Invalid"]["field"], "access_days", "{body}");
    assert!(
        error["Invalid"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("(1)"),
        "names how many: {body}"
    );
    assert_eq!(days().await, Some(60), "nothing changed");
    assert_eq!(open(&app, &bound[0].1, &course, None).await.status(), 200);

    // 50 days cuts nobody off: no tick needed.
    let (status, body) = save("50", false).await;
    assert!((200..400).contains(&status), "{status} {body}");
    assert_eq!(days().await, Some(50));

    // Ticked: saved, and Ann's access has ended.
    let (status, body) = save("30", true).await;
    assert!((200..400).contains(&status), "{status} {body}");
    assert_eq!(days().await, Some(30));
    let refused = open(&app, &bound[0].1, &course, None).await;
    assert_eq!(error_of(refused).await.1, "access_ended");
    assert_eq!(open(&app, &bound[1].1, &course, None).await.status(), 200);

    // The JSON API acts on what the script sends.
    let api = put_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}", course.share),
        json!({ "title": "Course", "access_days": 1 }),
    )
    .await;
    assert_eq!(api.status(), 200);
    assert_eq!(days().await, Some(1));
}
