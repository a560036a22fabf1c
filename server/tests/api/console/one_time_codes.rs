//! A new batch's plain codes, handed over once: shown once on its page and
//! downloaded once as CSV (one download at a time, an aborted download
//! offered again in full, nothing left once it completed), and stored
//! nowhere: not in the database, not in the logs.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use super::codes_in;
use crate::support::app::{TestApp, spawn_app};
use crate::support::console::{form, issue_by_form, page};
use crate::support::course::{Admin, admin, course, enter_code, learners};
use crate::support::processes::LoggedServer;

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
