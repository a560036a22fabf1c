//! Access periods (issue 17): a share may give each learner access for a
//! number of days from their first access. After it the learner is refused
//! (`403 access_ended`, saying when), by the settlement and by the bytes
//! route alike, and the binding stays: the code never becomes usable by
//! anyone else. An admin extends one learner, or everyone bound so far.
//!
//! Time passing is simulated by moving a binding's first access back in
//! SQL: a test does not wait for the clock.

use serde_json::{Value, json};
use sqlx::PgPool;
use time::{Duration, OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    Admin, Course, admin, assert_invariants, course, enter_code, error_of, fetch, issue, learners,
    load_settings, open, post_json, put_json, state_of,
};

/// A moment `days` from now, in whole seconds.
fn in_days(days: i64) -> OffsetDateTime {
    (OffsetDateTime::now_utc() + Duration::days(days))
        .replace_nanosecond(0)
        .expect("whole seconds")
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("format")
}

/// Moves a binding's first access `days` back, as time passing would.
async fn age_binding(app: &TestApp, code: Uuid, days: i32) {
    sqlx::query(
        "UPDATE auth_codes SET first_used_at = first_used_at - make_interval(days => $2) WHERE id = $1",
    )
    .bind(code)
    .bind(days)
    .execute(&app.pool)
    .await
    .expect("age the binding");
}

/// A course giving 30 days of access, and `n` learners each bound with
/// their own code: (course, [(code id, client)], the codes as typed).
async fn course_with_learners(
    app: &TestApp,
    admin: &Admin,
    n: usize,
) -> (Course, Vec<(Uuid, reqwest::Client)>, Vec<String>) {
    let course = course(app, admin, json!({ "access_days": 30 })).await;
    let codes = issue(app, admin, course.share, n).await;
    let mut bound = Vec::new();
    let mut plain = Vec::new();
    for ((code_id, code), (_, client)) in codes.into_iter().zip(learners(app, n).await) {
        assert_eq!(
            enter_code(app, &client, &course.slug, &code).await.status(),
            200
        );
        assert_eq!(open(app, &client, &course, None).await.status(), 200);
        bound.push((code_id, client));
        plain.push(code);
    }
    (course, bound, plain)
}

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

#[sqlx::test(migrations = "../migrations")]
async fn an_admin_extends_one_learner_or_everyone(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let (course, bound, _) = course_with_learners(&app, &admin, 2).await;
    for (code, _) in &bound {
        age_binding(&app, *code, 31).await;
    }
    for (_, learner) in &bound {
        let refused = open(&app, learner, &course, None).await;
        assert_eq!(error_of(refused).await.1, "access_ended");
    }

    // One learner, to a date.
    let one = in_days(10);
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/extend-access", bound[0].0),
        json!({ "until": rfc3339(one) }),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.expect("json");
    assert_eq!(answer["access_ends"], json!(rfc3339(one)));
    assert_eq!(open(&app, &bound[0].1, &course, None).await.status(), 200);
    let still = open(&app, &bound[1].1, &course, None).await;
    assert_eq!(error_of(still).await.1, "access_ended");

    // Everyone bound so far, to a later date.
    let all = in_days(20);
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/extend-access", course.share),
        json!({ "until": rfc3339(all) }),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.expect("json");
    assert_eq!(answer["extended"], 2);
    assert_eq!(open(&app, &bound[1].1, &course, None).await.status(), 200);

    // An earlier date never shortens anyone's access.
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/extend-access", bound[0].0),
        json!({ "until": rfc3339(in_days(5)) }),
    )
    .await;
    let answer: Value = answer.json().await.expect("json");
    assert_eq!(answer["access_ends"], json!(rfc3339(all)));

    // The learners CSV says when each learner's access ends.
    let csv = admin
        .client
        .get(format!(
            "{}/api/v1/shares/{}/learners.csv",
            app.address, course.share
        ))
        .send()
        .await
        .expect("csv")
        .text()
        .await
        .expect("text");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().map(|h| h.trim_start_matches('\u{feff}')),
        Some("email,code_hint,bound_at,accesses,last_access,suspended,access_ends")
    );
    let ends: Vec<&str> = lines.map(|l| l.rsplit(',').next().unwrap_or("")).collect();
    assert_eq!(ends, vec![rfc3339(all).as_str(); 2], "{csv}");

    let audited: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE action LIKE 'access.%' ORDER BY created_at",
    )
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(
        audited,
        ["access.extended", "access.extended_all", "access.extended"]
    );
    assert_invariants(&app, "after extensions").await;

    // An unbind ends the binding's extension with it: whoever binds the
    // code next starts from the share's period alone.
    let unbound = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{}/unbind", bound[0].0),
        json!({ "reason": "changed account" }),
    )
    .await;
    assert_eq!(unbound.status(), 200);
    let until: Option<OffsetDateTime> =
        sqlx::query_scalar("SELECT access_until FROM auth_codes WHERE id = $1")
            .bind(bound[0].0)
            .fetch_one(&app.pool)
            .await
            .expect("until");
    assert_eq!(until, None);
}

