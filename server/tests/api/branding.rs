//! Tenant branding (issue 17), on real PostgreSQL, Redis and SMTP: an
//! owner sets the tenant's name, accent colour, support address and logo;
//! its learners see them on its course pages and in its mails, and no
//! other tenant's page or mail ever carries them. A bad colour, address,
//! file type or size is refused with a clear error and changes nothing;
//! only owners, signed in, change anything.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, spawn_app, spawn_app_with};
use crate::support::course::{
    Admin, admin, course, enter_code, error_of, issue, learners, open, put_json,
};
use crate::support::mail::{MAIL_WAIT, mail_settings};
use crate::support::tokens::{as_token, create_token};

/// A 1×1 PNG.
const PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

fn branding_path(tenant: Uuid) -> String {
    format!("/api/v1/tenants/{tenant}/branding")
}

async fn set_branding(app: &TestApp, owner: &Admin, body: Value) -> reqwest::Response {
    put_json(app, &owner.client, &branding_path(owner.tenant), body).await
}

async fn put_logo(app: &TestApp, owner: &Admin, bytes: Vec<u8>, mime: &str) -> reqwest::Response {
    owner
        .client
        .put(format!(
            "{}{}/logo",
            app.address,
            branding_path(owner.tenant)
        ))
        .header("content-type", mime)
        .body(bytes)
        .send()
        .await
        .expect("request")
}

async fn branding_of(app: &TestApp, owner: &Admin) -> Value {
    let response = app
        .get_as(&owner.client, &branding_path(owner.tenant))
        .await;
    assert_eq!(response.status(), 200);
    response.json().await.expect("json")
}

/// Everything a change could touch: the tenant's row, its logo and the
/// audit log.
async fn stored(
    app: &TestApp,
    tenant: Uuid,
) -> (String, Option<String>, Option<String>, Option<Uuid>, i64) {
    sqlx::query_as(
        "SELECT t.name, t.brand_accent, t.support_email, l.id,
                (SELECT count(*) FROM audit_log WHERE tenant_id = t.id)
         FROM tenants t LEFT JOIN tenant_logos l ON l.tenant_id = t.id WHERE t.id = $1",
    )
    .bind(tenant)
    .fetch_one(&app.pool)
    .await
    .expect("stored")
}

async fn page(app: &TestApp, client: &reqwest::Client, path: &str) -> String {
    let response = app.get_page_as(client, path).await;
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.expect("page")
}

