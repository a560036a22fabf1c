//! The admin console over HTTP as a browser without JavaScript uses it:
//! one-time codes (page and CSV), the code table, unbinding, and bad input
//! on every form refused with a field error and no change.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::{TestApp, spawn_app};
use crate::support::console::{form, issue_by_form, page};
use crate::support::course::{Admin, admin, course, enter_code, issue, learners, open};
use crate::support::processes::LoggedServer;

/// Every plain code in `html` (the `XXXX-XXXX-XXXX` shape).
fn codes_in(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in html.match_indices("plain-code\">") {
        let start = i + "plain-code\">".len();
        if let Some(code) = html.get(start..start + 14) {
            found.push(code.to_owned());
        }
    }
    found
}

/// What each QR code printed in `html` says, decoded from the SVG as
/// served (`qrcode`'s renderer: one background `<rect>`, then one `<path>`
/// of `M{x} {y}h{w}v{h}H{x}V{y}` squares), rasterised and read by a real
/// QR decoder.
fn qr_payloads(html: &str) -> Vec<String> {
    let number = |text: &str| -> usize { text.parse().expect("a whole number in the SVG") };
    let mut payloads = Vec::new();
    for svg in html.split("<svg").skip(1) {
        let after = |from: &str, marker: &str| -> String {
            let start = from.find(marker).expect(marker) + marker.len();
            from[start..]
                .split('"')
                .next()
                .expect("attribute")
                .to_owned()
        };
        let rect = &svg[svg.find("<rect").expect("background rect")..];
        let (width, height) = (
            number(&after(rect, "width=\"")),
            number(&after(rect, "height=\"")),
        );
        let mut dark = vec![false; width * height];
        for square in after(svg, "d=\"").split('M').filter(|s| !s.is_empty()) {
            // `{x} {y}h{w}v{h}H{x}V{y}`
            let fields: Vec<&str> = square.split(|c: char| " hvHV".contains(c)).collect();
            let (x, y, w, h) = (
                number(fields[0]),
                number(fields[1]),
                number(fields[2]),
                number(fields[3]),
            );
            for row in y..y + h {
                for column in x..x + w {
                    dark[row * width + column] = true;
                }
            }
        }
        let mut image = rqrr::PreparedImage::prepare_from_greyscale(width, height, |x, y| {
            if dark[y * width + x] { 0 } else { 255 }
        });
        let grids = image.detect_grids();
        assert_eq!(grids.len(), 1, "one QR code per card");
        let (_, text) = grids[0].decode().expect("a readable QR code");
        payloads.push(text);
    }
    payloads
}

const MANY: usize = 400_000;

/// Issues a batch, then parks `MANY` codes in place of its copies: a CSV
/// far larger than every buffer between server and client (socket
/// buffers, hyper's), so that a client that stops reading really stops
/// the download midway. Returns the CSV's address, the owner and the batch.
async fn big_download(app: &TestApp, admin: &Admin) -> (String, uuid::Uuid, uuid::Uuid) {
    let course = course(app, admin, json!({})).await;
    let (result_page, batch) = issue_by_form(&app.address, admin, course.share, "3").await;
    let owner: uuid::Uuid = sqlx::query_scalar("SELECT created_by FROM code_batches WHERE id = $1")
        .bind(batch)
        .fetch_one(&app.pool)
        .await
        .expect("owner");
    let many: Vec<String> = (0..MANY)
        .map(|i| format!("TEST-{:04}-{:04}", i / 10_000, i % 10_000))
        .collect();
    engine::handover::park(&app.redis, engine::accounts::AccountId(owner), batch, &many)
        .await
        .expect("park");
    (
        format!("{}{result_page}/codes.csv", app.address),
        owner,
        batch,
    )
}

/// Starts a download and reads only its first chunk: the download stays
/// open, midway. Returns it and the bytes read so far.
async fn start_and_hold(admin: &Admin, csv_url: &str) -> (reqwest::Response, Vec<u8>) {
    let mut held = admin.client.get(csv_url).send().await.expect("csv");
    assert_eq!(held.status(), 200);
    let first = held
        .chunk()
        .await
        .expect("first chunk")
        .expect("some bytes");
    // A UTF-8 byte order mark first: Excel then reads Chinese labels right.
    assert!(first.starts_with("\u{feff}code,link,batch_label".as_bytes()));
    (held, first.to_vec())
}

/// A second download while one is in flight: refused, with the stable error.
async fn assert_in_progress(admin: &Admin, csv_url: &str) {
    let second = admin.client.get(csv_url).send().await.expect("second");
    assert_eq!(
        second.status(),
        StatusCode::CONFLICT,
        "a second download ran while the first was in flight"
    );
    // It ends by itself: the client is told when to try again.
    assert!(
        second.headers().contains_key("retry-after"),
        "{:?}",
        second.headers()
    );
    let error: serde_json::Value = second.json().await.expect("error body");
    assert_eq!(error["code"], "download_in_progress", "{error}");
    assert_eq!(
        error["detail"],
        "this batch's codes are being downloaded right now; try again in a minute"
    );
}

/// Every row of the parked list, in order.
fn assert_full_list(body: &str) {
    let rows: Vec<&str> = body.lines().skip(1).collect();
    assert_eq!(rows.len(), MANY);
    assert!(rows[0].starts_with("TEST-0000-0000,"), "{}", rows[0]);
    assert!(
        rows[MANY - 1].starts_with("TEST-0039-9999,"),
        "{}",
        rows[MANY - 1]
    );
}

/// Finishes a held download; returns its whole body.
async fn finish(held: reqwest::Response, mut body: Vec<u8>) -> String {
    body.extend_from_slice(&held.bytes().await.expect("rest of the body"));
    String::from_utf8(body).expect("utf-8")
}

