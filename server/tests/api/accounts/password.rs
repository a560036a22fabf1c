//! Changing the password: it keeps this session and ends the others; it is
//! throttled per account, and a refused change leaves the password as it
//! was.

use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;

#[sqlx::test(migrations = "../migrations")]
async fn changing_the_password_keeps_this_session_and_ends_the_others(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let other = new_client();
    app.login_as(&app.client, "ada@example.com", PASSWORD).await;
    app.login_as(&other, "ada@example.com", PASSWORD).await;

    let wrong = app
        .post_form(
            "/api/auth/change-password",
            &[
                ("current_password", "not the password"),
                ("new_password", "a brand new password"),
                ("new_password_confirm", "a brand new password"),
            ],
        )
        .await;
    assert_eq!(wrong.status(), 422);
    assert!(
        app.whoami_as(&other).await.is_some(),
        "a refused change ends nothing"
    );

    let ok = app
        .post_form(
            "/api/auth/change-password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "a brand new password"),
                ("new_password_confirm", "a brand new password"),
            ],
        )
        .await;
    assert!(ok.status().is_success(), "{}", ok.status());
    assert!(
        app.whoami_as(&app.client).await.is_some(),
        "this session stays"
    );
    assert_eq!(app.whoami_as(&other).await, None, "the other session ended");
    let fresh = new_client();
    let old = app
        .post_form_as(
            &fresh,
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(old.status(), 401);
    app.login_as(&fresh, "ada@example.com", "a brand new password")
        .await;
}

async fn change_password(app: &TestApp, current: &str) -> reqwest::Response {
    app.post_form(
        "/api/auth/change-password",
        &[
            ("current_password", current),
            ("new_password", "a brand new password"),
            ("new_password_confirm", "a brand new password"),
        ],
    )
    .await
}

#[sqlx::test(migrations = "../migrations")]
async fn change_password_is_throttled_per_account_and_the_password_stays(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.sign_in_per_email = 3;
    let app = spawn_app_with(pool, settings).await;
    app.create_account("ada@example.com", PASSWORD).await;
    app.login_as(&app.client, "ada@example.com", PASSWORD).await;

    for i in 0..3 {
        assert_eq!(
            change_password(&app, "not the password").await.status(),
            422,
            "{i}"
        );
    }
    // The 4th attempt is refused before any password work, even the right one.
    let refused = change_password(&app, PASSWORD).await;
    assert_eq!(refused.status(), 429);
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!(retry_after >= 1, "{retry_after}");
    let body: Value = refused.json().await.expect("json");
    assert!(
        body["RateLimited"]["message"]
            .as_str()
            .expect("message")
            .contains("Try again in"),
        "{body}"
    );

    // Nothing changed: the old password still signs in, the new one does not.
    let fresh = new_client();
    let new = app
        .post_form_as(
            &fresh,
            "/api/auth/login",
            &[
                ("email", "ada@example.com"),
                ("password", "a brand new password"),
            ],
        )
        .await;
    assert_eq!(new.status(), 401);
    app.login_as(&fresh, "ada@example.com", PASSWORD).await;
    assert!(
        app.whoami_as(&app.client).await.is_some(),
        "still signed in"
    );
}