#[sqlx::test(migrations = "../migrations")]
async fn extensions_and_periods_refuse_bad_input_and_change_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let (course, bound, _) = course_with_learners(&app, &admin, 1).await;
    let (code, _) = &bound[0];
    let untils = || async {
        sqlx::query_scalar::<_, Option<OffsetDateTime>>(
            "SELECT access_until FROM auth_codes WHERE share_id = $1",
        )
        .bind(course.share)
        .fetch_all(&app.pool)
        .await
        .expect("untils")
    };
    let before = untils().await;
    for bad in [
        json!(rfc3339(OffsetDateTime::now_utc() - Duration::hours(1))),
        json!("soon"),
        // Valid RFC 3339, but past what a date may be (and past what
        // PostgreSQL's UTC conversion takes): refused, never a 500.
        json!("9999-12-31T23:30:00-01:00"),
        json!(rfc3339(in_days(365 * 101))),
    ] {
        for path in [
            format!("/api/v1/codes/{code}/extend-access"),
            format!("/api/v1/shares/{}/extend-access", course.share),
        ] {
            let answer = post_json(&app, &admin.client, &path, json!({ "until": bad })).await;
            assert_eq!(answer.status(), 422, "{path} {bad}");
            let body: Value = answer.json().await.expect("json");
            assert_eq!(body["field"], "until", "{path} {bad}: {body}");
        }
    }
    assert_eq!(untils().await, before, "no extension was written");

    // An unused code has nobody to extend; a course without a period has
    // nothing to extend.
    let unused = issue(&app, &admin, course.share, 1).await.remove(0).0;
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/codes/{unused}/extend-access"),
        json!({ "until": rfc3339(in_days(3)) }),
    )
    .await;
    assert_eq!(error_of(answer).await, (409, "code_not_bound".to_owned()));
    let forever = crate::support::course::course(&app, &admin, json!({})).await;
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/extend-access", forever.share),
        json!({ "until": rfc3339(in_days(3)) }),
    )
    .await;
    assert_eq!(error_of(answer).await, (409, "no_access_period".to_owned()));

    // A settings update that does not name the period keeps it (an older
    // client must not give every ended learner their access back).
    let kept = crate::support::course::put_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}", course.share),
        json!({ "title": "Renamed", "status": "active", "quota": 1_000_000 }),
    )
    .await;
    assert_eq!(
        kept.status(),
        200,
        "{}",
        kept.text().await.unwrap_or_default()
    );
    let days: Option<i32> = sqlx::query_scalar("SELECT access_days FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("days");
    assert_eq!(days, Some(30));
    // `null` says "for good".
    let cleared = crate::support::course::put_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}", course.share),
        json!({ "title": "Renamed", "status": "active", "quota": 1_000_000, "access_days": null }),
    )
    .await;
    assert_eq!(cleared.status(), 200);
    let days: Option<i32> = sqlx::query_scalar("SELECT access_days FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("days");
    assert_eq!(days, None);

    // A period is 1 to 36,500 days.
    for days in [0, 36_501] {
        let answer = post_json(
            &app,
            &admin.client,
            &format!("/api/v1/tenants/{}/shares", admin.tenant),
            json!({ "title": "Bad period", "access_days": days }),
        )
        .await;
        assert_eq!(answer.status(), 422, "{days}");
        let body: Value = answer.json().await.expect("json");
        assert_eq!(body["field"], "access_days", "{days}: {body}");
    }
    let shares: i64 = sqlx::query_scalar("SELECT count(*) FROM shares WHERE title = 'Bad period'")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(shares, 0);
}

/// Extending everyone walks the share in chunks (each its own short
/// transaction, so settlements never wait for the whole share): past two
/// chunks, every bound learner is reached once, a revoked code and a
/// learner with a later end are left alone, and one audit entry counts
/// them all.
#[sqlx::test(migrations = "../migrations")]
async fn extending_everyone_reaches_every_learner_past_a_chunk(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "access_days": 30 })).await;
    let total = 2_003;
    let codes: Vec<Uuid> = issue(&app, &admin, course.share, total)
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    // Learners bound directly in SQL (only the count matters here).
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
         SELECT c.id, 'bulk-' || c.id || '@example.com', 'Bulk', 'x', now()
         FROM unnest($1::uuid[]) AS c(id)",
    )
    .bind(&codes)
    .execute(&app.pool)
    .await
    .expect("accounts");
    sqlx::query(
        "UPDATE auth_codes SET bound_principal = id, first_used_at = now() - interval '40 days'
         WHERE share_id = $1",
    )
    .bind(course.share)
    .execute(&app.pool)
    .await
    .expect("bind");
    let later = in_days(90);
    sqlx::query("UPDATE auth_codes SET revoked_at = now() WHERE id = $1")
        .bind(codes[0])
        .execute(&app.pool)
        .await
        .expect("revoke one");
    sqlx::query("UPDATE auth_codes SET access_until = $2 WHERE id = $1")
        .bind(codes[1])
        .bind(later)
        .execute(&app.pool)
        .await
        .expect("one with a later end");

    let until = in_days(10);
    let answer = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/extend-access", course.share),
        json!({ "until": rfc3339(until) }),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.expect("json");
    assert_eq!(answer["extended"], total - 2);
    let ends: Vec<(Uuid, Option<OffsetDateTime>)> =
        sqlx::query_as("SELECT id, access_until FROM auth_codes WHERE share_id = $1")
            .bind(course.share)
            .fetch_all(&app.pool)
            .await
            .expect("ends");
    for (id, end) in ends {
        let expected = if id == codes[0] {
            None
        } else if id == codes[1] {
            Some(later)
        } else {
            Some(until)
        };
        assert_eq!(end, expected, "{id}");
    }
    let audited: Vec<Value> =
        sqlx::query_scalar("SELECT details FROM audit_log WHERE action = 'access.extended_all'")
            .fetch_all(&app.pool)
            .await
            .expect("audit");
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0]["learners"], total - 2);

    // Again: nobody needs it, nothing changes, and it says so.
    let again = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{}/extend-access", course.share),
        json!({ "until": rfc3339(until) }),
    )
    .await;
    let again: Value = again.json().await.expect("json");
    assert_eq!(again["extended"], 0);
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