/// The handover keys of a batch still in Redis, but the page's copy.
async fn csv_keys_left(app: &TestApp, owner: uuid::Uuid, batch: uuid::Uuid) -> Vec<String> {
    let pattern = app.redis.keys().handover(owner, batch, "*");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut app.redis.conn())
        .await
        .expect("KEYS");
    keys.into_iter().filter(|k| !k.ends_with(":page")).collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn only_one_codes_download_runs_at_a_time(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let (csv_url, _, _) = big_download(&app, &admin).await;

    let (held, first) = start_and_hold(&admin, &csv_url).await;
    assert_in_progress(&admin, &csv_url).await;
    assert_in_progress(&admin, &csv_url).await;

    // The refused ones did not disturb the one in flight.
    assert_full_list(&finish(held, first).await);
}

#[sqlx::test(migrations = "../migrations")]
async fn an_aborted_codes_download_can_be_downloaded_again_in_full(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let (csv_url, owner, batch) = big_download(&app, &admin).await;

    // The first download breaks after its first chunk; while it was in
    // flight, nobody else got the codes.
    let (aborted, _) = start_and_hold(&admin, &csv_url).await;
    assert_in_progress(&admin, &csv_url).await;
    drop(aborted);

    // The codes are still there, all of them, as soon as the server has
    // seen the connection go (its lease is released then, long before it
    // would expire).
    let started = std::time::Instant::now();
    let again = loop {
        let again = admin.client.get(&csv_url).send().await.expect("csv again");
        if again.status() != StatusCode::CONFLICT {
            break again;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the aborted download still holds its lease"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(again.status(), 200, "an aborted download lost the codes");
    assert_eq!(again.headers()["cache-control"], "no-store");
    let body = again.text().await.expect("body");
    assert_full_list(&body);

    // A completed download was the last one.
    let after = admin.client.get(&csv_url).send().await.expect("csv after");
    assert_eq!(after.status(), StatusCode::GONE);

    // Both downloads are in the tenant's audit log, by the admin: the
    // broken one with how far it got (so a break nobody admits to shows).
    let audited = downloads_audited(&app, batch, 2).await;
    let entry = |action: &str| {
        let found: Vec<_> = audited.iter().filter(|(a, _, _)| a == action).collect();
        assert_eq!(found.len(), 1, "one {action}: {audited:?}");
        let (_, actor, details) = found[0];
        assert_eq!(*actor, owner, "{action} by the admin");
        details.clone()
    };
    let broken = entry("batch.download_broken");
    assert_eq!(broken["rows"], MANY);
    let sent = broken["rows_sent"].as_u64().expect("rows_sent");
    let handed_out = broken["rows_handed_out"].as_u64().expect("rows_handed_out");
    // The client read the first chunk, so the connection had accepted it
    // (the stream was polled again); the break came before the end.
    assert!(
        (1_000..MANY as u64).contains(&sent) && (sent..MANY as u64).contains(&handed_out),
        "how far the broken one got: {broken}"
    );
    let completed = entry("batch.downloaded");
    assert_eq!(completed["rows"], MANY);
    assert_eq!(completed["rows_sent"], MANY);
    assert_eq!(completed["rows_handed_out"], MANY);
}

/// The batch's download entries in the audit log, oldest first, once there
/// are `expected` of them (a broken download is audited in the background).
async fn downloads_audited(
    app: &TestApp,
    batch: uuid::Uuid,
    expected: usize,
) -> Vec<(String, uuid::Uuid, serde_json::Value)> {
    let started = std::time::Instant::now();
    loop {
        let rows: Vec<(String, uuid::Uuid, serde_json::Value)> = sqlx::query_as(
            "SELECT action, actor_id, details FROM audit_log
             WHERE target_id = $1 AND action LIKE 'batch.download%' ORDER BY id",
        )
        .bind(batch)
        .fetch_all(&app.pool)
        .await
        .expect("audit log");
        if rows.len() >= expected || started.elapsed() > std::time::Duration::from_secs(10) {
            return rows;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn after_a_completed_codes_download_every_request_is_gone(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let (csv_url, owner, batch) = big_download(&app, &admin).await;

    // A request made while the download was in flight got nothing.
    let (held, first) = start_and_hold(&admin, &csv_url).await;
    assert_in_progress(&admin, &csv_url).await;
    assert_full_list(&finish(held, first).await);

    // Completed: gone for good, and no copy or lease is left behind.
    for _ in 0..2 {
        let after = admin.client.get(&csv_url).send().await.expect("csv after");
        assert_eq!(after.status(), StatusCode::GONE);
        let error: serde_json::Value = after.json().await.expect("error body");
        assert_eq!(error["code"], "already_downloaded", "{error}");
    }
    assert_eq!(
        csv_keys_left(&app, owner, batch).await,
        Vec::<String>::new()
    );
}

/// Everything the database holds, as text.
async fn database_text(pool: &PgPool) -> String {
    let mut text = String::new();
    for table in [
        "shares",
        "code_batches",
        "auth_codes",
        "access_records",
        "idempotency_records",
        "outbox",
        "audit_log",
    ] {
        let dump: Option<String> =
            sqlx::query_scalar(&format!("SELECT string_agg(t::text, '\n') FROM {table} t"))
                .fetch_one(pool)
                .await
                .expect("dump");
        text.push_str(&dump.unwrap_or_default());
    }
    text
}

#[sqlx::test(migrations = "../migrations")]
async fn new_codes_are_shown_once_downloaded_once_and_stored_nowhere(pool: PgPool) {
    let server = LoggedServer::start(&pool).await;
    let address = server.address.clone();
    // The fixtures drive the logged server (its address, the same pool).
    let app = TestApp {
        address: address.clone(),
        ..spawn_app(pool.clone()).await
    };
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "Once" })).await;
    let share_page = format!("/admin/t/{}/s/{}", admin.tenant, course.share);

    let response = form(
        &address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("share_id", &course.share.to_string()),
            ("count", "5"),
            ("label", "Class =A"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let result_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert!(result_page.contains("/batches/"), "{result_page}");

    let (status, html) = page(&address, &admin.client, &result_page).await;
    assert_eq!(status, 200);
    let codes = codes_in(&html);
    assert_eq!(codes.len(), 5, "{html}");
    assert!(html.contains("shown only now"));
    // Each printed card's QR code opens the share with its own code filled
    // in (the fragment never reaches a server log).
    let start = html.find("card-link\">").expect("a card's link") + "card-link\">".len();
    let link = &html[start..start + html[start..].find('<').expect("end of the link")];
    assert!(
        link.starts_with("http") && link.ends_with(&format!("/s/{}", course.slug)),
        "{link}"
    );
    let expected: Vec<String> = codes.iter().map(|c| format!("{link}#code={c}")).collect();
    assert_eq!(qr_payloads(&html), expected);

    // The page is one-time.
    let (_, again) = page(&address, &admin.client, &result_page).await;
    assert!(codes_in(&again).is_empty(), "{again}");
    assert!(again.contains("already shown once"));

    // So is the CSV; another admin of the tenant cannot take it either.
    let csv_url = format!("{result_page}/codes.csv");
    let csv = admin
        .client
        .get(format!("{address}{csv_url}"))
        .send()
        .await
        .expect("csv");
    assert_eq!(csv.status(), 200);
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(
        csv.headers()["content-disposition"]
            .to_str()
            .expect("disposition")
            .starts_with("attachment")
    );
    let body = csv.text().await.expect("csv body");
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("\u{feff}code,link,batch_label"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 5);
    for (row, code) in rows.iter().zip(&codes) {
        assert!(row.starts_with(&format!("{code},")), "{row}");
        assert!(row.contains(&format!("/s/{}", course.slug)), "{row}");
        assert!(row.ends_with(",Class =A"), "{row}");
    }
    let second = admin
        .client
        .get(format!("{address}{csv_url}"))
        .send()
        .await
        .expect("csv again");
    assert_eq!(second.status(), StatusCode::GONE);

    // The codes work (they are real), yet appear nowhere afterwards.
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0])
            .await
            .status(),
        200
    );
    // Support looks a pasted code up: it is posted and only hashed, so it
    // reaches no URL, log or page either.
    let found = form(
        &address,
        &admin.client,
        &format!("{share_page}/codes"),
        "/api/admin/codes/find",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("code", &codes[1].to_lowercase()),
        ],
    )
    .await;
    assert_eq!(found.status(), StatusCode::FOUND);
    let found_page = found.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert!(
        found_page.starts_with(&format!("{share_page}/codes?code=")),
        "{found_page}"
    );
    let mut later = String::new();
    for path in [
        share_page.clone(),
        format!("{share_page}/codes"),
        found_page.clone(),
        format!("/admin/t/{}", admin.tenant),
        format!("/admin/t/{}/audit", admin.tenant),
    ] {
        let (status, html) = page(&address, &admin.client, &path).await;
        assert_eq!(status, 200, "{path}");
        later.push_str(&html);
    }
    let stored = database_text(&pool).await;
    let logs = server.stop();
    assert!(logs.contains("/api/admin/codes/issue"), "logs captured");
    for code in &codes {
        let canonical = code.replace('-', "");
        for (place, text) in [
            ("database", &stored),
            ("logs", &logs),
            ("later pages", &later),
        ] {
            assert!(
                !text.contains(code.as_str()) && !text.contains(&canonical),
                "a plain code reached the {place}"
            );
        }
    }
}

