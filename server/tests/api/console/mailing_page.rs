//! Codes sent by mail from the console: the issue form's "To send by mail"
//! leads to the batch's mail page; a pasted list (a CSV with a heading, a
//! repeat, a `Name <address>`) is checked with nothing sent, a bad line is
//! refused beside the list with nothing sent, the list is sent (the mails
//! arrive at a real SMTP server), sending it again mails no one; the page
//! lists each recipient and their state, which turns to redeemed when one
//! redeems; resend and revoke-and-resend act on one recipient.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::api_v1::mailings::code_in;
use crate::support::console::{form, page};
use crate::support::course::{Admin, admin, course, enter_code, open};
use crate::support::mail::{MAIL_WAIT, spawn_app_with_mail};

/// A server function called as the hydrated page calls it (its answer as
/// JSON): the status and the answer.
async fn call(
    app_address: &str,
    admin: &Admin,
    path: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, Value) {
    let response = admin
        .client
        .post(format!("{app_address}{path}"))
        .form(fields)
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Another course of the admin's tenant: its share id.
async fn course_with(app: &crate::support::app::TestApp, admin: &Admin) -> Uuid {
    course(app, admin, json!({ "quota": null })).await.share
}

async fn mailings(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM code_mailings")
        .fetch_one(pool)
        .await
        .expect("count")
}

#[sqlx::test(migrations = "../migrations")]
async fn a_creator_sends_codes_by_mail_from_the_console_and_follows_each_recipient(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "quota": null })).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let share_page = format!("/admin/t/{tenant}/s/{share}");

    // Issued "to send by mail": the answer leads to the batch's mail page,
    // never to codes shown once.
    let response = form(
        &app.address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("count", "3"),
            ("label", "Buyers"),
            ("mailable", "yes"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let mail_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let batch: Uuid = mail_page
        .strip_suffix("/mail")
        .and_then(|p| p.rsplit('/').next())
        .expect("…/batches/{batch}/mail")
        .parse()
        .expect("batch id");
    let mailable: bool = sqlx::query_scalar("SELECT mailable FROM code_batches WHERE id = $1")
        .bind(batch)
        .fetch_one(&app.pool)
        .await
        .expect("the batch");
    assert!(mailable);
    let (status, html) = page(&app.address, &admin.client, &mail_page).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Send codes by mail"), "{html}");
    assert!(html.contains("3 codes issued, 3 left to mail"), "{html}");
    // The share page links the batch to its mail page.
    let (_, html) = page(&app.address, &admin.client, &share_page).await;
    assert!(html.contains(&format!("/batches/{batch}/mail")), "{html}");

    let batch = batch.to_string();
    let fields = |addresses: &'static str, intent: &'static str| {
        vec![
            ("tenant_id", tenant.clone()),
            ("share_id", share.clone()),
            ("batch_id", batch.clone()),
            ("addresses", addresses.to_owned()),
            ("addressed", "yes".to_owned()),
            ("lang", String::new()),
            ("intent", intent.to_owned()),
        ]
    };
    let send = |fields: Vec<(&'static str, String)>| {
        let admin = &admin;
        let address = app.address.clone();
        async move {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            call(&address, admin, "/api/admin/mailings/send", &fields).await
        }
    };
    let list = "email,name\nann@example.com,Ann\nBob <bob@example.com>\nANN@example.com,Ann again";

    // Checked: what would be sent, nothing is.
    let (status, report) = send(fields(list, "check")).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(
        (
            report["checked_only"].clone(),
            report["to_send"].clone(),
            report["duplicates"].clone(),
            report["sent"].clone()
        ),
        (json!(true), json!(2), json!(1), json!(0)),
        "{report}"
    );
    assert_eq!(mailings(&app.pool).await, 0, "a check sends nothing");

    // A line that is not an address: refused beside the list, nothing sent.
    let (status, error) = send(fields("ann@example.com\nnot-an-address", "send")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["Invalid"]["field"], "addresses", "{error}");
    assert!(
        error["Invalid"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 2 (\"not-an-address\")")),
        "names line 2: {error}"
    );
    // Two addresses on one line: not guessed between, refused by its line.
    let (status, error) = send(fields(
        "ann@example.com\nbob@example.com, cy@example.com",
        "send",
    ))
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert!(
        error["Invalid"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 2")),
        "{error}"
    );
    // More new addresses than codes left: refused, nothing sent.
    let (status, error) = send(fields(
        "a@example.com\nb@example.com\nc@example.com\nd@example.com",
        "send",
    ))
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["Invalid"]["field"], "addresses", "{error}");
    // An intent that is neither: refused.
    let (status, _) = send(fields(list, "maybe")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(mailings(&app.pool).await, 0, "nothing was sent");

    // Sent: each address gets its own code, addressed to it.
    let (status, report) = send(fields(list, "send")).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(
        (report["checked_only"].clone(), report["sent"].clone()),
        (json!(false), json!(2))
    );
    let ann_mail = sink.wait_for("ann@example.com", "", MAIL_WAIT).await;
    let bob_mail = sink.wait_for("bob@example.com", "", MAIL_WAIT).await;
    let ann_code = code_in(&ann_mail.text);
    assert_ne!(ann_code, code_in(&bob_mail.text));
    // The same list again mails no one.
    let (status, again) = send(fields(list, "send")).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (again["sent"].clone(), again["already_sent"].clone()),
        (json!(0), json!(2))
    );
    assert_eq!(mailings(&app.pool).await, 2);

    // Through another share's path, the batch is not found (and nothing
    // is sent).
    let other = course_with(&app, &admin).await;
    let other_share = other.to_string();
    let (status, _) = call(
        &app.address,
        &admin,
        "/api/admin/mailings/send",
        &[
            ("tenant_id", &tenant),
            ("share_id", &other_share),
            ("batch_id", &batch),
            ("addresses", "late@example.com"),
            ("lang", ""),
            ("intent", "send"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(mailings(&app.pool).await, 2);

    // The page lists both, sent; once Ann redeems hers, it says so.
    let read = || async {
        let response = admin
            .client
            .get(format!("{}/api/admin/mailings", app.address))
            .query(&[
                ("tenant_id", &tenant),
                ("share_id", &share),
                ("batch_id", &batch),
            ])
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<Value>().await.expect("json")
    };
    let view = read().await;
    let deadline = tokio::time::Instant::now() + MAIL_WAIT;
    let states = |view: &Value| -> Vec<(String, String)> {
        view["recipients"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        (
                            r["email"].as_str().unwrap_or("").to_owned(),
                            r["state"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut view = view;
    while states(&view).iter().any(|(_, s)| s == "queued") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still queued: {view}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        view = read().await;
    }
    assert_eq!(
        states(&view),
        vec![
            ("ann@example.com".to_owned(), "sent".to_owned()),
            ("bob@example.com".to_owned(), "sent".to_owned())
        ]
    );
    assert_eq!(view["free"], 1, "{view}");
    app.create_account("ann@example.com", "ann's long password")
        .await;
    let ann = crate::support::app::new_client();
    app.login_as(&ann, "ann@example.com", "ann's long password")
        .await;
    assert!(
        enter_code(&app, &ann, &course.slug, &ann_code)
            .await
            .status()
            .is_success()
    );
    assert_eq!(open(&app, &ann, &course, None).await.status(), 200);
    let (status, html) = page(&app.address, &admin.client, &mail_page).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains(r#"data-recipient="ann@example.com" data-state="redeemed""#),
        "{html}"
    );
    assert!(
        html.contains(r#"data-recipient="bob@example.com" data-state="sent""#),
        "{html}"
    );

    // Bob's mail went astray: revoking needs the tick; then he gets another.
    let bob_code_id = view["recipients"][1]["code_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, error) = call(
        &app.address,
        &admin,
        "/api/admin/mailings/revoke-and-resend",
        &[("tenant_id", &tenant), ("code_id", &bob_code_id)],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["Invalid"]["field"], "confirm");
    let (status, done) = call(
        &app.address,
        &admin,
        "/api/admin/mailings/revoke-and-resend",
        &[
            ("tenant_id", &tenant),
            ("code_id", &bob_code_id),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done, json!({ "email": "bob@example.com", "queued": true }));
    let deadline = tokio::time::Instant::now() + MAIL_WAIT;
    while sink.received_by("bob@example.com").len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "bob's second mail");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let second = code_in(&sink.received_by("bob@example.com")[1].text);
    assert_ne!(second, code_in(&bob_mail.text), "another code");
    // Ann's code is hers: a resend is refused with the reason.
    let ann_code_id = view["recipients"][0]["code_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, error) = call(
        &app.address,
        &admin,
        "/api/admin/mailings/resend",
        &[("tenant_id", &tenant), ("code_id", &ann_code_id)],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(error["Refused"]["reason"], "code_redeemed", "{error}");
}

/// Without JavaScript a form's answer is a redirect back to the page:
/// what a check found, what a send did and what a resend did are said on
/// the page it comes back to, once.
#[sqlx::test(migrations = "../migrations")]
async fn without_javascript_each_answer_is_said_on_the_page_it_returns_to(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "quota": null })).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let share_page = format!("/admin/t/{tenant}/s/{share}");
    let response = form(
        &app.address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("count", "3"),
            ("label", "Buyers"),
            ("mailable", "yes"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let mail_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let batch = mail_page
        .strip_suffix("/mail")
        .and_then(|p| p.rsplit('/').next())
        .expect("…/batches/{batch}/mail")
        .to_owned();
    let list = "ann@example.com\nbob@example.com\nann@example.com";
    let post = |intent: &'static str| {
        let (admin, tenant, share, batch, mail_page) =
            (&admin, &tenant, &share, &batch, &mail_page);
        let address = app.address.clone();
        async move {
            let response = form(
                &address,
                &admin.client,
                mail_page,
                "/api/admin/mailings/send",
                &[
                    ("tenant_id", tenant),
                    ("share_id", share),
                    ("batch_id", batch),
                    ("addresses", list),
                    ("addressed", "yes"),
                    ("lang", ""),
                    ("intent", intent),
                ],
            )
            .await;
            assert_eq!(response.status(), StatusCode::FOUND, "{intent}");
            let back = response.headers()["location"]
                .to_str()
                .expect("location")
                .to_owned();
            assert!(back.starts_with(&format!("{address}{mail_page}")), "{back}");
        }
    };

    // The hydrated page's call (JSON) shows its report itself: nothing is
    // left for the next page.
    let fields = [
        ("tenant_id", tenant.as_str()),
        ("share_id", share.as_str()),
        ("batch_id", batch.as_str()),
        ("addresses", list),
        ("addressed", "yes"),
        ("lang", ""),
        ("intent", "check"),
    ];
    let (status, _) = call(&app.address, &admin, "/api/admin/mailings/send", &fields).await;
    assert_eq!(status, StatusCode::OK);
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    assert!(
        !html.contains("Nothing was sent."),
        "no flash after a JSON call"
    );

    post("check").await;
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    for said in [
        "Addresses that would each get a code: 2 (codes left: 3). Nothing was sent.",
        "Repeated addresses, counted once: 1.",
    ] {
        assert!(html.contains(said), "{said} missing");
    }
    assert_eq!(mailings(&app.pool).await, 0, "a check sends nothing");
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    assert!(!html.contains("Nothing was sent."), "said once");

    post("send").await;
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    assert!(html.contains("Codes sent: 2. The mails are on their way."));
    assert_eq!(mailings(&app.pool).await, 2);
    sink.wait_for("ann@example.com", "", MAIL_WAIT).await;

    // Revoke Ann's code and mail her another.
    let ann: Uuid =
        sqlx::query_scalar("SELECT code_id FROM code_mailings WHERE email = 'ann@example.com'")
            .fetch_one(&app.pool)
            .await
            .expect("Ann's code");
    let response = form(
        &app.address,
        &admin.client,
        &mail_page,
        "/api/admin/mailings/revoke-and-resend",
        &[
            ("tenant_id", &tenant),
            ("code_id", &ann.to_string()),
            ("confirm", "yes"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    assert!(
        html.contains("The code mailed to ann@example.com was revoked, and another one mailed.")
    );
}

/// The list as a file: a CSV exported from a spreadsheet (a byte-order
/// mark, a heading, a name column, a repeat) is checked, then sent, and
/// each address's mail arrives with its own code; a file that is not
/// text, no file, and a list larger than the codes left are refused on the
/// page with nothing sent; another tenant's admin reaches nothing.
#[sqlx::test(migrations = "../migrations")]
async fn a_list_sent_as_a_file_mails_each_address_its_own_code(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({ "quota": null })).await;
    let (tenant, share) = (admin.tenant.to_string(), course.share.to_string());
    let share_page = format!("/admin/t/{tenant}/s/{share}");
    let response = form(
        &app.address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("count", "3"),
            ("label", "Buyers"),
            ("mailable", "yes"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let mail_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let post = |client: reqwest::Client, file: Option<Vec<u8>>, intent: &'static str| {
        let address = app.address.clone();
        let mail_page = mail_page.clone();
        async move {
            let mut fields = reqwest::multipart::Form::new()
                .text("addressed", "yes")
                .text("lang", "")
                .text("intent", intent);
            if let Some(file) = file {
                fields = fields.part(
                    "file",
                    reqwest::multipart::Part::bytes(file)
                        .file_name("buyers.csv")
                        .mime_str("text/csv")
                        .expect("mime"),
                );
            }
            client
                .post(format!("{address}{mail_page}/file"))
                .header("accept", "text/html")
                .header("referer", format!("{address}{mail_page}"))
                .header("origin", &address)
                .multipart(fields)
                .send()
                .await
                .expect("request")
        }
    };
    let back = |response: &reqwest::Response| {
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        response.headers()["location"]
            .to_str()
            .expect("location")
            .to_owned()
    };
    let csv =
        "\u{feff}name,email\nAnn,ann@example.com\nBob,bob@example.com\nAnn again,ANN@example.com\n";

    let response = post(admin.client.clone(), Some(csv.into()), "check").await;
    assert_eq!(back(&response), mail_page);
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    for said in [
        "Addresses that would each get a code: 2 (codes left: 3). Nothing was sent.",
        "Repeated addresses, counted once: 1.",
    ] {
        assert!(html.contains(said), "{said} missing");
    }
    assert_eq!(mailings(&app.pool).await, 0, "a check sends nothing");

    let response = post(admin.client.clone(), Some(csv.into()), "send").await;
    assert_eq!(back(&response), mail_page);
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    assert!(html.contains("Codes sent: 2. The mails are on their way."));
    let ann = sink.wait_for("ann@example.com", "", MAIL_WAIT).await;
    let bob = sink.wait_for("bob@example.com", "", MAIL_WAIT).await;
    assert_ne!(code_in(&ann.text), code_in(&bob.text));
    assert_eq!(mailings(&app.pool).await, 2);

    // Refusals: said on the page, nothing sent.
    let refusals: [(Option<Vec<u8>>, &str, &str); 4] = [
        (
            Some(vec![0xff, 0xfe, 0x41, 0x00, 0xd8]),
            "send",
            "This file is not text",
        ),
        (None, "send", "Choose a file to send."),
        (Some(Vec::new()), "send", "Choose a file to send."),
        (
            Some(b"c@example.com\nd@example.com\ne@example.com".to_vec()),
            "send",
            "but the batch has 1 codes left to send",
        ),
    ];
    for (file, intent, said) in refusals {
        let response = post(admin.client.clone(), file, intent).await;
        let location = back(&response);
        assert!(location.starts_with(&mail_page), "{location}");
        let (_, html) = page(&app.address, &admin.client, &mail_page).await;
        assert!(html.contains(said), "{said} missing");
    }
    let response = post(admin.client.clone(), Some(csv.into()), "maybe").await;
    back(&response);
    let (_, html) = page(&app.address, &admin.client, &mail_page).await;
    assert!(html.contains("Check the list, or send it."));
    assert_eq!(mailings(&app.pool).await, 2, "no refusal sent anything");

    // Too large a file: nothing sent.
    let response = post(
        admin.client.clone(),
        Some(vec![b'\n'; 5 * 1024 * 1024]),
        "send",
    )
    .await;
    // Refused whole: back to the page with why, or 413 when the body is
    // cut before the form could be read.
    assert!(
        [303, 413].contains(&response.status().as_u16()),
        "{}",
        response.status()
    );
    // A batch posted under another share of the tenant: not found.
    let other = course_with(&app, &admin).await;
    let batch_path = mail_page
        .split("/batches/")
        .nth(1)
        .expect("…/batches/{batch}/mail");
    let response = admin
        .client
        .post(format!(
            "{}/admin/t/{tenant}/s/{other}/batches/{batch_path}/file",
            app.address
        ))
        .header("accept", "text/html")
        .header("origin", &app.address)
        .multipart(reqwest::multipart::Form::new().text("intent", "send").part(
            "file",
            reqwest::multipart::Part::bytes(b"z@example.com".to_vec()),
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(mailings(&app.pool).await, 2);

    // Another tenant's admin: refused, nothing sent.
    let stranger = admin_of_another_tenant(&app).await;
    let response = post(
        stranger.client.clone(),
        Some(b"x@example.com".to_vec()),
        "send",
    )
    .await;
    assert!(
        matches!(
            response.status(),
            StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
        ),
        "{}",
        response.status()
    );
    assert_eq!(mailings(&app.pool).await, 2);
}

async fn admin_of_another_tenant(app: &crate::support::app::TestApp) -> Admin {
    admin(app).await
}
