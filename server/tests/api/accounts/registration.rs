//! Registering an account: register, sign out and in again; bad input is
//! refused field by field and writes nothing; registration is throttled
//! per client address.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

#[sqlx::test(migrations = "../migrations")]
async fn register_login_logout_login_again(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app
        .post_form(
            "/api/auth/register",
            &[
                ("email", " Ada@Example.com "),
                ("display_name", "Ada"),
                ("password", PASSWORD),
                ("password_confirm", PASSWORD),
            ],
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(
        app.whoami_as(&app.client).await.as_deref(),
        Some("ada@example.com")
    );

    let response = app.post_form("/api/auth/logout", &[]).await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(app.whoami_as(&app.client).await, None);

    app.login_as(&app.client, "ADA@example.com", PASSWORD).await;
    assert_eq!(
        app.whoami_as(&app.client).await.as_deref(),
        Some("ada@example.com")
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn registration_rejects_bad_input_field_by_field_and_writes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("taken@example.com", PASSWORD).await;
    let cases: [(&str, &str, &str, &str, &str); 8] = [
        ("not-an-email", "Ada", PASSWORD, PASSWORD, "email"),
        // Addresses the mailer cannot send to as written: the account
        // could never be confirmed (or its mail would go elsewhere).
        (
            "ada<victim@example.com>",
            "Ada",
            PASSWORD,
            PASSWORD,
            "email",
        ),
        ("a..b@example.com", "Ada", PASSWORD, PASSWORD, "email"),
        ("ada@exa_mple.com", "Ada", PASSWORD, PASSWORD, "email"),
        ("new@example.com", "   ", PASSWORD, PASSWORD, "display_name"),
        ("new@example.com", "Ada", "short", "short", "password"),
        (
            "new@example.com",
            "Ada",
            PASSWORD,
            "different password",
            "password_confirm",
        ),
        ("taken@example.com", "Ada", PASSWORD, PASSWORD, "email"),
    ];
    for (email, name, password, confirm, field) in cases {
        let response = app
            .post_form(
                "/api/auth/register",
                &[
                    ("email", email),
                    ("display_name", name),
                    ("password", password),
                    ("password_confirm", confirm),
                ],
            )
            .await;
        assert_eq!(response.status(), 422, "{email} {name} {field}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["Invalid"]["field"], field, "{body}");
    }
    let accounts: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(accounts, 1, "only the pre-existing account");
    assert_eq!(app.whoami_as(&app.client).await, None);
}

#[sqlx::test(migrations = "../migrations")]
async fn registration_is_throttled_per_ip(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.register_per_ip = 2;
    let app = spawn_app_with(pool, settings).await;
    for i in 0..3 {
        let email = format!("user{i}@example.com");
        let response = app
            .post_form_as(
                &new_client(),
                "/api/auth/register",
                &[
                    ("email", &email),
                    ("display_name", "User"),
                    ("password", PASSWORD),
                    ("password_confirm", PASSWORD),
                ],
            )
            .await;
        if i < 2 {
            assert!(response.status().is_success(), "{i}: {}", response.status());
        } else {
            assert_eq!(response.status(), 429);
            assert!(response.headers().contains_key("retry-after"));
        }
    }
    let accounts: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(accounts, 2, "the refused registration wrote nothing");
}