/// A digest of every row an admin form could change.
async fn snapshot(pool: &PgPool) -> String {
    sqlx::query_scalar(
        "SELECT concat_ws('|',
            (SELECT md5(coalesce(string_agg(s::text, ',' ORDER BY s.id), '')) FROM shares s),
            (SELECT md5(coalesce(string_agg(c::text, ',' ORDER BY c.id), '')) FROM auth_codes c),
            (SELECT md5(coalesce(string_agg(b::text, ',' ORDER BY b.id), '')) FROM code_batches b),
            (SELECT md5(coalesce(string_agg(l::text, ',' ORDER BY l.id), '')) FROM audit_log l))",
    )
    .fetch_one(pool)
    .await
    .expect("snapshot")
}

async fn call(app: &TestApp, admin: &Admin, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
    let response = admin
        .client
        .post(format!("{}{path}", app.address))
        .form(fields)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

/// A server function, the fields sent, the field the error must name.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

#[sqlx::test(migrations = "../migrations")]
async fn bad_input_on_every_console_form_gets_a_field_error_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let code = codes[0].0.to_string();
    let long = "x".repeat(201);
    let update = |field: &'static str, value: &'static str| {
        let mut fields = vec![
            ("title", "Fine"),
            ("slug", "fine-slug"),
            ("description", ""),
            ("status", "active"),
            ("valid_from", ""),
            ("valid_until", ""),
            ("per_learner_limit", ""),
            ("quota", ""),
        ];
        for f in &mut fields {
            if f.0 == field {
                f.1 = value;
            }
        }
        fields
    };
    let before = snapshot(&app.pool).await;
    let cases: Vec<Case> = vec![
        ("/api/admin/share/create", vec![("title", "")], "title"),
        ("/api/admin/share/create", vec![("title", &long)], "title"),
        (
            "/api/admin/share/create",
            vec![("title", "Ok"), ("slug", "Bad Slug!")],
            "slug",
        ),
        (
            "/api/admin/share/create",
            vec![("title", "Ok"), ("slug", &course.slug)],
            "slug",
        ),
        ("/api/admin/share/update", update("title", "  "), "title"),
        (
            "/api/admin/share/update",
            update("status", "deleted"),
            "status",
        ),
        ("/api/admin/share/update", update("quota", "abc"), "quota"),
        ("/api/admin/share/update", update("quota", "0"), "quota"),
        (
            "/api/admin/share/update",
            update("per_learner_limit", "-1"),
            "per_learner_limit",
        ),
        (
            "/api/admin/share/update",
            update("valid_from", "yesterday"),
            "valid_from",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "0"), ("label", "")],
            "count",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "100001"), ("label", "")],
            "count",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "many"), ("label", "")],
            "count",
        ),
        (
            "/api/admin/codes/issue",
            vec![("count", "2"), ("label", &long)],
            "label",
        ),
        (
            "/api/admin/codes/unbind",
            vec![
                ("reason", "lost phone"),
                ("after", "maybe"),
                ("confirm", "yes"),
            ],
            "after",
        ),
        (
            "/api/admin/codes/unbind",
            vec![("reason", "lost phone"), ("after", "usable")],
            "confirm",
        ),
        (
            "/api/admin/codes/unbind",
            vec![
                ("reason", "lost phone"),
                ("after", "usable"),
                ("confirm", "no"),
            ],
            "confirm",
        ),
        (
            "/api/admin/codes/revoke-and-replace",
            vec![("reason", "posted on a forum")],
            "confirm",
        ),
        (
            "/api/admin/codes/revoke-and-replace",
            vec![("reason", " "), ("confirm", "yes")],
            "reason",
        ),
    ];
    for (path, fields, field) in cases {
        let mut all: Vec<(&str, &str)> = vec![("tenant_id", &tenant)];
        if path != "/api/admin/share/create" {
            all.push(("share_id", &share));
        }
        if path == "/api/admin/codes/unbind" || path == "/api/admin/codes/revoke-and-replace" {
            all.retain(|(k, _)| *k != "share_id");
            all.push(("code_id", &code));
        }
        all.extend(fields.iter().copied());
        let (status, body) = call(&app, &admin, path, &all).await;
        assert_eq!(status, 422, "{path} {fields:?}: {body}");
        let error: serde_json::Value = serde_json::from_str(&body).expect("json error");
        assert_eq!(
            error["Invalid"]["field"], field,
            "{path} {fields:?}: {body}"
        );
    }
    // Wrong types: not a uuid.
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/share/update",
        &[("tenant_id", "nope"), ("share_id", "x")],
    )
    .await;
    assert!((400..500).contains(&status), "{status}");
    // Unbinding a code nobody holds is refused too.
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/codes/unbind",
        &[
            ("tenant_id", &tenant),
            ("code_id", &code),
            ("reason", "x"),
            ("after", "usable"),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert!((400..500).contains(&status), "{status}");
    assert_eq!(snapshot(&app.pool).await, before, "nothing changed");
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

#[sqlx::test(migrations = "../migrations")]
async fn learners_records_csv_and_the_leak_signal(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "Watched" })).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let mut clients = learners(&app, 3).await;
    let (owner_id, owner) = clients.remove(0);
    assert_eq!(
        enter_code(&app, &owner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &owner, &course, None).await.status(), 200);
    // Two other accounts try the bound code three times in all.
    for (i, (_, other)) in clients.iter().enumerate() {
        for _ in 0..=i {
            let response = enter_code(&app, other, &course.slug, &codes[0].1).await;
            assert_eq!(response.status(), 409);
        }
    }
    let (attempts, last): (i32, Option<time::OffsetDateTime>) = sqlx::query_as(
        "SELECT foreign_attempts, last_foreign_attempt_at FROM auth_codes WHERE id = $1",
    )
    .bind(codes[0].0)
    .fetch_one(&app.pool)
    .await
    .expect("leak signal");
    assert_eq!(attempts, 3);
    assert!(last.is_some());
    let (_, dashboard) = page(
        &app.address,
        &admin.client,
        &format!("/admin/t/{}", admin.tenant),
    )
    .await;
    assert!(
        dashboard.contains("Codes other accounts keep trying"),
        "{dashboard}"
    );
    assert!(dashboard.contains(r#"<tr class="leak">"#));

    // The learners page lists the owner; their records are one click away.
    let learners_page = format!("/admin/t/{}/s/{}/learners", admin.tenant, course.share);
    let (status, html) = page(&app.address, &admin.client, &learners_page).await;
    assert_eq!(status, 200);
    assert!(html.contains(&format!("?learner={owner_id}")), "{html}");
    let (_, records) = page(
        &app.address,
        &admin.client,
        &format!("{learners_page}?learner={owner_id}"),
    )
    .await;
    assert!(records.contains("first access: code bound"), "{records}");

    // The CSV export: a header and one line per access record.
    let csv = admin
        .client
        .get(format!(
            "{}/admin/t/{}/s/{}/records.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("csv");
    assert_eq!(csv.status(), 200);
    let body = csv.text().await.expect("body");
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(
        lines[0],
        "\u{feff}granted_at,email,code_hint,resource,bound_now"
    );
    assert_eq!(lines.len(), 2, "{body}");
    assert!(lines[1].ends_with(",Lesson 1,true"), "{}", lines[1]);
    // Learners cannot export.
    let response = owner
        .get(format!(
            "{}/admin/t/{}/s/{}/records.csv",
            app.address, admin.tenant, course.share
        ))
        .send()
        .await
        .expect("csv as learner");
    assert_eq!(response.status(), 403);
}

#[sqlx::test(migrations = "../migrations")]
async fn resources_are_renamed_reordered_previewed_and_removed_without_losing_records(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let second = crate::support::course::upload(
        &app,
        &admin,
        course.share,
        "Second",
        "text/html",
        b"<p>two</p>".to_vec(),
    )
    .await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let titles = |app: &TestApp| {
        let pool = app.pool.clone();
        let share = course.share;
        async move {
            sqlx::query_scalar::<_, String>(
                "SELECT title FROM resources WHERE share_id = $1 AND deleted_at IS NULL ORDER BY position, id",
            )
            .bind(share)
            .fetch_all(&pool)
            .await
            .expect("titles")
        }
    };
    let first = course.resource.to_string();
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/resources/rename",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("resource_id", &first),
            ("title", "Lesson one"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/resources/move",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("resource_id", &second.to_string()),
            ("direction", "up"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(titles(&app).await, vec!["Second", "Lesson one"]);
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/resources/rename",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("resource_id", &first),
            ("title", " "),
        ],
    )
    .await;
    assert_eq!(status, 422, "{body}");

    // Admins preview without a code; learners cannot use the preview.
    let preview = format!(
        "{}/admin/t/{tenant}/s/{share}/r/{second}/preview",
        app.address
    );
    let response = admin.client.get(&preview).send().await.expect("preview");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.expect("body"), "<p>two</p>");

    // A learner opens the first resource: removing it now needs `force`.
    let codes = issue(&app, &admin, course.share, 1).await;
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    assert_eq!(
        learner
            .get(&preview)
            .send()
            .await
            .expect("preview")
            .status(),
        403
    );
    let delete = |force: Option<&'static str>| {
        let mut fields = vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("resource_id", first.clone()),
        ];
        if let Some(force) = force {
            fields.push(("force", force.to_owned()));
        }
        fields
    };
    let refused = delete(None);
    let refused: Vec<(&str, &str)> = refused.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = call(&app, &admin, "/api/admin/resources/delete", &refused).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("remove anyway"), "{body}");
    assert_eq!(titles(&app).await.len(), 2, "nothing removed");
    let forced = delete(Some("on"));
    let forced: Vec<(&str, &str)> = forced.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _) = call(&app, &admin, "/api/admin/resources/delete", &forced).await;
    assert_eq!(status, 200);
    assert_eq!(titles(&app).await, vec!["Second"]);
    // Its access record is kept; the learner cannot open it any more.
    let records: i64 =
        sqlx::query_scalar("SELECT count(*) FROM access_records WHERE resource_id = $1")
            .bind(course.resource)
            .fetch_one(&app.pool)
            .await
            .expect("records");
    assert_eq!(records, 1);
    assert_eq!(open(&app, &learner, &course, None).await.status(), 404);
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action IN ('resource.renamed', 'resource.moved', 'resource.deleted')",
    )
    .fetch_one(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audited, 3);
}

