//! Learners see their course provider's branding on its course pages and in
//! its mails, and no other tenant's page or mail ever carries it.

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::{PNG, brand_acme, branding_of, branding_path, page, put_logo};
use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::course::{admin, course, enter_code, issue, learners, open};
use crate::support::mail::{MAIL_WAIT, mail_settings};

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
