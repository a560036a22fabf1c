//! Response headers: every answer carries a request id; answers that show
//! plain codes or secrets are `no-store`; every page carries the security
//! headers (its scripts the CSP nonce, other sites' frames refused), and
//! HSTS only when the public URL is HTTPS.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::{redis_url, spawn_app, spawn_app_with, test_settings};
use crate::support::course::{admin, course, post_json};

#[sqlx::test(migrations = "../migrations")]
async fn every_response_carries_a_request_id(pool: PgPool) {
    let app = spawn_app(pool).await;
    let first = app.get("/healthz").await;
    let second = app.get("/healthz").await;
    let id = |r: &reqwest::Response| {
        r.headers()
            .get("x-request-id")
            .expect("x-request-id header")
            .to_str()
            .expect("ascii")
            .to_owned()
    };
    assert_ne!(id(&first), id(&second), "request ids are unique");
}

/// A plain HTML form post, as a browser without JavaScript sends it.
async fn plain_form(
    address: &str,
    client: &reqwest::Client,
    from: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(format!("{address}{path}"))
        .header("accept", "text/html")
        .header("referer", format!("{address}{from}"))
        .header("origin", address)
        .form(fields)
        .send()
        .await
        .expect("request")
}

async fn html_page(address: &str, client: &reqwest::Client, path: &str) -> reqwest::Response {
    client
        .get(format!("{address}{path}"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("request")
}

fn assert_no_store(response: &reqwest::Response, what: &str) {
    let value = response
        .headers()
        .get("cache-control")
        .unwrap_or_else(|| panic!("{what}: no Cache-Control"))
        .to_str()
        .expect("ascii");
    assert!(value.contains("no-store"), "{what}: Cache-Control {value}");
}

#[sqlx::test(migrations = "../migrations")]
async fn every_answer_showing_plain_codes_or_secrets_is_no_store(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let tenant = admin.tenant.to_string();
    let share = course.share.to_string();
    let share_page = format!("/admin/t/{tenant}/s/{share}");

    // /api/v1 issuing: the codes are in the answer.
    let issued = post_json(
        &app,
        &admin.client,
        &format!("/api/v1/shares/{share}/codes"),
        json!({ "count": 2 }),
    )
    .await;
    assert_eq!(issued.status(), StatusCode::CREATED);
    assert_no_store(&issued, "POST /api/v1/shares/{id}/codes");

    // The console: the issued-codes page (with its printable cards), then
    // the CSV.
    let response = plain_form(
        &app.address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &tenant),
            ("share_id", &share),
            ("count", "3"),
            ("label", ""),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let result_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let page = html_page(&app.address, &admin.client, &result_page).await;
    assert_eq!(page.status(), 200);
    assert_no_store(&page, "issued-codes page");
    let html = page.text().await.expect("html");
    assert!(html.contains("plain-code"), "{html}");
    assert!(html.contains("class=\"qr\""), "no printable cards: {html}");
    let csv = html_page(
        &app.address,
        &admin.client,
        &format!("{result_page}/codes.csv"),
    )
    .await;
    assert_eq!(csv.status(), 200);
    assert_no_store(&csv, "codes CSV");

    // API tokens: the server function's answer, and the page a browser
    // without JavaScript is sent back to (the token as a one-time message).
    let token = admin
        .client
        .post(format!("{}/api/admin/tokens/create", app.address))
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("name", "ci"),
            ("read", "on"),
        ])
        .send()
        .await
        .expect("token");
    assert_eq!(token.status(), 200);
    assert_no_store(&token, "token creation (server function)");
    let tokens_page = format!("/admin/t/{tenant}/tokens");
    let redirect = plain_form(
        &app.address,
        &admin.client,
        &tokens_page,
        "/api/admin/tokens/create",
        &[("tenant_id", &tenant), ("name", "ci2"), ("write", "on")],
    )
    .await;
    assert!(redirect.status().is_redirection(), "{}", redirect.status());
    assert_no_store(&redirect, "token creation (form)");
    let shown = html_page(&app.address, &admin.client, &tokens_page).await;
    assert_no_store(&shown, "tokens page with the new token");
    assert!(shown.text().await.expect("html").contains("a1t_"));

    // Webhook signing secrets, both ways.
    let hook = admin
        .client
        .post(format!("{}/api/admin/webhooks/create", app.address))
        .form(&[
            ("tenant_id", tenant.as_str()),
            ("url", "https://hooks.example.com/in"),
            ("code_bound", "on"),
        ])
        .send()
        .await
        .expect("webhook");
    assert_eq!(hook.status(), 200);
    assert_no_store(&hook, "webhook creation (server function)");
    let hooks_page = format!("/admin/t/{tenant}/webhooks");
    let redirect = plain_form(
        &app.address,
        &admin.client,
        &hooks_page,
        "/api/admin/webhooks/create",
        &[
            ("tenant_id", &tenant),
            ("url", "https://hooks.example.com/other"),
            ("code_bound", "on"),
        ],
    )
    .await;
    assert!(redirect.status().is_redirection(), "{}", redirect.status());
    let shown = html_page(&app.address, &admin.client, &hooks_page).await;
    assert_no_store(&shown, "webhooks page with the new secret");
    assert!(shown.text().await.expect("html").contains("whsec_"));
}