#[sqlx::test(migrations = "../migrations")]
async fn the_server_keeps_answering_while_a_large_batch_is_issued(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let issuing = {
        let client = admin.client.clone();
        let url = format!("{}/api/v1/shares/{}/codes", app.address, course.share);
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({ "count": 30_000, "label": "big" }))
                .send()
                .await
                .expect("issue")
        })
    };
    // Other requests are answered while the batch is being written.
    let mut answered_meanwhile = 0;
    while !issuing.is_finished() {
        let response = app.get("/healthz").await;
        assert_eq!(response.status(), 200);
        let (status, _) = page(&app.address, &admin.client, &format!("/s/{}", course.slug)).await;
        assert_eq!(status, 200);
        if !issuing.is_finished() {
            answered_meanwhile += 1;
        }
    }
    let response = issuing.await.expect("join");
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["count"], 30_000);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(stored, 30_000);
    assert!(
        answered_meanwhile >= 1,
        "no other request was answered while issuing"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_lost_code_is_replaced_atomically_and_the_new_one_shown_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    let codes_page = format!("/admin/t/{}/s/{}/codes", admin.tenant, course.share);
    let response = form(
        &app.address,
        &admin.client,
        &codes_page,
        "/api/admin/codes/replace",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("code_id", &codes[0].0.to_string()),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let one_time = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let (_, html) = page(&app.address, &admin.client, &one_time).await;
    let shown = codes_in(&html);
    assert_eq!(shown.len(), 1, "{html}");
    let (_, again) = page(&app.address, &admin.client, &one_time).await;
    assert!(codes_in(&again).is_empty());
    // The old code is revoked, the new one works, in the same batch.
    let (_, learner) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        409
    );
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &shown[0])
            .await
            .status(),
        200
    );
    let batches: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT batch_id) FROM auth_codes WHERE share_id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("batches");
    assert_eq!(batches, 1);
    // A revoked (or bound) code cannot be replaced: nothing changes.
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/codes/replace",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("code_id", &codes[0].0.to_string()),
        ],
    )
    .await;
    assert_eq!(status, 409);
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("codes");
    assert_eq!(total, 3);
}

