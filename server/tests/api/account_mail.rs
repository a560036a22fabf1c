//! An account's life by mail, end to end over HTTP with a real SMTP server:
//! verifying the address (and what an unverified learner is told), "forgot
//! password" (the same answer for every address) and the reset (once, for
//! 30 minutes, every session ended, a notice), and moving to a new address
//! (verified first, the old one told).

use serde_json::Value;
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app_with};
use crate::support::course::{
    PASSWORD, admin, course, enter_code, error_of, issue, open, state_of,
};
use crate::support::mail::{MAIL_WAIT, mail_settings, spawn_app_with_mail, token_of};

const NEW_PASSWORD: &str = "a brand new password";

/// Registers `email` with `client` (signed in afterwards), in English.
async fn register(app: &TestApp, client: &reqwest::Client, email: &str) {
    let response = client
        .post(format!("{}/api/auth/register", app.address))
        .header("accept-language", "en")
        .form(&[
            ("email", email),
            ("display_name", "Ada"),
            ("password", PASSWORD),
            ("password_confirm", PASSWORD),
        ])
        .send()
        .await
        .expect("register");
    assert!(
        response.status().is_success() || response.status().is_redirection(),
        "{}",
        response.status()
    );
}

/// `whoami` as JSON (`null`: signed out).
async fn whoami(app: &TestApp, client: &reqwest::Client) -> Value {
    app.get_as(client, "/api/auth/whoami")
        .await
        .json()
        .await
        .expect("json")
}

/// A page as a browser asks for it, its text.
async fn page(app: &TestApp, client: &reqwest::Client, path: &str) -> String {
    let response = app.get_page_as(client, path).await;
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.expect("page")
}

/// The path and query of a mailed link (the server under test is on
/// another port than the links' public origin).
fn path_of(link: &str) -> String {
    let rest = link.split_once("://").map_or(link, |(_, rest)| rest);
    rest[rest.find('/').unwrap_or(rest.len())..].to_owned()
}

/// Clicks the button of a verification (or change-of-address) link's page:
/// the POST that uses the link. Returns the status.
async fn use_link(app: &TestApp, client: &reqwest::Client, endpoint: &str, link: &str) -> u16 {
    app.post_form_as(client, endpoint, &[("token", token_of(link).as_str())])
        .await
        .status()
        .as_u16()
}

async fn verified(app: &TestApp, email: &str) -> bool {
    sqlx::query_scalar("SELECT email_verified_at IS NOT NULL FROM accounts WHERE email = $1")
        .bind(email)
        .fetch_one(&app.pool)
        .await
        .expect("account")
}

