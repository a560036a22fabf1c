//! Changing the branding: a bad colour, address, file type or size is
//! refused with a clear error and changes nothing; only owners, signed in,
//! change anything.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::{
    PNG, brand_acme, branding_of, branding_path, logo_form, page, put_logo, set_branding, stored,
};
use crate::support::app::spawn_app;
use crate::support::course::{Admin, admin, error_of, put_json};
use crate::support::tokens::{as_token, create_token};

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