#[sqlx::test(migrations = "../migrations")]
async fn limits_never_go_below_use_and_links_stay_once_codes_exist(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "quota": 10 })).await;
    let codes = issue(&app, &admin, course.share, 2).await;
    for ((_, learner), (_, code)) in learners(&app, 2).await.iter().zip(&codes) {
        assert_eq!(
            enter_code(&app, learner, &course.slug, code).await.status(),
            200
        );
        assert_eq!(open(&app, learner, &course, None).await.status(), 200);
    }
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let update = |slug: &str, limit: &'static str, quota: &'static str| {
        vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("title", "Rust in Depth".to_owned()),
            ("slug", slug.to_owned()),
            ("description", String::new()),
            ("status", "active".to_owned()),
            ("valid_from", String::new()),
            ("valid_until", String::new()),
            ("per_learner_limit", limit.to_owned()),
            ("quota", quota.to_owned()),
        ]
    };
    for (fields, field) in [
        (update(&course.slug, "", "1"), "quota"),
        (update(&course.slug, "", ""), ""),
        (update("another-link", "", ""), "slug"),
    ] {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = call(&app, &admin, "/api/admin/share/update", &fields).await;
        if field.is_empty() {
            assert_eq!(status, 200, "{body}");
            continue;
        }
        assert_eq!(status, 422, "{body}");
        let error: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(error["Invalid"]["field"], field, "{body}");
    }
    // A quota equal to what is used is allowed (below is not, above).
    let ok: Vec<(&str, String)> = update(&course.slug, "1", "2");
    let ok: Vec<(&str, &str)> = ok.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = call(&app, &admin, "/api/admin/share/update", &ok).await;
    assert_eq!(status, 200, "{body}");
    let broken = engine::invariants::violations(&app.pool)
        .await
        .expect("checks");
    assert!(
        broken.is_empty(),
        "no invariant broken by the edits: {broken:?}"
    );
}

