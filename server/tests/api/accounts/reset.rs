//! "Forgot password" and the reset, with a real SMTP server: the same
//! answer for every address, given before the address is looked up, and
//! throttled; a reset link sets the password once, for 30 minutes, ends
//! every session and tells the account; a newer reset or a password change
//! ends the open links.

use serde_json::Value;
use sqlx::PgPool;

use super::{NEW_PASSWORD, page, path_of, register, verified, whoami};
use crate::support::app::{new_client, spawn_app_with};
use crate::support::course::PASSWORD;
use crate::support::mail::{MAIL_WAIT, mail_settings, spawn_app_with_mail, token_of};

/// "Forgot password" answers an unknown address exactly as a known one
/// (status, redirect, body, message), and only the known one gets a mail.
#[sqlx::test(migrations = "../migrations")]
async fn forgot_password_answers_the_same_whether_the_address_has_an_account(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let ask = |email: &'static str| {
        let app = &app;
        async move {
            let client = new_client();
            let response = app
                .post_form_as(&client, "/api/auth/forgot", &[("email", email)])
                .await;
            let status = response.status();
            let location = response
                .headers()
                .get("location")
                .map(|v| v.to_str().expect("ascii").to_owned());
            let body = response.text().await.expect("body");
            // The message the next page shows.
            let next = app
                .post_form_as(&client, "/api/flash/take", &[])
                .await
                .text()
                .await
                .expect("flash");
            (status, location, body, next)
        }
    };
    let known = ask("ada@example.com").await;
    let unknown = ask("nobody@example.com").await;
    assert_eq!(known, unknown, "the same answer");
    assert!(
        known.3.contains("If an account uses this address"),
        "{known:?}"
    );

    sink.wait_for("ada@example.com", "Reset your password", MAIL_WAIT)
        .await;
    let queued: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM mail_outbox WHERE to_address = 'nobody@example.com'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("count");
    assert_eq!(queued, 0);
    assert!(sink.received_by("nobody@example.com").is_empty());

    // Bad input is refused, the same for everyone, and changes nothing.
    let malformed = app
        .post_form_as(
            &new_client(),
            "/api/auth/forgot",
            &[("email", "not an address")],
        )
        .await;
    assert_eq!(malformed.status(), 422);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_reset_link_sets_the_password_once_ends_every_session_and_tells_the_account(
    pool: PgPool,
) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (phone, laptop) = (new_client(), new_client());
    register(&app, &phone, "ada@example.com").await;
    app.login_as(&laptop, "ada@example.com", PASSWORD).await;
    app.post_form_as(
        &new_client(),
        "/api/auth/forgot",
        &[("email", "ada@example.com")],
    )
    .await;
    let mail = sink
        .wait_for("ada@example.com", "Reset your password", MAIL_WAIT)
        .await;
    assert!(mail.text.contains("30 minutes"));
    let link = path_of(&mail.link("/reset-password").expect("link"));
    let form = page(&app, &new_client(), &link).await;
    assert!(form.contains("new_password_confirm"), "the form: {form}");

    let reset = |token: String| {
        let app = &app;
        async move {
            app.post_form_as(
                &new_client(),
                "/api/auth/reset",
                &[
                    ("token", token.as_str()),
                    ("new_password", NEW_PASSWORD),
                    ("new_password_confirm", NEW_PASSWORD),
                ],
            )
            .await
        }
    };
    let done = reset(token_of(&link)).await;
    assert!(
        done.status().is_success() || done.status().is_redirection(),
        "{}",
        done.status()
    );

    assert!(whoami(&app, &phone).await.is_null(), "every session ended");
    assert!(whoami(&app, &laptop).await.is_null());
    let old = app
        .post_form_as(
            &new_client(),
            "/api/auth/login",
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(old.status(), 401);
    app.login_as(&new_client(), "ada@example.com", NEW_PASSWORD)
        .await;
    assert!(
        verified(&app, "ada@example.com").await,
        "the link proved the address"
    );

    let notice = sink
        .wait_for("ada@example.com", "password was changed", MAIL_WAIT)
        .await;
    assert!(notice.text.contains("Forgot password"), "{}", notice.text);

    let again = reset(token_of(&link)).await;
    assert_eq!(again.status(), 410);
    let body: Value = again.json().await.expect("json");
    assert_eq!(body["Refused"]["reason"], "link_invalid", "{body}");
    assert!(
        page(&app, &new_client(), &link)
            .await
            .contains("expired or was already used"),
        "a used link shows no form"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_reset_link_works_for_thirty_minutes(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    app.post_form_as(
        &new_client(),
        "/api/auth/forgot",
        &[("email", "ada@example.com")],
    )
    .await;
    let mail = sink
        .wait_for("ada@example.com", "Reset your password", MAIL_WAIT)
        .await;
    let lifetime: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - created_at)::float8 FROM account_links WHERE purpose = 'reset_password'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("link");
    assert_eq!(lifetime, 1_800.0);
    sqlx::query("UPDATE account_links SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .expect("age the link");
    let link = mail.link("/reset-password").expect("link");
    let expired = app
        .post_form_as(
            &new_client(),
            "/api/auth/reset",
            &[
                ("token", token_of(&link).as_str()),
                ("new_password", NEW_PASSWORD),
                ("new_password_confirm", NEW_PASSWORD),
            ],
        )
        .await;
    assert_eq!(expired.status(), 410);
    app.login_as(&new_client(), "ada@example.com", PASSWORD)
        .await;
}

/// Older reset links die when a newer one is used, and when the password
/// changes another way.
#[sqlx::test(migrations = "../migrations")]
async fn a_newer_reset_or_a_password_change_ends_the_open_links(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let forgot = || async {
        app.post_form_as(
            &new_client(),
            "/api/auth/forgot",
            &[("email", "ada@example.com")],
        )
        .await;
    };
    forgot().await;
    forgot().await;
    let mails = sink.wait_for_count(2, MAIL_WAIT).await;
    let tokens: Vec<String> = mails
        .iter()
        .map(|m| token_of(&m.link("/reset-password").expect("link")))
        .collect();
    let reset = |token: &str, password: &'static str| {
        let token = token.to_owned();
        let app = &app;
        async move {
            app.post_form_as(
                &new_client(),
                "/api/auth/reset",
                &[
                    ("token", token.as_str()),
                    ("new_password", password),
                    ("new_password_confirm", password),
                ],
            )
            .await
            .status()
            .as_u16()
        }
    };
    assert!(
        reset(&tokens[1], NEW_PASSWORD).await < 400,
        "the newer one works"
    );
    assert_eq!(
        reset(&tokens[0], "yet another password").await,
        410,
        "the older one died"
    );

    forgot().await;
    let third = sink.wait_for_count(4, MAIL_WAIT).await; // + the notice
    let token = third
        .iter()
        .rev()
        .find_map(|m| m.link("/reset-password"))
        .map(|l| token_of(&l))
        .expect("a third link");
    let client = new_client();
    app.login_as(&client, "ada@example.com", NEW_PASSWORD).await;
    let changed = app
        .post_form_as(
            &client,
            "/api/auth/change-password",
            &[
                ("current_password", NEW_PASSWORD),
                ("new_password", "changed on the account page"),
                ("new_password_confirm", "changed on the account page"),
            ],
        )
        .await;
    assert!(changed.status().as_u16() < 400, "{}", changed.status());
    assert_eq!(
        reset(&token, "yet another password").await,
        410,
        "the change ended it"
    );
    app.login_as(
        &new_client(),
        "ada@example.com",
        "changed on the account page",
    )
    .await;
    // Each change was announced to the account.
    let notices = sink
        .received_by("ada@example.com")
        .into_iter()
        .filter(|m| m.subject == "Your password was changed")
        .count();
    assert!(notices >= 1);
    let queued: i64 =
        sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE template = 'password_changed'")
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(queued, 2, "one notice per change");
}

#[sqlx::test(migrations = "../migrations")]
async fn forgot_password_is_throttled_per_address_and_per_network(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.throttle.reset_per_email = 2;
    settings.throttle.mail_per_ip = 4;
    let app = spawn_app_with(pool, settings).await;
    let forgot = |email: &'static str| {
        let app = &app;
        async move {
            app.post_form_as(&new_client(), "/api/auth/forgot", &[("email", email)])
                .await
                .status()
                .as_u16()
        }
    };
    assert!(forgot("ada@example.com").await < 400);
    assert!(forgot("ada@example.com").await < 400);
    assert_eq!(forgot("ada@example.com").await, 429, "per address");
    assert!(forgot("bob@example.com").await < 400);
    assert!(forgot("cy@example.com").await < 400);
    assert_eq!(forgot("dee@example.com").await, 429, "per network");
}

/// "Forgot password" answers before it looks anything up, so neither its
/// answer nor its timing depends on the address: with the accounts table
/// unreadable, it still answers as always (a look-up before the answer
/// would fail the request).
#[sqlx::test(migrations = "../migrations")]
async fn forgot_password_answers_before_it_looks_the_address_up(pool: PgPool) {
    let app = crate::support::app::spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    sqlx::query("ALTER TABLE accounts RENAME TO accounts_away")
        .execute(&app.pool)
        .await
        .expect("hide the accounts");
    let answered = app
        .post_form_as(
            &new_client(),
            "/api/auth/forgot",
            &[("email", "ada@example.com")],
        )
        .await;
    let status = answered.status();
    sqlx::query("ALTER TABLE accounts_away RENAME TO accounts")
        .execute(&app.pool)
        .await
        .expect("bring them back");
    assert!(status.as_u16() < 400, "answered without reading: {status}");
}