/// The `'nonce-…'` of a CSP's `script-src`.
fn script_nonce(csp: &str) -> String {
    let script_src = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src "))
        .unwrap_or_else(|| panic!("no script-src: {csp}"));
    let start = script_src
        .find("'nonce-")
        .unwrap_or_else(|| panic!("no nonce: {csp}"))
        + "'nonce-".len();
    let end = script_src[start..].find('\'').expect("closing quote") + start;
    script_src[start..end].to_owned()
}

/// Checks the headers of one page; returns its HTML and CSP.
async fn assert_page_headers(
    response: reqwest::Response,
    what: &str,
    https: bool,
) -> (String, String) {
    let headers = response.headers().clone();
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| v.to_str().expect("ascii").to_owned())
    };
    assert_eq!(header("x-frame-options").as_deref(), Some("DENY"), "{what}");
    assert_eq!(
        header("x-content-type-options").as_deref(),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(
        header("referrer-policy").as_deref(),
        Some("strict-origin-when-cross-origin"),
        "{what}"
    );
    match header("strict-transport-security") {
        Some(hsts) => {
            assert!(https, "{what}: HSTS over plain HTTP");
            assert!(hsts.starts_with("max-age="), "{what}: {hsts}");
        }
        None => assert!(!https, "{what}: no HSTS"),
    }
    let csp = header("content-security-policy").unwrap_or_else(|| panic!("{what}: no CSP"));
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert!(csp.contains("object-src 'none'"), "{what}: {csp}");
    assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
    let html = response.text().await.expect("html");
    (html, csp)
}

/// Every `<script` tag of `html` carries `nonce="{nonce}"`; there is at
/// least one (the hydration script).
fn assert_scripts_carry(html: &str, nonce: &str, what: &str) {
    let mut seen = 0;
    for (at, _) in html.match_indices("<script") {
        let tag_end = html[at..].find('>').expect("tag end") + at;
        let tag = &html[at..=tag_end];
        assert!(
            tag.contains(&format!("nonce=\"{nonce}\"")),
            "{what}: a script without the CSP's nonce {nonce}: {tag}"
        );
        seen += 1;
    }
    assert!(seen > 0, "{what}: no script at all: {html}");
}