/// The progress a console page polls while a batch is written.
async fn progress_of(app: &TestApp, admin: &Admin, ticket: &str) -> serde_json::Value {
    let response = admin
        .client
        .get(format!(
            "{}/api/admin/codes/progress?tenant_id={}&ticket={ticket}",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("progress");
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
}

#[sqlx::test(migrations = "../migrations")]
async fn issuing_reports_progress_and_a_resubmitted_form_issues_nothing_new(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let ticket = uuid::Uuid::new_v4().to_string();
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let fields = [
        ("tenant_id", tenant.as_str()),
        ("share_id", share.as_str()),
        ("count", "40000"),
        ("label", "progress"),
        ("ticket", ticket.as_str()),
    ];
    assert_eq!(progress_of(&app, &admin, &ticket).await, json!(null));
    let issuing = {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/codes/issue", app.address);
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        tokio::spawn(async move { client.post(url).form(&fields).send().await.expect("issue") })
    };
    // Partial reports while the batch is written, then all of it.
    let mut seen = Vec::new();
    while !issuing.is_finished() {
        let now = progress_of(&app, &admin, &ticket).await;
        if let Some(done) = now[0].as_u64() {
            assert_eq!(now[1], 40_000, "{now}");
            assert!(
                seen.last().is_none_or(|last| *last <= done),
                "{seen:?} then {done}"
            );
            seen.push(done);
        }
    }
    let response = issuing.await.expect("join");
    assert_eq!(
        response.status(),
        200,
        "{}",
        response.text().await.unwrap_or_default()
    );
    assert_eq!(
        progress_of(&app, &admin, &ticket).await,
        json!([40_000, 40_000])
    );
    assert!(
        seen.iter().any(|done| *done > 0 && *done < 40_000),
        "no partial progress was seen: {seen:?}"
    );
    // Nobody else reads it: not another admin of the same tenant (the
    // ticket is the issuing admin's), nor an admin of another tenant.
    let colleague = {
        let email = format!("colleague-{}@example.com", uuid::Uuid::new_v4());
        let id = app
            .create_account(&email, crate::support::course::PASSWORD)
            .await;
        // A second owner of the same tenant (as an accepted invitation
        // makes one).
        sqlx::query(
            "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner')",
        )
        .bind(admin.tenant)
        .bind(id.0)
        .execute(&app.pool)
        .await
        .expect("second owner");
        let client = crate::support::app::new_client();
        app.login_as(&client, &email, crate::support::course::PASSWORD)
            .await;
        Admin {
            client,
            tenant: admin.tenant,
        }
    };
    assert_eq!(
        progress_of(&app, &colleague, &ticket).await,
        json!(null),
        "another admin's ticket reads as nothing"
    );
    let other = crate::support::course::admin(&app).await;
    let response = other
        .client
        .get(format!(
            "{}/api/admin/codes/progress?tenant_id={}&ticket={ticket}",
            app.address, admin.tenant
        ))
        .send()
        .await
        .expect("progress");
    assert_eq!(response.status(), 403);

    // The same form again (a double click, a retry): the first batch.
    let before = snapshot(&app.pool).await;
    let response = form(
        &app.address,
        &admin.client,
        &format!("/admin/t/{tenant}/s/{share}"),
        "/api/admin/codes/issue",
        &fields,
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let first: uuid::Uuid = sqlx::query_scalar(
        "SELECT id FROM code_batches WHERE share_id = $1 AND label = 'progress'",
    )
    .bind(course.share)
    .fetch_one(&app.pool)
    .await
    .expect("one batch");
    assert!(
        response.headers()["location"]
            .to_str()
            .expect("location")
            .ends_with(&format!("/batches/{first}")),
        "{:?}",
        response.headers()["location"]
    );
    assert_eq!(snapshot(&app.pool).await, before, "nothing new was issued");
}

#[sqlx::test(migrations = "../migrations")]
async fn pages_and_form_errors_follow_the_language_choice(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "语言" })).await;
    let share_page = format!("/s/{}", course.slug);
    let browser = crate::support::app::new_client();
    let get = |lang: Option<&'static str>, cookie: Option<&'static str>| {
        let mut request = browser
            .get(format!("{}{share_page}", app.address))
            .header("accept", "text/html");
        if let Some(lang) = lang {
            request = request.header("accept-language", lang);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        async move {
            request
                .send()
                .await
                .expect("page")
                .text()
                .await
                .expect("body")
        }
    };
    let zh = get(Some("zh-CN,zh;q=0.9,en;q=0.5"), None).await;
    assert!(zh.contains("<html lang=\"zh-CN\""), "{zh}");
    assert!(zh.contains("登录"), "{zh}");
    let en = get(Some("en-GB"), None).await;
    assert!(en.contains("<html lang=\"en\""), "{en}");
    assert!(en.contains("Sign in") && !en.contains("登录"), "{en}");
    // Traditional Chinese for Taiwan and Hong Kong.
    for tag in ["zh-TW", "zh-HK,zh;q=0.8"] {
        let tw = get(Some(tag), None).await;
        assert!(tw.contains("<html lang=\"zh-TW\""), "{tag}: {tw}");
        assert!(tw.contains("登入") && !tw.contains("登录"), "{tag}: {tw}");
    }
    // The switcher's cookie wins over the header.
    let chosen = get(Some("zh-CN"), Some("lang=en")).await;
    assert!(chosen.contains("<html lang=\"en\""), "{chosen}");
    let chosen = get(Some("en"), Some("lang=zh-TW")).await;
    assert!(chosen.contains("<html lang=\"zh-TW\""), "{chosen}");

    // The switcher sets the cookie and returns to the page.
    let response = browser
        .get(format!("{}/lang/zh-CN?back={share_page}", app.address))
        .send()
        .await
        .expect("switch");
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], share_page.as_str());
    let cookie = response.headers()["set-cookie"].to_str().expect("cookie");
    assert!(cookie.starts_with("lang=zh-CN;"), "{cookie}");

    // A server function's error in the page's language, with its field.
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let response = admin
        .client
        .post(format!("{}/api/admin/codes/issue", app.address))
        .header("accept-language", "zh-CN")
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("share_id", share.as_str()),
            ("count", "0"),
            ("label", ""),
        ])
        .send()
        .await
        .expect("issue");
    assert_eq!(response.status(), 422);
    let error: serde_json::Value = response.json().await.expect("json");
    assert_eq!(error["Invalid"]["field"], "count");
    assert_eq!(error["Invalid"]["message"], "兑换码数量为 1 到 100,000");
    // The JSON API stays English for machines.
    let response = admin
        .client
        .post(format!("{}/api/v1/shares/{share}/codes", app.address))
        .header("accept-language", "zh-CN")
        .json(&json!({ "count": 0 }))
        .send()
        .await
        .expect("issue");
    assert_eq!(response.status(), 422);
    let error: serde_json::Value = response.json().await.expect("json");
    assert_eq!(error["detail"], "a batch has 1 to 100,000 codes");
}