/// Acme's branding, with a logo; returns the logo's URL.
async fn brand_acme(app: &TestApp, owner: &Admin) -> String {
    let response = set_branding(
        app,
        owner,
        json!({ "name": " Acme Academy ", "accent": "#2E7D32", "support_email": "Help@Acme.test" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["name"], "Acme Academy");
    assert_eq!(body["accent"], "#2e7d32", "stored lower case");
    assert_eq!(body["support_email"], "help@acme.test");
    assert_eq!(body["logo_url"], Value::Null);
    let response = put_logo(app, owner, PNG.to_vec(), "image/png").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    let logo = body["logo_url"].as_str().expect("a logo").to_owned();
    assert!(logo.starts_with("/brand/logo/"), "{logo}");
    assert!(
        !logo.contains(&owner.tenant.to_string()),
        "no tenant id on public pages"
    );
    logo
}

#[sqlx::test(migrations = "../migrations")]
async fn learners_see_their_course_provider_s_branding_and_never_another_s(pool: PgPool) {
    let app = spawn_app(pool).await;
    let acme = admin(&app).await;
    let other = admin(&app).await;
    let acme_course = course(&app, &acme, json!({ "title": "Rust 101" })).await;
    let other_course = course(&app, &other, json!({ "title": "Go 101" })).await;
    let logo = brand_acme(&app, &acme).await;

    // The logo: its bytes, as the type they are, cached for good.
    let response = app.get(&logo).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/png");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert!(
        response.headers()["cache-control"]
            .to_str()
            .expect("ascii")
            .contains("immutable")
    );
    assert_eq!(
        response.headers()["content-security-policy"],
        "default-src 'none'; sandbox",
        "nothing in it runs"
    );
    let etag = response.headers()["etag"].clone();
    assert_eq!(response.bytes().await.expect("bytes").as_ref(), PNG);
    // A browser that has it is told so, without the bytes again.
    let again = app
        .client
        .get(format!("{}{logo}", app.address))
        .header("if-none-match", etag)
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), 304);
    let logo_id = logo.rsplit('/').next().expect("id");
    for bad in [
        "/brand/logo/not-a-uuid".to_owned(),
        format!("/brand/logo/{}", Uuid::now_v7()),
    ] {
        assert_eq!(app.get(&bad).await.status(), 404, "{bad}");
    }

    // Acme's course page, signed out and as a learner holding a code.
    let codes = issue(&app, &acme, acme_course.share, 1).await;
    let (_, ann) = learners(&app, 1).await.remove(0);
    assert_eq!(
        enter_code(&app, &ann, &acme_course.slug, &codes[0].1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &ann, &acme_course, None).await.status(), 200);
    for client in [&app.client, &ann] {
        let html = page(&app, client, &format!("/s/{}", acme_course.slug)).await;
        for wanted in [
            "Acme Academy",
            logo.as_str(),
            "/brand/v1/accent/2e7d32.css",
            "mailto:help@acme.test",
        ] {
            assert!(html.contains(wanted), "{wanted} on Acme's page");
        }
    }
    let html = page(
        &app,
        &ann,
        &format!("/s/{}/r/{}", acme_course.slug, acme_course.resource),
    )
    .await;
    assert!(html.contains("Acme Academy") && html.contains("/brand/v1/accent/2e7d32.css"));
    assert!(html.contains(&logo) && html.contains("mailto:help@acme.test"));

    // The other tenant's page: its own name, nothing of Acme's.
    let html = page(&app, &app.client, &format!("/s/{}", other_course.slug)).await;
    assert!(html.contains("Course Co"), "the provider's own name");
    for foreign in ["Acme Academy", logo_id, "/brand/", "help@acme.test"] {
        assert!(
            !html.contains(foreign),
            "{foreign} on another tenant's page"
        );
    }
    // The JSON API says the same.
    let acme_json: Value = app
        .get(&format!("/api/v1/s/{}", acme_course.slug))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        acme_json["brand"],
        json!({ "name": "Acme Academy", "accent": "#2e7d32", "support_email": "help@acme.test", "logo_url": logo })
    );
    let other_json: Value = app
        .get(&format!("/api/v1/s/{}", other_course.slug))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        other_json["brand"],
        json!({ "name": "Course Co", "accent": null, "support_email": null, "logo_url": null })
    );

    // The accent's stylesheet: that colour, and the text that reads on it.
    let css = app.get("/brand/v1/accent/2e7d32.css").await;
    assert_eq!(css.status(), 200);
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    let css = css.text().await.expect("css");
    assert!(
        css.contains("--accent:#2e7d32;--accent-text:#ffffff;--accent-ink:#2e7d32"),
        "{css}"
    );
    // A pale accent is darkened where it is text on white.
    let css = app
        .get("/brand/v1/accent/ffd400.css")
        .await
        .text()
        .await
        .expect("css");
    assert!(
        css.contains("--accent:#ffd400;--accent-text:#111111;--accent-ink:#"),
        "{css}"
    );
    assert!(!css.contains("--accent-ink:#ffd400"), "{css}");
    for bad in [
        "zzzzzz.css",
        "2e7d32",
        "2e7d3.css",
        "2E7D32.css",
        "2e7d32%20.css",
        "2e7d32%3Bx.css",
    ] {
        assert_eq!(
            app.get(&format!("/brand/v1/accent/{bad}")).await.status(),
            404,
            "{bad}"
        );
    }

    // A new logo is a new URL; the old one is gone. Removing it leaves none.
    let response = put_logo(&app, &acme, PNG.to_vec(), "image/png").await;
    let newer: Value = response.json().await.expect("json");
    assert_ne!(newer["logo_url"].as_str(), Some(logo.as_str()));
    assert_eq!(app.get(&logo).await.status(), 404);
    let response = acme
        .client
        .delete(format!(
            "{}{}/logo",
            app.address,
            branding_path(acme.tenant)
        ))
        .send()
        .await
        .expect("delete");
    assert_eq!(response.status(), 200);
    assert_eq!(branding_of(&app, &acme).await["logo_url"], Value::Null);
    let html = page(&app, &app.client, &format!("/s/{}", acme_course.slug)).await;
    assert!(!html.contains("provider-logo"), "no logo shown");
    // Every change was audited.
    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'tenant.%' ORDER BY created_at, id",
    )
    .bind(acme.tenant)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(
        actions,
        [
            "tenant.branding_changed",
            "tenant.logo_changed",
            "tenant.logo_changed",
            "tenant.logo_removed"
        ]
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn bad_branding_is_refused_clearly_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let acme = admin(&app).await;
    brand_acme(&app, &acme).await;
    let before = stored(&app, acme.tenant).await;
    let good = json!({ "name": "Acme", "accent": "#123456", "support_email": "a@b.test" });
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    for (body, field) in [
        (with("accent", json!("blue")), "accent"),
        (with("accent", json!("#12345")), "accent"),
        (with("accent", json!("#123456;background:url(x)")), "accent"),
        (
            with("support_email", json!("not an address")),
            "support_email",
        ),
        (
            with("support_email", json!("help?cc=boss@acme.test")),
            "support_email",
        ),
        (with("name", json!("Acme\u{202E}ypp")), "name"),
        (with("name", json!("  ")), "name"),
        (with("name", json!("A\u{0}B")), "name"),
    ] {
        let response = set_branding(&app, &acme, body.clone()).await;
        assert_eq!(response.status(), 422, "{body}");
        let problem: Value = response.json().await.expect("json");
        assert_eq!(problem["field"], field, "{body}");
        assert!(
            !problem["detail"].as_str().unwrap_or_default().is_empty(),
            "a clear message"
        );
        assert_eq!(stored(&app, acme.tenant).await, before, "{body}");
    }
    // Not JSON, or a field the endpoint does not know.
    let response = acme
        .client
        .put(format!("{}{}", app.address, branding_path(acme.tenant)))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 400);
    let response = set_branding(&app, &acme, with("colour", json!("#123456"))).await;
    assert_eq!(response.status(), 400);
    assert_eq!(stored(&app, acme.tenant).await, before);

    // Files that are not a PNG, JPEG or WebP, whatever they claim; sizes
    // past 256 KiB.
    let svg = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>".to_vec();
    for (bytes, mime, status, code) in [
        (svg.clone(), "image/png", 422, "invalid_input"),
        (svg, "image/svg+xml", 422, "invalid_input"),
        (
            b"GIF89a\x01\x00\x01\x00".to_vec(),
            "image/gif",
            422,
            "invalid_input",
        ),
        (Vec::new(), "image/png", 422, "invalid_input"),
        (
            [PNG.as_slice(), &vec![0; 256 * 1024]].concat(),
            "image/png",
            413,
            "too_large",
        ),
        (
            [PNG.as_slice(), &vec![0; 3 * 1024 * 1024]].concat(),
            "image/png",
            413,
            "too_large",
        ),
    ] {
        let len = bytes.len();
        let response = put_logo(&app, &acme, bytes, mime).await;
        assert_eq!(
            error_of(response).await,
            (status, code.to_owned()),
            "{len} bytes as {mime}"
        );
        assert_eq!(stored(&app, acme.tenant).await, before);
    }
    // Exactly the limit is a logo.
    let mut largest = PNG.to_vec();
    largest.resize(256 * 1024, 0);
    assert_eq!(
        put_logo(&app, &acme, largest, "image/png").await.status(),
        200
    );
    let before = stored(&app, acme.tenant).await;

    // The console's form: a refused file goes back to the team page with
    // the reason, and changes nothing.
    for (bytes, reason) in [
        (b"<svg/>".to_vec(), "a logo is a PNG, JPEG or WebP image"),
        (vec![0x89; 600 * 1024], "a logo is at most 256 KiB"),
    ] {
        let response = logo_form(&app, &acme, bytes).await;
        assert_eq!(response.status(), 303);
        let back = response.headers()["location"]
            .to_str()
            .expect("location")
            .to_owned();
        assert_eq!(back, format!("/admin/t/{}/team", acme.tenant));
        let html = page(&app, &acme.client, &back).await;
        assert!(html.contains(reason), "{reason} shown");
        assert_eq!(stored(&app, acme.tenant).await, before);
    }
}