#[sqlx::test(migrations = "../migrations")]
async fn every_page_carries_the_security_headers_and_its_scripts_the_nonce(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let pages = [
        ("home", "/".to_owned()),
        ("login", "/login".to_owned()),
        ("share page", format!("/s/{}", course.slug)),
        ("console", format!("/admin/t/{}", admin.tenant)),
        ("404", "/no/such/page".to_owned()),
    ];
    let mut nonces = Vec::new();
    for (what, path) in &pages {
        let response = html_page(&app.address, &admin.client, path).await;
        if *what == "404" {
            assert_eq!(response.status(), 404);
        } else {
            assert_eq!(response.status(), 200, "{what}");
        }
        let (html, csp) = assert_page_headers(response, what, false).await;
        let nonce = script_nonce(&csp);
        assert!(nonce.len() >= 16, "{what}: weak nonce {nonce}");
        assert_scripts_carry(&html, &nonce, what);
        nonces.push(nonce);
    }
    // A fresh nonce per answer.
    let mut unique = nonces.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), nonces.len(), "{nonces:?}");

    // Answers that are not pages get the headers too (a CSP without scripts).
    let api = app.get("/api/v1/openapi.json").await;
    assert_eq!(api.status(), 200);
    let (_, csp) = assert_page_headers(api, "openapi.json", false).await;
    assert!(csp.contains("default-src 'none'"), "{csp}");
}

#[sqlx::test(migrations = "../migrations")]
async fn hsts_only_when_the_public_url_is_https(pool: PgPool) {
    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.server.public_url = "https://courses.example.com".into();
    let app = crate::support::app::spawn_app_with(pool, settings).await;
    let response = html_page(&app.address, &app.client, "/").await;
    assert_eq!(response.status(), 200);
    let (html, csp) = assert_page_headers(response, "home over https", true).await;
    assert_scripts_carry(&html, &script_nonce(&csp), "home over https");
}

/// A page and the site's static files answered side by side: each page
/// keeps its own policy (the nonce its scripts carry), and a static file
/// never carries a page's. Seen failing first: leptos_axum's fallback
/// served a file under an `Owner` made a child of whatever owner the
/// worker thread last had current, and took that owner's response
/// options: a page rendering at that moment lost its policy to the icon,
/// and was served `default-src 'none'` (no script ran, nothing hydrated).
#[sqlx::test(migrations = "../migrations")]
async fn pages_keep_their_own_policy_while_static_files_are_served_beside_them(pool: PgPool) {
    let site = std::env::temp_dir().join(format!("admitone-site-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(site.join("pkg")).expect("pkg");
    let icon = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>"#;
    std::fs::write(site.join("favicon.svg"), icon).expect("icon");
    let mut settings = test_settings(&redis_url());
    settings.server.site_root = site.display().to_string();
    let app = spawn_app_with(pool, settings).await;

    let (mut pages, mut icons) = (0, 0);
    for _round in 0..25 {
        let mut requests = Vec::new();
        for i in 0..24 {
            let path = match i % 6 {
                0 => "/",
                1 => "/login",
                2 => "/register",
                _ => "/favicon.svg",
            };
            let client = app.client.clone();
            let url = format!("{}{path}", app.address);
            requests.push(async move {
                let response = client
                    .get(url)
                    .header("accept", "text/html")
                    .send()
                    .await
                    .expect("request");
                let csp = response
                    .headers()
                    .get("content-security-policy")
                    .map(|v| v.to_str().expect("ascii").to_owned())
                    .unwrap_or_default();
                let status = response.status();
                let body = response.text().await.expect("body");
                (path, status, csp, body)
            });
        }
        for (path, status, csp, body) in futures::future::join_all(requests).await {
            assert_eq!(status, StatusCode::OK, "{path}");
            if path == "/favicon.svg" {
                icons += 1;
                assert_eq!(body, icon);
                assert!(
                    !csp.contains("nonce-"),
                    "the icon carried a page's policy: {csp}"
                );
            } else {
                pages += 1;
                assert!(
                    csp.contains("'nonce-"),
                    "{path} was served without its page policy: {csp:?}"
                );
                assert_scripts_carry(&body, &script_nonce(&csp), path);
            }
        }
    }
    assert_eq!((pages, icons), (25 * 12, 25 * 12));
    let _ = std::fs::remove_dir_all(site);
}