/// "Revoke unused" on a batch revokes exactly its unused codes: bound
/// codes of the batch and codes of other batches are untouched.
#[sqlx::test(migrations = "../migrations")]
async fn revoking_a_batchs_unused_codes_leaves_its_bound_ones_and_other_batches(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 5).await;
    let other = issue(&app, &admin, course.share, 2).await;
    let people = learners(&app, 2).await;
    for ((_, client), (_, code)) in people.iter().zip(&codes) {
        assert_eq!(
            enter_code(&app, client, &course.slug, code).await.status(),
            200
        );
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    let batch: uuid::Uuid = sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(codes[0].0)
        .fetch_one(&app.pool)
        .await
        .expect("batch");
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/batches/revoke-unused",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("batch_id", &batch.to_string()),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert_eq!(
        (status, body.trim()),
        (200, "3"),
        "three unused codes revoked"
    );

    let state = |id: uuid::Uuid| {
        let pool = app.pool.clone();
        async move {
            let (revoked, bound): (bool, Option<uuid::Uuid>) = sqlx::query_as(
                "SELECT revoked_at IS NOT NULL, bound_principal FROM auth_codes WHERE id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("code");
            (revoked, bound)
        }
    };
    for (i, (id, _)) in codes.iter().enumerate() {
        let expected = match people.get(i) {
            Some((learner, _)) => (false, Some(*learner)),
            None => (true, None),
        };
        assert_eq!(state(*id).await, expected, "code {i} of the batch");
    }
    for (id, _) in &other {
        assert_eq!(state(*id).await, (false, None), "another batch's code");
    }
    // The bound learners keep their access; a revoked code is refused.
    for (_, client) in &people {
        assert_eq!(open(&app, client, &course, None).await.status(), 200);
    }
    let (_, late) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &late, &course.slug, &codes[4].1)
            .await
            .status(),
        409,
        "a revoked code cannot be entered"
    );
    assert_eq!(
        enter_code(&app, &late, &course.slug, &other[0].1)
            .await
            .status(),
        200,
        "another batch's code still works"
    );
}

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