async fn logo_form(app: &TestApp, owner: &Admin, bytes: Vec<u8>) -> reqwest::Response {
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name("logo.png")
        .mime_str("image/png")
        .expect("mime");
    owner
        .client
        .post(format!("{}/admin/t/{}/logo", app.address, owner.tenant))
        .multipart(reqwest::multipart::Form::new().part("logo", part))
        .send()
        .await
        .expect("request")
}

#[sqlx::test(migrations = "../migrations")]
async fn only_owners_signed_in_change_the_branding(pool: PgPool) {
    let app = spawn_app(pool).await;
    let acme = admin(&app).await;
    let other = admin(&app).await;
    brand_acme(&app, &acme).await;
    let before = stored(&app, acme.tenant).await;
    let change = json!({ "name": "Hijacked", "accent": "#000000" });

    // The console's form uploads for its owner.
    let response = logo_form(&app, &acme, PNG.to_vec()).await;
    assert_eq!(response.status(), 303);
    let html = page(
        &app,
        &acme.client,
        &format!("/admin/t/{}/team", acme.tenant),
    )
    .await;
    assert!(html.contains("Logo saved."));
    let after_form = stored(&app, acme.tenant).await;
    assert_ne!(after_form.3, before.3, "a new logo");
    let before = after_form;

    // Another tenant's owner.
    let response = put_json(
        &app,
        &other.client,
        &branding_path(acme.tenant),
        change.clone(),
    )
    .await;
    assert_eq!(response.status(), 403);
    let response = logo_form(
        &app,
        &Admin {
            client: other.client.clone(),
            tenant: acme.tenant,
        },
        PNG.to_vec(),
    )
    .await;
    assert_eq!(response.status(), 403);
    // Acme's admin and support members read, never write.
    for role in ["admin", "support"] {
        let email = format!("{role}-{}@example.com", Uuid::new_v4());
        let id = app.create_account(&email, "correct horse battery").await;
        sqlx::query("INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, $3)")
            .bind(acme.tenant)
            .bind(id.0)
            .bind(role)
            .execute(&app.pool)
            .await
            .expect("member");
        let member = Admin {
            client: crate::support::app::new_client(),
            tenant: acme.tenant,
        };
        app.login_as(&member.client, &email, "correct horse battery")
            .await;
        assert_eq!(branding_of(&app, &member).await["name"], "Acme Academy");
        assert_eq!(
            set_branding(&app, &member, change.clone()).await.status(),
            403,
            "{role}"
        );
        assert_eq!(
            put_logo(&app, &member, PNG.to_vec(), "image/png")
                .await
                .status(),
            403
        );
        assert_eq!(logo_form(&app, &member, PNG.to_vec()).await.status(), 403);
    }
    // A token with every scope reads, never writes.
    let token = create_token(&app, &acme, &["read", "write", "integrations"]).await;
    let (status, body) =
        as_token(&app, &token, Method::GET, &branding_path(acme.tenant), None).await;
    assert_eq!(
        (status, body["name"].as_str()),
        (StatusCode::OK, Some("Acme Academy"))
    );
    let (status, _) = as_token(
        &app,
        &token,
        Method::PUT,
        &branding_path(acme.tenant),
        Some(change.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_token(
        &app,
        &token,
        Method::DELETE,
        &format!("{}/logo", branding_path(acme.tenant)),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let response = crate::support::app::new_client()
        .put(format!(
            "{}{}/logo",
            app.address,
            branding_path(acme.tenant)
        ))
        .bearer_auth(&token)
        .body(PNG.to_vec())
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // Signed out.
    assert_eq!(
        put_json(&app, &app.client, &branding_path(acme.tenant), change)
            .await
            .status(),
        401
    );
    assert_eq!(stored(&app, acme.tenant).await.0, before.0);
    assert_eq!(stored(&app, acme.tenant).await.3, before.3);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tenant_s_mails_carry_its_branding_and_only_its_own(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let acme = admin(&app).await;
    let other = admin(&app).await;
    let logo = brand_acme(&app, &acme).await;
    let acme_course = course(&app, &acme, json!({ "title": "Rust 101" })).await;
    let other_course = course(&app, &other, json!({ "title": "Go 101" })).await;
    let people = learners(&app, 2).await;
    for ((_, client), course, owner) in [
        (&people[0], &acme_course, &acme),
        (&people[1], &other_course, &other),
    ] {
        let code = issue(&app, owner, course.share, 1).await.remove(0).1;
        assert_eq!(
            enter_code(&app, client, &course.slug, &code).await.status(),
            200
        );
        assert_eq!(open(&app, client, course, None).await.status(), 200);
    }
    let to = |id: Uuid| format!("learner-{id}@example.com");
    let acme_mail = sink
        .wait_for(&to(people[0].0), "You now hold Rust 101", MAIL_WAIT)
        .await;
    assert!(
        acme_mail.html.contains("Acme Academy"),
        "{}",
        acme_mail.html
    );
    assert!(
        acme_mail.html.contains("background:#2e7d32;color:#ffffff"),
        "{}",
        acme_mail.html
    );
    assert!(
        acme_mail
            .html
            .contains(&format!("src=\"http://127.0.0.1:3000{logo}\"")),
        "the logo, at the public origin: {}",
        acme_mail.html
    );
    assert!(
        acme_mail
            .text
            .contains("Questions? Write to Acme Academy at help@acme.test."),
        "{}",
        acme_mail.text
    );
    let other_mail = sink
        .wait_for(&to(people[1].0), "You now hold Go 101", MAIL_WAIT)
        .await;
    for foreign in ["Acme", "#2e7d32", "help@acme.test", "/logo/"] {
        assert!(
            !other_mail.html.contains(foreign) && !other_mail.text.contains(foreign),
            "{foreign} in another tenant's mail"
        );
    }
    assert!(
        other_mail.html.contains("background:#2457c5"),
        "the default button"
    );
}

/// `GET {logo}` from `client` (an address the proxy vouches for), with an
/// `If-None-Match` when given.
async fn logo_from(
    app: &TestApp,
    logo: &str,
    client: &str,
    etag: Option<&str>,
) -> reqwest::Response {
    let mut request = app
        .client
        .get(format!("{}{logo}", app.address))
        .header("x-forwarded-for", client);
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    request.send().await.expect("request")
}

/// A logo is public, so its reads are limited per client address: past
/// the limit a client gets 429 with `Retry-After` (for a logo that exists
/// or not), while a browser that has it still gets its 304, which needs
/// no database, and another address is unaffected.
#[sqlx::test(migrations = "../migrations")]
async fn logo_reads_are_limited_per_client_address(pool: PgPool) {
    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.server.trusted_proxy_hops = 1;
    settings.throttle.logo_per_ip_per_minute = 3;
    let app = spawn_app_with(pool, settings).await;
    let acme = admin(&app).await;
    let logo = brand_acme(&app, &acme).await;
    let unknown = format!("/brand/logo/{}", Uuid::now_v7());

    let first = logo_from(&app, &logo, "203.0.113.7", None).await;
    assert_eq!(first.status(), 200);
    let etag = first.headers()["etag"].to_str().expect("ascii").to_owned();
    assert_eq!(
        logo_from(&app, &unknown, "203.0.113.7", None)
            .await
            .status(),
        404
    );
    assert_eq!(
        logo_from(&app, &logo, "203.0.113.7", None).await.status(),
        200
    );
    for path in [&logo, &unknown] {
        let refused = logo_from(&app, path, "203.0.113.7", None).await;
        assert!(refused.headers().contains_key("retry-after"), "{path}");
        assert_eq!(
            error_of(refused).await,
            (429, "rate_limited".into()),
            "{path}"
        );
    }
    let revalidated = logo_from(&app, &logo, "203.0.113.7", Some(&etag)).await;
    assert_eq!(revalidated.status(), 304, "a cached logo costs nothing");
    let other = logo_from(&app, &logo, "198.51.100.9", None).await;
    assert_eq!(other.status(), 200, "another address has its own limit");
    assert_eq!(other.bytes().await.expect("bytes").as_ref(), PNG);

    // An IPv6 client is counted by its /64: a new address in it is no new
    // limit.
    for address in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3"] {
        assert_eq!(
            logo_from(&app, &logo, address, None).await.status(),
            200,
            "{address}"
        );
    }
    let same_net = logo_from(&app, &logo, "2001:db8:1:2:ffff::9", None).await;
    assert_eq!(error_of(same_net).await, (429, "rate_limited".into()));
    let next_net = logo_from(&app, &logo, "2001:db8:1:3::1", None).await;
    assert_eq!(next_net.status(), 200, "the next /64 has its own limit");
}

/// The limit only guards PostgreSQL's load: when the throttle's store
/// fails, the logo is served anyway (a page or a mail without its logo is
/// broken), not a 503.
#[sqlx::test(migrations = "../migrations")]
async fn a_logo_is_served_when_its_throttle_cannot_count(pool: PgPool) {
    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.server.trusted_proxy_hops = 1;
    let app = spawn_app_with(pool, settings).await;
    let acme = admin(&app).await;
    let logo = brand_acme(&app, &acme).await;
    let key = app
        .redis
        .keys()
        .throttle(engine::coordination::ThrottleScope::LogoIp, "203.0.113.8");
    // This is the address's real counter: one read made it.
    assert_eq!(
        logo_from(&app, &logo, "203.0.113.8", None).await.status(),
        200
    );
    let counted: Option<i64> = redis::AsyncCommands::get(&mut app.redis.conn(), &key)
        .await
        .expect("get");
    assert_eq!(counted, Some(1), "the logo's read was counted under {key}");
    // Now it is not a counter: every count fails in Redis itself
    // (WRONGTYPE).
    let _: () = redis::AsyncCommands::del(&mut app.redis.conn(), &key)
        .await
        .expect("del");
    let _: () = redis::AsyncCommands::hset(&mut app.redis.conn(), &key, "not", "a counter")
        .await
        .expect("hset");
    let _: () = redis::AsyncCommands::expire(&mut app.redis.conn(), &key, 60)
        .await
        .expect("expire");
    let served = logo_from(&app, &logo, "203.0.113.8", None).await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.bytes().await.expect("bytes").as_ref(), PNG);
}
