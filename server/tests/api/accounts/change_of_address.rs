//! Moving an account to a new address: the new address is verified before
//! the account moves and the old one is told; securing the account (a
//! password change, "sign out everywhere") ends a pending change.

use serde_json::Value;
use sqlx::PgPool;

use super::{NEW_PASSWORD, page, path_of, use_link, verified};
use crate::support::app::new_client;
use crate::support::course::PASSWORD;
use crate::support::mail::{MAIL_WAIT, spawn_app_with_mail};

#[sqlx::test(migrations = "../migrations")]
async fn a_new_address_is_verified_before_the_account_moves_and_the_old_one_is_told(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    app.create_account("taken@example.com", PASSWORD).await;
    let client = new_client();
    app.login_as(&client, "ada@example.com", PASSWORD).await;
    let change = |new_email: &'static str, password: &'static str| {
        let (app, client) = (&app, &client);
        async move {
            app.post_form_as(
                client,
                "/api/auth/change-email",
                &[("new_email", new_email), ("current_password", password)],
            )
            .await
        }
    };
    for (email, password, field) in [
        (
            "ada.new@example.com",
            "not the password",
            "current_password",
        ),
        ("taken@example.com", PASSWORD, "new_email"),
        ("ADA@example.com", PASSWORD, "new_email"),
        ("not an address", PASSWORD, "new_email"),
    ] {
        let refused = change(email, password).await;
        assert_eq!(refused.status(), 422, "{email}");
        let body: Value = refused.json().await.expect("json");
        assert_eq!(body["Invalid"]["field"], field, "{email}: {body}");
    }
    assert!(
        change("ada.new@example.com", PASSWORD)
            .await
            .status()
            .as_u16()
            < 400
    );
    let mail = sink
        .wait_for("ada.new@example.com", "new email", MAIL_WAIT)
        .await;
    assert!(
        mail.text.contains("ada@example.com"),
        "names the old address"
    );
    let email: String = sqlx::query_scalar("SELECT email FROM accounts WHERE email LIKE 'ada%'")
        .fetch_one(&app.pool)
        .await
        .expect("account");
    assert_eq!(email, "ada@example.com", "nothing moves before the link");

    let requested = sink
        .wait_for("ada@example.com", "about to change", MAIL_WAIT)
        .await;
    assert!(
        requested.text.contains("ada.new@example.com"),
        "the current address is told at once"
    );
    let link = mail.link("/confirm-email").expect("link");
    let html = page(&app, &new_client(), &path_of(&link)).await;
    assert!(html.contains("Confirm the new address"), "{html}");
    let email: String = sqlx::query_scalar("SELECT email FROM accounts WHERE email LIKE 'ada%'")
        .fetch_one(&app.pool)
        .await
        .expect("account");
    assert_eq!(email, "ada@example.com", "opening the link moves nothing");
    assert!(use_link(&app, &new_client(), "/api/auth/confirm-email", &link).await < 400);
    assert!(verified(&app, "ada.new@example.com").await);
    let notice = sink
        .wait_for("ada@example.com", "address was changed", MAIL_WAIT)
        .await;
    assert!(notice.text.contains("ada.new@example.com"));
    app.login_as(&new_client(), "ada.new@example.com", PASSWORD)
        .await;
    let old = app
        .post_form_as(
            &new_client(),
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(old.status(), 401);
    assert_eq!(
        use_link(&app, &new_client(), "/api/auth/confirm-email", &link).await,
        410
    );
}

/// A change of address dies with a password change (or "sign out
/// everywhere"): whoever stole the password and asked for it loses it
/// when the owner secures the account.
#[sqlx::test(migrations = "../migrations")]
async fn securing_the_account_ends_a_pending_change_of_address(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let thief = new_client();
    app.login_as(&thief, "ada@example.com", PASSWORD).await;
    let ask = || async {
        let asked = app
            .post_form_as(
                &thief,
                "/api/auth/change-email",
                &[
                    ("new_email", "thief@example.com"),
                    ("current_password", PASSWORD),
                ],
            )
            .await;
        assert!(asked.status().as_u16() < 400, "{}", asked.status());
    };
    ask().await;
    let first = sink
        .wait_for("thief@example.com", "new email", MAIL_WAIT)
        .await
        .link("/confirm-email")
        .expect("link");

    // Ada signs out everywhere: the change is gone.
    let owner = new_client();
    app.login_as(&owner, "ada@example.com", PASSWORD).await;
    let out = app.post_form_as(&owner, "/api/auth/logout-all", &[]).await;
    assert!(out.status().as_u16() < 400);
    assert_eq!(
        use_link(&app, &new_client(), "/api/auth/confirm-email", &first).await,
        410
    );

    // Asked again, then the password changed: gone too.
    app.login_as(&thief, "ada@example.com", PASSWORD).await;
    ask().await;
    let mails = sink.wait_for_count(4, MAIL_WAIT).await;
    let second = mails
        .iter()
        .filter(|m| m.to == ["thief@example.com"])
        .filter_map(|m| m.link("/confirm-email"))
        .find(|l| *l != first)
        .expect("a second link");
    app.login_as(&owner, "ada@example.com", PASSWORD).await;
    let changed = app
        .post_form_as(
            &owner,
            "/api/auth/change-password",
            &[
                ("current_password", PASSWORD),
                ("new_password", NEW_PASSWORD),
                ("new_password_confirm", NEW_PASSWORD),
            ],
        )
        .await;
    assert!(changed.status().as_u16() < 400, "{}", changed.status());
    assert_eq!(
        use_link(&app, &new_client(), "/api/auth/confirm-email", &second).await,
        410
    );
    let email: String = sqlx::query_scalar("SELECT email FROM accounts")
        .fetch_one(&app.pool)
        .await
        .expect("account");
    assert_eq!(email, "ada@example.com");
}