/// A taken link name is the same answer through both doors: 422 with the
/// slug field, from the JSON API (`slug_taken`) and from the console's
/// server function, and nothing is created either way.
#[sqlx::test(migrations = "../migrations")]
async fn a_taken_link_name_is_one_field_error_through_the_api_and_the_console(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let existing = course(&app, &admin, json!({})).await;
    let response = crate::support::course::post_json(
        &app,
        &admin.client,
        &format!("/api/v1/tenants/{}/shares", admin.tenant),
        json!({ "title": "Another", "slug": existing.slug }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["code"], "slug_taken", "{body}");
    assert_eq!(body["field"], "slug", "{body}");
    let tenant = admin.tenant.to_string();
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/share/create",
        &[
            ("tenant_id", &tenant),
            ("title", "Another"),
            ("slug", &existing.slug),
        ],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(error["Invalid"]["field"], "slug", "{body}");
    let shares: i64 = sqlx::query_scalar("SELECT count(*) FROM shares")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(shares, 1, "nothing created");
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

/// The learners page ends exactly with the last learner, likewise.
#[sqlx::test(migrations = "../migrations")]
async fn learner_pages_end_exactly_with_the_last_learner(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 101).await;
    // Bind `n` of them, one account each (set up in SQL: the page is what
    // is tested).
    let bind = |n: i64| {
        sqlx::query(
            "WITH people AS (
                 INSERT INTO accounts (id, email, display_name, password_hash)
                 SELECT gen_random_uuid(), gen_random_uuid() || '@example.com', 'L', 'x'
                 FROM generate_series(1, $2) RETURNING id),
             numbered AS (SELECT id, row_number() OVER () AS n FROM people),
             free AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM auth_codes
                      WHERE share_id = $1 AND bound_principal IS NULL)
             UPDATE auth_codes c SET bound_principal = numbered.id, first_used_at = now()
             FROM numbered JOIN free ON free.n = numbered.n WHERE c.id = free.id",
        )
        .bind(course.share)
        .bind(n)
    };
    bind(100).execute(&app.pool).await.expect("bind");
    let page = |after: Option<String>| {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/learners", app.address);
        let mut query = vec![
            ("tenant_id", admin.tenant.to_string()),
            ("share_id", course.share.to_string()),
        ];
        if let Some(after) = after {
            query.push(("after", after));
        }
        async move {
            let response = client
                .get(url)
                .query(&query)
                .send()
                .await
                .expect("learners");
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.expect("json")
        }
    };
    let only = page(None).await;
    assert_eq!(only["learners"].as_array().map(Vec::len), Some(100));
    assert_eq!(
        only["next_after"],
        serde_json::Value::Null,
        "no empty next page"
    );
    bind(1).execute(&app.pool).await.expect("bind");
    let first = page(None).await;
    let next = first["next_after"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = page(Some(next)).await;
    assert_eq!(second["learners"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["next_after"], serde_json::Value::Null);
}

/// Destructive console actions ask first, as unbinding does: revoking a
/// bound code, revoking a batch's unused codes, revoking a token and
/// disabling a webhook each need the "I understand" box (`confirm=yes`);
/// without it they answer a field error and change nothing. Revoking an
/// unused code (a lost one nobody holds) stays one click.
#[sqlx::test(migrations = "../migrations")]
async fn destructive_console_actions_need_their_confirmation(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 3).await;
    let (_, learner) = crate::support::course::learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &learner, &course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &learner, &course, None).await.status(), 200);
    let tenant = admin.tenant.to_string();
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/tokens/create",
        &[("tenant_id", &tenant), ("name", "shop"), ("read", "on")],
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &app,
        &admin,
        "/api/admin/webhooks/create",
        &[
            ("tenant_id", &tenant),
            ("url", "https://hooks.example.com/in"),
            ("code_bound", "on"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let ids = |table: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, uuid::Uuid>(&format!("SELECT id FROM {table} LIMIT 1"))
                .fetch_one(&pool)
                .await
                .expect("id")
                .to_string()
        }
    };
    let (token, hook) = (ids("api_tokens").await, ids("webhook_endpoints").await);
    let batch: uuid::Uuid = sqlx::query_scalar("SELECT batch_id FROM auth_codes WHERE id = $1")
        .bind(codes[0].0)
        .fetch_one(&app.pool)
        .await
        .expect("batch");
    let (bound, batch) = (codes[0].0.to_string(), batch.to_string());
    let state = || async {
        sqlx::query_scalar::<_, String>(
            "SELECT concat_ws('|',
                (SELECT string_agg(id::text || coalesce(revoked_at::text, '-'), ',' ORDER BY id) FROM auth_codes),
                (SELECT string_agg(coalesce(revoked_at::text, '-'), ',') FROM api_tokens),
                (SELECT string_agg(coalesce(disabled_at::text, '-'), ',') FROM webhook_endpoints),
                (SELECT count(*)::text FROM audit_log))",
        )
        .fetch_one(&app.pool)
        .await
        .expect("state")
    };
    let actions: [(&str, Vec<(&str, &str)>); 4] = [
        ("/api/admin/codes/revoke", vec![("code_id", &bound)]),
        (
            "/api/admin/batches/revoke-unused",
            vec![("batch_id", &batch)],
        ),
        ("/api/admin/tokens/revoke", vec![("token_id", &token)]),
        ("/api/admin/webhooks/disable", vec![("endpoint_id", &hook)]),
    ];
    let before = state().await;
    for (path, fields) in &actions {
        for confirm in [None, Some("no")] {
            let mut all = vec![("tenant_id", tenant.as_str())];
            all.extend(fields.iter().copied());
            all.extend(confirm.map(|c| ("confirm", c)));
            let (status, body) = call(&app, &admin, path, &all).await;
            assert_eq!(status, 422, "{path} {confirm:?}: {body}");
            let error: serde_json::Value = serde_json::from_str(&body).expect("json");
            assert_eq!(error["Invalid"]["field"], "confirm", "{path}: {body}");
        }
    }
    assert_eq!(state().await, before, "nothing changed");

    // An unused code goes in one click.
    let (status, body) = call(
        &app,
        &admin,
        "/api/admin/codes/revoke",
        &[("tenant_id", &tenant), ("code_id", &codes[1].0.to_string())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Confirmed, each goes through.
    for (path, fields) in &actions {
        let mut all = vec![("tenant_id", tenant.as_str()), ("confirm", "yes")];
        all.extend(fields.iter().copied());
        let (status, body) = call(&app, &admin, path, &all).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (revoked_codes, revoked_tokens, disabled_hooks): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM auth_codes WHERE revoked_at IS NOT NULL),
                (SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT NULL),
                (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL)",
    )
    .fetch_one(&app.pool)
    .await
    .expect("after");
    assert_eq!((revoked_codes, revoked_tokens, disabled_hooks), (3, 1, 1));
}

/// An admin saves the share's form they opened while it was active, after
/// another paused the course: the save keeps the pause (the form's status
/// was not touched), and a status the admin did choose is applied. The
/// failing test came first: the save made the paused course active again.
#[sqlx::test(migrations = "../migrations")]
async fn saving_the_share_form_keeps_a_pause_made_since_it_was_opened(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "title": "Rust 101" })).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let form = |status: &'static str, seen: &'static str, title: &'static str| {
        vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("title", title.to_owned()),
            ("slug", course.slug.clone()),
            ("description", String::new()),
            ("status", status.to_owned()),
            ("status_seen", seen.to_owned()),
            ("valid_from", String::new()),
            ("valid_until", String::new()),
            ("per_learner_limit", String::new()),
            ("quota", String::new()),
        ]
    };
    let status_of = || async {
        sqlx::query_scalar::<_, String>("SELECT status::text FROM shares WHERE id = $1")
            .bind(course.share)
            .fetch_one(&app.pool)
            .await
            .expect("status")
    };
    let save = |fields: Vec<(&'static str, String)>| {
        let client = admin.client.clone();
        let url = format!("{}/api/admin/share/update", app.address);
        async move {
            let response = client.post(url).form(&fields).send().await.expect("save");
            assert_eq!(
                response.status(),
                200,
                "{}",
                response.text().await.unwrap_or_default()
            );
        }
    };
    // Another admin pauses it meanwhile (the API's status call).
    let paused = admin
        .client
        .post(format!(
            "{}/api/v1/shares/{}/status",
            app.address, course.share
        ))
        .json(&json!({ "status": "paused" }))
        .send()
        .await
        .expect("pause");
    assert_eq!(paused.status(), 200);
    // The form opened while active, its status untouched: the pause stays,
    // the other change is saved.
    save(form("active", "active", "Rust 101, revised")).await;
    assert_eq!(status_of().await, "paused");
    let title: String = sqlx::query_scalar("SELECT title FROM shares WHERE id = $1")
        .bind(course.share)
        .fetch_one(&app.pool)
        .await
        .expect("title");
    assert_eq!(title, "Rust 101, revised");
    // Chosen in the form: applied, whatever it was.
    save(form("active", "paused", "Rust 101, revised")).await;
    assert_eq!(status_of().await, "active");
    save(form("archived", "active", "Rust 101, revised")).await;
    assert_eq!(status_of().await, "archived");
}
