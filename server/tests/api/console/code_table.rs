//! The console's code table as support uses it: totals and pages both ways
//! (a page that ends with the last code offers no empty next page),
//! filters and search (a pasted full code found across the tenant's
//! shares), unbinding from the table, and the table downloaded as CSV with
//! the filters on screen.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::call;
use crate::support::app::{TestApp, spawn_app};
use crate::support::course::{Admin, admin, course, enter_code, issue, learners, open};

/// One page of the code table (the page's own server function).
pub(super) async fn table(app: &TestApp, admin: &Admin, share: Uuid, query: &str) -> Value {
    let response = admin
        .client
        .get(format!(
            "{}/api/admin/codes?tenant_id={}&share_id={share}{query}",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "{query}");
    response.json().await.expect("json")
}

fn ids(page: &Value) -> Vec<Uuid> {
    page["codes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c["id"].as_str().expect("id").parse().expect("uuid"))
        .collect()
}

fn cursor(page: &Value, name: &str) -> Option<String> {
    page[name].as_str().map(str::to_owned)
}

/// A server function called as the page's form posts it (no JavaScript).
async fn post_form(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(format!("{}{path}", app.address))
        .header("accept", "text/html")
        .header("referer", format!("{}/admin", app.address))
        .header("origin", &app.address)
        .form(fields)
        .send()
        .await
        .expect("request")
}

#[sqlx::test(migrations = "../migrations")]
async fn the_code_table_counts_and_pages_both_ways(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 120).await;
    let mut all: Vec<Uuid> = codes.iter().map(|(id, _)| *id).collect();
    all.sort();

    let first = table(&app, &admin, course.share, "").await;
    assert_eq!(
        (&first["total"], &first["first_row"]),
        (&json!(120), &json!(1))
    );
    assert_eq!(ids(&first), all[..50]);
    assert_eq!(cursor(&first, "previous_before"), None, "nothing before");
    let after = cursor(&first, "next_after").expect("a second page");

    let second = table(&app, &admin, course.share, &format!("&after={after}")).await;
    assert_eq!(second["first_row"], 51);
    assert_eq!(ids(&second), all[50..100]);
    let third = table(
        &app,
        &admin,
        course.share,
        &format!("&after={}", cursor(&second, "next_after").expect("a third")),
    )
    .await;
    assert_eq!(third["first_row"], 101);
    assert_eq!(ids(&third), all[100..]);
    assert_eq!(cursor(&third, "next_after"), None, "the last page says so");

    // Back again, page by page, to the same rows.
    let back = table(
        &app,
        &admin,
        course.share,
        &format!(
            "&before={}",
            cursor(&third, "previous_before").expect("a page before the last")
        ),
    )
    .await;
    assert_eq!(ids(&back), ids(&second));
    assert_eq!(back["first_row"], 51);
    assert_eq!(cursor(&back, "next_after"), cursor(&second, "next_after"));
    let front = table(
        &app,
        &admin,
        course.share,
        &format!(
            "&before={}",
            cursor(&back, "previous_before").expect("the first page")
        ),
    )
    .await;
    assert_eq!(ids(&front), ids(&first));
    assert_eq!(cursor(&front, "previous_before"), None);
    assert_eq!(front["first_row"], 1);

    // Totals follow the filters.
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[7].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let bound = table(&app, &admin, course.share, "&state=bound").await;
    assert_eq!(
        (&bound["total"], &bound["first_row"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(ids(&bound), vec![codes[7].0]);
    assert_eq!(cursor(&bound, "next_after"), None);
    let unused = table(&app, &admin, course.share, "&state=unused").await;
    assert_eq!(unused["total"], 119);
    let none = table(&app, &admin, course.share, "&q=nobody-at-all").await;
    assert_eq!((&none["total"], &none["first_row"]), (&json!(0), &json!(0)));
    assert!(ids(&none).is_empty());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_pasted_full_code_is_found_in_whichever_share_holds_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let tenant = admin.tenant.to_string();
    let first = course(&app, &admin, json!({})).await;
    let second = course(&app, &admin, json!({})).await;
    issue(&app, &admin, first.share, 3).await;
    let wanted = issue(&app, &admin, second.share, 3).await.remove(1);
    let elsewhere = {
        let other = crate::support::course::admin(&app).await;
        let course = course(&app, &other, json!({})).await;
        issue(&app, &other, course.share, 1).await.remove(0)
    };

    // Typed the way people paste: lower case, no dashes, spaces around.
    let typed = format!(" {} ", wanted.1.replace('-', "").to_lowercase());
    let response = post_form(
        &app,
        &admin.client,
        "/api/admin/codes/find",
        &[("tenant_id", &tenant), ("code", &typed)],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let location = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert_eq!(
        location,
        format!(
            "/admin/t/{tenant}/s/{}/codes?code={}",
            second.share, wanted.0
        )
    );
    // The table there holds that code alone, and says so.
    let found = table(&app, &admin, second.share, &format!("&code={}", wanted.0)).await;
    assert_eq!(ids(&found), vec![wanted.0]);
    assert_eq!(found["total"], 1);
    let html = app
        .get_page_as(&admin.client, &location)
        .await
        .text()
        .await
        .expect("page");
    assert!(html.contains("Showing the code you looked up"), "{html}");
    assert!(html.contains("1–1 of 1 codes"), "{html}");

    // What is not one of this tenant's codes is a clear error on the field.
    let hint_only = &wanted.1[..4];
    // One symbol changed: the check symbol catches it.
    let mut typo = wanted.1.clone();
    let last = typo.pop().expect("a symbol");
    typo.push(if last == 'A' { 'B' } else { 'A' });
    for (code, says) in [
        (elsewhere.1.as_str(), "No code of this tenant matches"),
        (hint_only, "12"),
        (typo.as_str(), "typo"),
        ("", "12"),
    ] {
        let response = admin
            .client
            .post(format!("{}/api/admin/codes/find", app.address))
            .form(&[("tenant_id", tenant.as_str()), ("code", code)])
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 422, "{code:?}");
        let error: Value = response.json().await.expect("json");
        assert_eq!(error["Invalid"]["field"], "code", "{code:?}: {error}");
        let message = error["Invalid"]["message"].as_str().expect("message");
        assert!(message.contains(says), "{code:?}: {message}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn the_code_table_downloads_as_csv_with_its_filters(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    // 1,005 codes: the CSV is read a page of 1,000 at a time.
    let codes = issue(&app, &admin, course.share, 1_005).await;
    let (learner_id, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[3].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let email: String = sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
        .bind(learner_id)
        .fetch_one(&app.pool)
        .await
        .expect("email");
    let csv = |query: &'static str| {
        let (client, address) = (admin.client.clone(), app.address.clone());
        let (tenant, share) = (admin.tenant, course.share);
        async move {
            let response = client
                .get(format!(
                    "{address}/admin/t/{tenant}/s/{share}/codes.csv{query}"
                ))
                .send()
                .await
                .expect("csv");
            let status = response.status();
            let headers = response.headers().clone();
            (status, headers, response.text().await.expect("body"))
        }
    };

    let (status, headers, body) = csv("").await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
    assert_eq!(
        headers["content-disposition"],
        format!("attachment; filename=\"codes-{}.csv\"", course.slug).as_str()
    );
    let mut lines = body.split("\r\n");
    assert_eq!(
        lines.next(),
        Some(
            "\u{feff}hint,state,learner_email,first_used_at,access_count,batch_label,expires_at,addressed_to,former_learner_email"
        )
    );
    let rows: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 1_005, "every code, across the CSV's pages");
    // Each code once (hints may repeat: compare them as multisets).
    let hint_of = |plain: &str| format!("{}…{}", &plain[..2], &plain[12..]);
    let mut got: Vec<&str> = rows
        .iter()
        .map(|row| row.split(',').next().expect("a hint"))
        .collect();
    let mut expected: Vec<String> = codes.iter().map(|(_, plain)| hint_of(plain)).collect();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected, "every code once");
    for (_, plain) in &codes {
        assert!(
            !body.contains(plain.as_str()) && !body.contains(&plain.replace('-', "")),
            "a plain code reached the CSV"
        );
    }

    let (_, _, bound) = csv("?state=bound").await;
    let bound_rows: Vec<&str> = bound
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(bound_rows.len(), 1, "{bound}");
    let fields: Vec<&str> = bound_rows[0].split(',').collect();
    assert_eq!(fields[0], hint_of(&codes[3].1));
    assert_eq!(fields[1], "bound");
    assert_eq!(fields[2], email);
    assert!(
        fields[3].starts_with("20"),
        "first use in RFC 3339: {}",
        fields[3]
    );
    assert_eq!(fields[4], "1");

    // A bad filter is a clear error, not an empty file.
    let (status, _, body) = csv("?state=lost").await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("invalid_code_state") || body.contains("state"),
        "{body}"
    );

    // Another tenant's admin gets nothing.
    let other = crate::support::course::admin(&app).await;
    let response = other
        .client
        .get(format!(
            "{}/admin/t/{}/s/{}/codes.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("csv");
    assert_eq!(response.status(), 403);
}

#[sqlx::test(migrations = "../migrations")]
async fn the_code_table_filters_searches_pages_and_unbinds(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 120).await;
    let (learner_id, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[7].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let email: String = sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
        .bind(learner_id)
        .fetch_one(&app.pool)
        .await
        .expect("email");
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/codes/revoke",
        &[("tenant_id", &tenant), ("code_id", &codes[3].0.to_string())],
    )
    .await;
    assert_eq!(status, 200);

    let table = |query: Vec<(&'static str, String)>| {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/codes", app.address);
        let mut query = query;
        query.push(("tenant_id", tenant.clone()));
        query.push(("share_id", share.clone()));
        async move {
            let response = client.get(url).query(&query).send().await.expect("table");
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let states = |page: &serde_json::Value| -> Vec<String> {
        page["codes"]
            .as_array()
            .expect("codes")
            .iter()
            .map(|c| c["state"].as_str().expect("state").to_owned())
            .collect()
    };
    let bound = table(vec![("state", "bound".into())]).await;
    assert_eq!(states(&bound), vec!["bound"]);
    assert_eq!(bound["codes"][0]["bound_email"], email.as_str());
    assert_eq!(
        states(&table(vec![("state", "revoked".into())]).await),
        vec!["revoked"]
    );
    // Keyset pages of 50: 118 unused codes in three pages, no overlap.
    let mut seen = std::collections::BTreeSet::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut query = vec![("state", "unused".to_owned())];
        if let Some(a) = &after {
            query.push(("after", a.clone()));
        }
        let page = table(query).await;
        pages += 1;
        for code in page["codes"].as_array().expect("codes") {
            assert!(seen.insert(code["id"].as_str().expect("id").to_owned()));
        }
        match page["next_after"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!((seen.len(), pages), (118, 3));
    // Search by the learner's email and by a hint.
    let by_email = table(vec![("q", email[..10].to_owned())]).await;
    assert_eq!(states(&by_email), vec!["bound"]);
    let hint: String = sqlx::query_scalar("SELECT hint FROM auth_codes WHERE id = $1")
        .bind(codes[7].0)
        .fetch_one(&app.pool)
        .await
        .expect("hint");
    let by_hint = table(vec![("q", hint.clone())]).await;
    assert!(
        by_hint["codes"]
            .as_array()
            .expect("codes")
            .iter()
            .any(|c| c["hint"] == hint.as_str())
    );
    // A bad state filter is a field error.
    let response = admin
        .client
        .get(format!("{}/api/admin/codes", app.address))
        .query(&[
            ("tenant_id", tenant.as_str()),
            ("share_id", share.as_str()),
            ("state", "lost"),
        ])
        .send()
        .await
        .expect("bad filter");
    assert_eq!(response.status(), 422);

    // Unbind with a reason: the learner loses access, the code is usable.
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/codes/unbind",
        &[
            ("tenant_id", &tenant),
            ("code_id", &codes[7].0.to_string()),
            ("reason", "learner asked to move to another account"),
            ("after", "usable"),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let response = open(&app, &learner, &course, None).await;
    assert_eq!(response.status(), 403, "access ended");
    let reason: String = sqlx::query_scalar(
        "SELECT reason FROM audit_log WHERE action = 'code.unbound' AND target_id = $1",
    )
    .bind(codes[7].0)
    .fetch_one(&app.pool)
    .await
    .expect("audited");
    assert_eq!(reason, "learner asked to move to another account");
    let (_, another) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &another, &course.slug, &codes[7].1)
            .await
            .status(),
        200,
        "the code is usable again"
    );
}

/// A page of codes says whether another follows, exactly: a page that
/// ends with the last code has no `next_after` (no empty page after it).
#[sqlx::test(migrations = "../migrations")]
async fn code_pages_end_exactly_with_the_last_code(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 4).await;
    let page = |after: Option<String>| {
        let mut url = format!(
            "{}/api/v1/shares/{}/codes?limit=2",
            app.address, course.share
        );
        if let Some(after) = after {
            url.push_str(&format!("&after={after}"));
        }
        let client = admin.client.clone();
        async move {
            let response = client.get(url).send().await.expect("codes");
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let first = page(None).await;
    assert_eq!(first["codes"].as_array().map(Vec::len), Some(2));
    assert_eq!(first["has_more"], true);
    let next = first["next_after"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let last = page(Some(next)).await;
    assert_eq!(last["codes"].as_array().map(Vec::len), Some(2));
    assert_eq!(last["has_more"], false, "{last}");
    assert_eq!(last["next_after"], serde_json::Value::Null, "{last}");
}