#[sqlx::test(migrations = "../migrations")]
async fn registration_mails_a_link_that_verifies_the_address_once(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let ada = new_client();
    register(&app, &ada, "ada@example.com").await;
    assert_eq!(whoami(&app, &ada).await["email_verified"], false);
    let mail = sink
        .wait_for("ada@example.com", "Confirm your email", MAIL_WAIT)
        .await;
    let link = path_of(&mail.link("/verify-email").expect("link"));

    // Opening the link (a mail scanner does) only shows the button.
    let html = page(&app, &new_client(), &link).await;
    assert!(html.contains("Confirm my address"), "{html}");
    assert!(
        !verified(&app, "ada@example.com").await,
        "a GET verifies nothing"
    );

    // Clicked in another browser (a phone's mail app): it works there too.
    let phone = new_client();
    assert!(use_link(&app, &phone, "/api/auth/verify", &link).await < 400);
    assert!(verified(&app, "ada@example.com").await);
    assert_eq!(whoami(&app, &ada).await["email_verified"], true);
    let next = app
        .post_form_as(&phone, "/api/flash/take", &[])
        .await
        .text()
        .await
        .expect("flash");
    assert!(next.contains("Your email address is verified"), "{next}");

    assert_eq!(
        use_link(&app, &new_client(), "/api/auth/verify", &link).await,
        410
    );
    let again = app
        .post_form_as(
            &new_client(),
            "/api/auth/verify",
            &[("token", token_of(&link).as_str())],
        )
        .await;
    let body: Value = again.json().await.expect("json");
    assert_eq!(body["Refused"]["reason"], "link_invalid", "{body}");
    for junk in ["not-a-token", ""] {
        let refused = app
            .post_form_as(&new_client(), "/api/auth/verify", &[("token", junk)])
            .await;
        assert_eq!(refused.status(), 410, "{junk:?}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_verification_link_works_for_a_day(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    register(&app, &new_client(), "ada@example.com").await;
    let mail = sink
        .wait_for("ada@example.com", "Confirm your email", MAIL_WAIT)
        .await;
    let lifetime: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - created_at)::float8 FROM account_links",
    )
    .fetch_one(&app.pool)
    .await
    .expect("link");
    assert_eq!(lifetime, 86_400.0);
    sqlx::query("UPDATE account_links SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .expect("age the link");
    let link = mail.link("/verify-email").expect("link");
    assert_eq!(
        use_link(&app, &new_client(), "/api/auth/verify", &link).await,
        410
    );
    assert!(!verified(&app, "ada@example.com").await);
}

/// A learner who has not verified their address enters a code (kept
/// pending), is told to verify when they open the course (nothing binds),
/// can have the link sent again (throttled), and after verifying opens the
/// course with the same pending code.
#[sqlx::test(migrations = "../migrations")]
async fn an_unverified_learner_is_told_to_verify_and_keeps_the_pending_code(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.throttle.mail_per_account = 2;
    let app = spawn_app_with(pool, settings).await;
    let owner = admin(&app).await;
    let course = course(&app, &owner, serde_json::json!({})).await;
    let code = issue(&app, &owner, course.share, 1).await.remove(0).1;

    let ada = new_client();
    register(&app, &ada, "ada@example.com").await;
    assert_eq!(
        enter_code(&app, &ada, &course.slug, &code).await.status(),
        200
    );
    let share: Value = app
        .get_as(&ada, &format!("/api/v1/s/{}", course.slug))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(share["me"]["pending"], true);
    assert_eq!(share["me"]["must_verify"], true);
    let html = page(&app, &ada, &format!("/s/{}", course.slug)).await;
    assert!(html.contains("Verify your email address"), "{html}");

    assert_eq!(
        error_of(open(&app, &ada, &course, None).await).await,
        (403, "email_not_verified".to_owned())
    );
    let refused = state_of(&app, course.share).await;
    assert_eq!((refused.bound, refused.records), (0, 0), "nothing bound");

    // "Send again": twice allowed, then throttled.
    for _ in 0..2 {
        let resent = app.post_form_as(&ada, "/api/auth/verify/resend", &[]).await;
        assert_eq!(resent.status(), 200);
        let message: String = resent.json().await.expect("json");
        assert!(message.contains("ada@example.com"), "{message}");
    }
    assert_eq!(
        app.post_form_as(&ada, "/api/auth/verify/resend", &[])
            .await
            .status(),
        429
    );
    let mails = sink.wait_for_count(3, MAIL_WAIT).await;
    assert!(
        mails
            .iter()
            .all(|m| m.subject == "Confirm your email address")
    );

    // Any of the links works; the pending code binds at the next opening.
    let link = mails[1].link("/verify-email").expect("link");
    assert!(use_link(&app, &ada, "/api/auth/verify", &link).await < 400);
    let opened = open(&app, &ada, &course, None).await;
    assert_eq!(opened.status(), 200);
    assert_eq!(opened.headers()["x-admitone-access"], "bound");
    assert_eq!(state_of(&app, course.share).await.bound, 1);
}

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

/// Notices follow the language an account last chose: at sign-in (the
/// request's language) and with the switcher.
#[sqlx::test(migrations = "../migrations")]
async fn an_accounts_language_follows_its_sign_in_and_the_switcher(pool: PgPool) {
    let app = crate::support::app::spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    let lang = || async {
        sqlx::query_scalar::<_, String>("SELECT lang FROM accounts WHERE email = 'ada@example.com'")
            .fetch_one(&app.pool)
            .await
            .expect("lang")
    };
    assert_eq!(lang().await, "en");
    let client = new_client();
    let signed_in = client
        .post(format!("{}/api/auth/login", app.address))
        .header("accept-language", "zh-CN,zh;q=0.9")
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("login");
    assert!(signed_in.status().as_u16() < 400);
    assert_eq!(lang().await, "zh-CN", "the sign-in's language");
    let switched = app.get_as(&client, "/lang/en?back=/").await;
    assert!(switched.status().is_redirection());
    assert_eq!(lang().await, "en", "the switcher's");
    // Signed out, the switch sets only the cookie.
    app.get_as(&new_client(), "/lang/zh-CN?back=/").await;
    assert_eq!(lang().await, "en");
}

/// Remembering the sign-in's language is best effort: when it cannot be
/// saved, the sign-in still succeeds (the session is already signed in).
#[sqlx::test(migrations = "../migrations")]
async fn a_sign_in_succeeds_when_its_language_cannot_be_saved(pool: PgPool) {
    let app = crate::support::app::spawn_app(pool).await;
    app.create_account("ada@example.com", PASSWORD).await;
    for statement in [
        "CREATE FUNCTION refuse_lang() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN RAISE EXCEPTION 'no language today'; END $$",
        "CREATE TRIGGER refuse_lang BEFORE UPDATE OF lang ON accounts
         FOR EACH ROW EXECUTE FUNCTION refuse_lang()",
    ] {
        sqlx::query(statement)
            .execute(&app.pool)
            .await
            .expect("sabotage");
    }
    let client = new_client();
    let signed_in = client
        .post(format!("{}/api/auth/login", app.address))
        .header("accept-language", "zh-CN")
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("login");
    assert!(signed_in.status().as_u16() < 400, "{}", signed_in.status());
    assert_eq!(whoami(&app, &client).await["email"], "ada@example.com");
}

/// Traditional Chinese end to end: a Hong Kong browser's sign-in makes the
/// account `zh-TW`, and the reset it asks for arrives in Traditional
/// characters. (Before zh-TW was a language of the outbox, its row was
/// refused by the table's CHECK.)
#[sqlx::test(migrations = "../migrations")]
async fn a_traditional_chinese_reader_gets_traditional_mail(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("mei@example.com", PASSWORD).await;
    let client = new_client();
    let signed_in = client
        .post(format!("{}/api/auth/login", app.address))
        .header("accept-language", "zh-HK,zh;q=0.9,en;q=0.5")
        .form(&[("email", "mei@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("login");
    assert!(signed_in.status().as_u16() < 400, "{}", signed_in.status());
    let lang: String =
        sqlx::query_scalar("SELECT lang FROM accounts WHERE email = 'mei@example.com'")
            .fetch_one(&app.pool)
            .await
            .expect("lang");
    assert_eq!(lang, "zh-TW");
    let asked = new_client()
        .post(format!("{}/api/auth/forgot", app.address))
        .header("accept-language", "zh-TW")
        .form(&[("email", "mei@example.com")])
        .send()
        .await
        .expect("forgot");
    assert!(asked.status().as_u16() < 400, "{}", asked.status());
    let mail = sink.wait_for("mei@example.com", "重設", MAIL_WAIT).await;
    assert!(mail.subject.contains("密碼"), "{}", mail.subject);
    assert!(
        !mail.text.contains("密码"),
        "Simplified characters: {}",
        mail.text
    );
    assert!(mail.html.contains("lang=\"zh-TW\""));
}
