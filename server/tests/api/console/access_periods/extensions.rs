//! Extending access: an admin extends one learner or everyone bound so far
//! (in chunks, each its own short transaction, reaching every learner once
//! and audited once); bad extensions and periods are refused and change
//! nothing.

use serde_json::{Value, json};
use sqlx::PgPool;
use time::{Duration, OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

use super::{age_binding, course_with_learners};
use crate::support::app::spawn_app;
use crate::support::course::{admin, assert_invariants, course, error_of, issue, open, post_json};

/// A moment `days` from now, in whole seconds.
fn in_days(days: i64) -> OffsetDateTime {
    (OffsetDateTime::now_utc() + Duration::days(days))
        .replace_nanosecond(0)
        .expect("whole seconds")
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("format")
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
