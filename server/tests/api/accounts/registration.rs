//! Registering an account: the form takes an address and answers the same
//! for every address (no session, the same body, no account made); the
//! mail is what differs, and only the address's owner reads it. The
//! mailed link makes the account, once, and signs in. Bad input is
//! refused field by field and writes nothing; registration is throttled
//! per client address and per address registered.

use serde_json::{Value, json};
use sqlx::PgPool;

use super::{page, path_of, whoami};
use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with, test_settings};
use crate::support::course::PASSWORD;
use crate::support::mail::{
    MAIL_WAIT, finish_registration, mail_settings, signup_token, spawn_app_with_mail, token_of,
};

/// What a registration through the form answered, as a fresh browser
/// coming from `next`: the status, the headers that could tell addresses
/// apart (`Location` and the names of the cookies set, not their random
/// values), the body, and who the browser is afterwards.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    location: Option<String>,
    cookies: Vec<String>,
    header_names: Vec<String>,
    body: String,
    whoami: Value,
}

async fn register_from(app: &TestApp, email: &str, next: &str) -> Answer {
    let client = new_client();
    let response = app
        .post_form_as(
            &client,
            "/api/auth/register",
            &[("email", email), ("next", next)],
        )
        .await;
    let headers = response.headers();
    let mut cookies: Vec<String> = headers
        .get_all("set-cookie")
        .iter()
        .map(|c| {
            let c = c.to_str().expect("ascii");
            c[..c.find('=').unwrap_or(c.len())].to_owned()
        })
        .collect();
    cookies.sort();
    let mut header_names: Vec<String> = headers
        .keys()
        .map(|name| name.as_str().to_owned())
        .filter(|name| name != "date")
        .collect();
    header_names.sort();
    Answer {
        status: response.status().as_u16(),
        location: headers
            .get("location")
            .map(|l| l.to_str().expect("ascii").to_owned()),
        cookies,
        header_names,
        body: response.text().await.expect("body"),
        whoami: whoami(app, &client).await,
    }
}

/// Registers `email` through the form as a fresh browser: the status, the
/// body, and who the browser is afterwards.
async fn register_form(app: &TestApp, email: &str) -> (u16, String, Value) {
    let answer = register_from(app, email, "").await;
    (answer.status, answer.body, answer.whoami)
}

/// Registers `email` through the JSON API: the status and the body.
async fn register_api(app: &TestApp, email: &str) -> (u16, Value) {
    let response = new_client()
        .post(format!("{}/api/v1/auth/register", app.address))
        .json(&json!({ "email": email }))
        .send()
        .await
        .expect("register");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

async fn accounts(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

/// The old form answered "an account with this email already exists"
/// (422 on the email field) and signed a new address in at once: both told
/// a stranger which addresses have accounts. Now every address gets the
/// same answer, nobody is signed in, and no account is made; the owner of
/// a taken address is told by mail instead, and a new address gets the
/// link that makes its account.
#[sqlx::test(migrations = "../migrations")]
async fn registration_answers_the_same_for_every_address_and_mails_what_fits(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    app.create_account("taken@example.com", PASSWORD).await;
    let before = accounts(&app).await;

    // From a course's page and from an invitation's (whose path is kept in
    // the browser's session): the same answer for both addresses.
    for next in ["/s/rust-101", "/invitation?token=abc"] {
        let new = register_from(&app, "new@example.com", next).await;
        let taken = register_from(&app, "taken@example.com", next).await;
        assert!(new.status < 400, "{new:?}");
        assert_eq!(new, taken, "the same answer from {next}");
        assert_eq!(new.location.as_deref(), Some(next));
        assert_eq!(new.whoami, Value::Null, "nobody is signed in");
    }
    let (new_api, new_json) = register_api(&app, "New2@Example.com ").await;
    let (taken_api, taken_json) = register_api(&app, "TAKEN@example.com").await;
    assert_eq!((new_api, taken_api), (202, 202));
    assert_eq!(new_json, json!({ "email": "new2@example.com" }));
    assert_eq!(taken_json, json!({ "email": "taken@example.com" }));

    // The owner of the taken address hears of it, with the way to sign
    // in; nothing in that mail makes or changes an account.
    assert_eq!(sink.wait_for_count(6, MAIL_WAIT).await.len(), 6);
    let notes = sink.received_by("taken@example.com");
    assert_eq!(notes.len(), 3, "one note per registration");
    for note in &notes {
        assert_eq!(note.subject, "You already have an account");
        assert!(note.text.contains("/login"), "{}", note.text);
        assert!(note.text.contains("/forgot-password"), "{}", note.text);
        assert!(!note.text.contains("token="), "{}", note.text);
    }
    let links = sink.received_by("new@example.com");
    assert_eq!(links.len(), 2);
    for link in &links {
        assert_eq!(link.subject, "Finish creating your account");
        assert!(
            link.link("/register/finish?token=").is_some(),
            "{}",
            link.text
        );
    }
    assert_eq!(sink.received_by("new2@example.com").len(), 1);
    assert_eq!(accounts(&app).await, before, "no account is made");
    let taken_links: i64 =
        sqlx::query_scalar("SELECT count(*) FROM signup_links WHERE email = 'taken@example.com'")
            .fetch_one(&app.pool)
            .await
            .expect("links");
    assert_eq!(taken_links, 0, "a taken address gets no signup link");
}

/// The mailed link opens a form (opening it does nothing: mail scanners
/// open links); the form makes the account, verified, signs this browser
/// in and goes back to where registration started. The link works once,
/// and finishing ends the address's other open links.
#[sqlx::test(migrations = "../migrations")]
async fn the_mailed_link_makes_the_account_once_and_signs_in(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    for _ in 0..2 {
        let response = app
            .post_form_as(
                &new_client(),
                "/api/auth/register",
                &[("email", " Ada@Example.com "), ("next", "/s/rust-101")],
            )
            .await;
        assert!(response.status().as_u16() < 400, "{}", response.status());
    }
    let mails = sink.wait_for_count(2, MAIL_WAIT).await;
    let links: Vec<String> = mails
        .iter()
        .map(|m| path_of(&m.link("/register/finish?token=").expect("link")))
        .collect();
    let form = page(&app, &new_client(), &links[1]).await;
    assert!(form.contains("ada@example.com"), "{form}");
    assert!(form.contains("password_confirm"), "the form: {form}");
    assert_eq!(accounts(&app).await, 0, "opening the link makes nothing");

    let ada = new_client();
    let response = app
        .post_form_as(
            &ada,
            "/api/auth/register/finish",
            &[
                ("token", token_of(&links[1]).as_str()),
                ("display_name", " Ada Lovelace "),
                ("password", PASSWORD),
                ("password_confirm", PASSWORD),
            ],
        )
        .await;
    assert!(response.status().as_u16() < 400, "{}", response.status());
    assert_eq!(
        response
            .headers()
            .get("location")
            .map(|l| l.to_str().expect("ascii")),
        Some("/s/rust-101"),
        "back where registration started"
    );
    let me = whoami(&app, &ada).await;
    assert_eq!(me["email"], "ada@example.com");
    assert_eq!(me["email_verified"], true);
    assert_eq!(me["display_name"], "Ada Lovelace");
    let flash = app
        .post_form_as(&ada, "/api/flash/take", &[])
        .await
        .text()
        .await
        .expect("flash");
    assert!(flash.contains("Welcome, Ada Lovelace!"), "{flash}");

    // Both links are spent: the used one, and the other one with it.
    for link in &links {
        let again = finish_registration(&app, &new_client(), &token_of(link)).await;
        assert_eq!(again.status(), 410, "{link}");
        let body: Value = again.json().await.expect("json");
        assert_eq!(body["Refused"]["reason"], "link_invalid", "{body}");
        let spent = page(&app, &new_client(), link).await;
        assert!(spent.contains("Register again"), "{spent}");
    }
    assert_eq!(accounts(&app).await, 1);
    app.post_form_as(&ada, "/api/auth/logout", &[]).await;
    app.login_as(&ada, "ADA@example.com", PASSWORD).await;
}

/// A link whose address got an account while it waited (another link of
/// it finished first, or the operator made one) cannot make a second one:
/// "sign in instead", and nothing changes.
#[sqlx::test(migrations = "../migrations")]
async fn a_link_whose_address_has_an_account_by_now_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let token = signup_token(&app.pool, "ada@example.com").await;
    let account = app
        .create_account("ada@example.com", "the operator's password")
        .await;
    let client = new_client();
    let refused = finish_registration(&app, &client, &token).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["Refused"]["reason"], "email_taken", "{body}");
    assert_eq!(whoami(&app, &client).await, Value::Null);
    let (name, hash): (String, String) =
        sqlx::query_as("SELECT display_name, password_hash FROM accounts WHERE id = $1")
            .bind(account.0)
            .fetch_one(&app.pool)
            .await
            .expect("account");
    assert_eq!(name, "Test User");
    assert!(
        engine::accounts::verify_password(
            &engine::accounts::Password::parse(secrecy::SecretString::from(
                "the operator's password"
            ))
            .expect("password"),
            &hash
        )
        .await
        .expect("verify")
    );
}

/// An account registered before registration started from the address
/// never proved it: whoever registered it may not own the address. The
/// address's owner, by its link, takes the account over with a password
/// of their own; the registrant's sessions and password end.
#[sqlx::test(migrations = "../migrations")]
async fn the_address_owner_takes_over_an_account_that_never_proved_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    let squatter = new_client();
    let account = app
        .create_unverified_account("ada@example.com", "the squatter's password")
        .await;
    app.login_as(&squatter, "ada@example.com", "the squatter's password")
        .await;
    let (status, _, _) = register_form(&app, "ada@example.com").await;
    assert!(status < 400);
    let token = signup_token(&app.pool, "ada@example.com").await;
    let ada = new_client();
    let finished = finish_registration(&app, &ada, &token).await;
    assert!(finished.status().as_u16() < 400, "{}", finished.status());
    let me = whoami(&app, &ada).await;
    assert_eq!(me["email_verified"], true);
    let id: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'ada@example.com'")
            .fetch_one(&app.pool)
            .await
            .expect("account");
    assert_eq!(id, account.0, "the same account");
    assert_eq!(
        whoami(&app, &squatter).await,
        Value::Null,
        "the squatter is out"
    );
    let wrong = app
        .post_form_as(
            &new_client(),
            "/api/auth/login",
            &[
                ("email", "ada@example.com"),
                ("password", "the squatter's password"),
            ],
        )
        .await;
    assert_eq!(wrong.status(), 401);
    let open_links: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM account_links WHERE account_id = $1 AND used_at IS NULL",
    )
    .bind(account.0)
    .fetch_one(&app.pool)
    .await
    .expect("links");
    assert_eq!(open_links, 0, "the squatter's verification link ends");
}

/// A disabled account is never taken over, even if it never proved its
/// address: a registration of its address mails nothing (the account
/// cannot sign in), and a link made before it was disabled changes
/// nothing.
#[sqlx::test(migrations = "../migrations")]
async fn a_disabled_account_is_not_taken_over(pool: PgPool) {
    use engine::accounts::{Email, signup};
    let app = spawn_app(pool).await;
    let account = app
        .create_unverified_account("ada@example.com", PASSWORD)
        .await;
    let token = signup_token(&app.pool, "ada@example.com").await;
    sqlx::query("UPDATE accounts SET disabled_at = now() WHERE id = $1")
        .bind(account.0)
        .execute(&app.pool)
        .await
        .expect("disable");
    let requested = signup::request(
        &app.pool,
        &crate::support::mail::link_key(),
        &Email::parse("ada@example.com").expect("email"),
        model::Lang::En,
        None,
    )
    .await
    .expect("request");
    assert_eq!(requested, signup::Requested::Nothing);
    let refused = finish_registration(&app, &new_client(), &token).await;
    assert_eq!(refused.status(), 409);
    let (verified, disabled): (bool, bool) = sqlx::query_as(
        "SELECT email_verified_at IS NOT NULL, disabled_at IS NOT NULL FROM accounts WHERE id = $1",
    )
    .bind(account.0)
    .fetch_one(&app.pool)
    .await
    .expect("account");
    assert_eq!((verified, disabled), (false, true), "unchanged");
    let mails: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM mail_outbox WHERE template IN ('sign_up', 'account_exists')",
    )
    .fetch_one(&app.pool)
    .await
    .expect("mails");
    assert_eq!(
        mails, 1,
        "only the link made before the account was disabled"
    );
}

/// `next` is where the finished link goes: a course's path is kept with
/// the link (opened on another device, it still goes there); a path with
/// a query (an invitation's, whose secret is in it) only in the
/// registering browser's session, never in the database; anything that
/// is not a path on this site is dropped.
#[sqlx::test(migrations = "../migrations")]
async fn the_finished_link_goes_where_registration_started_and_nowhere_else(pool: PgPool) {
    let app = spawn_app(pool).await;
    // A course's page: kept with the link, so another browser gets there.
    register_in(&app, "course@example.com", "/s/rust-101").await;
    assert_eq!(
        finish_in(&app, new_client(), "course@example.com")
            .await
            .as_deref(),
        Some("/s/rust-101")
    );
    // An invitation's: only this browser comes back to it.
    let browser = register_in(
        &app,
        "invited@example.com",
        "/invitation?token=secret-token",
    )
    .await;
    assert_eq!(
        finish_in(&app, browser, "invited@example.com")
            .await
            .as_deref(),
        Some("/invitation?token=secret-token")
    );
    register_in(&app, "phone@example.com", "/invitation?token=secret-token").await;
    assert_eq!(
        finish_in(&app, new_client(), "phone@example.com")
            .await
            .as_deref(),
        Some("/")
    );
    let stored: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM signup_links WHERE next_path LIKE '%secret-token%'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("links");
    assert_eq!(stored, 0, "a link's secret is never stored");
    // Another site, however spelled: home instead.
    for (email, next) in [
        ("a@example.com", "//evil.example"),
        ("b@example.com", "https://evil.example"),
        ("c@example.com", "/\\evil.example"),
    ] {
        let browser = register_in(&app, email, next).await;
        assert_eq!(
            finish_in(&app, browser, email).await.as_deref(),
            Some("/"),
            "{next}"
        );
    }
}

/// Registers `email` from `next` in a fresh browser, which it returns.
async fn register_in(app: &TestApp, email: &str, next: &str) -> reqwest::Client {
    let client = new_client();
    let response = app
        .post_form_as(
            &client,
            "/api/auth/register",
            &[("email", email), ("next", next)],
        )
        .await;
    assert!(response.status().as_u16() < 400, "{}", response.status());
    client
}

/// Finishes the newest registration of `email` (made through the form, in
/// its own task) in `client`: where it sends the browser.
async fn finish_in(app: &TestApp, client: reqwest::Client, email: &str) -> Option<String> {
    use secrecy::ExposeSecret as _;
    let id = crate::support::mail::wait_until(
        &app.pool,
        &format!(
            "SELECT id::text FROM signup_links WHERE email = '{email}' ORDER BY created_at DESC LIMIT 1"
        ),
    )
    .await;
    let token = crate::support::mail::link_key()
        .token(
            engine::accounts::links::LinkPurpose::SignUp,
            id.parse().expect("uuid"),
        )
        .expose_secret()
        .to_owned();
    let response = finish_registration(app, &client, &token).await;
    assert!(response.status().as_u16() < 400, "{}", response.status());
    response
        .headers()
        .get("location")
        .map(|l| l.to_str().expect("ascii").to_owned())
}

/// Two links of one address finished at once make one account: the other
/// is told its link no longer works, never an error of the server.
#[sqlx::test(migrations = "../migrations")]
async fn two_links_of_one_address_finished_at_once_make_one_account(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.mail_per_ip = 1_000;
    let app = spawn_app_with(pool, settings).await;
    for round in 0..8 {
        let email = format!("twice{round}@example.com");
        let first = signup_token(&app.pool, &email).await;
        let second = signup_token(&app.pool, &email).await;
        let (one, other) = (new_client(), new_client());
        let (a, b) = tokio::join!(
            finish_registration(&app, &one, &first),
            finish_registration(&app, &other, &second),
        );
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        statuses.sort_unstable();
        assert!(statuses[0] < 400, "round {round}: {statuses:?}");
        assert!(
            statuses[1] == 409 || statuses[1] == 410,
            "round {round}: {statuses:?}"
        );
        let made: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts WHERE email = $1")
            .bind(&email)
            .fetch_one(&app.pool)
            .await
            .expect("count");
        assert_eq!(made, 1);
    }
}

/// A tagged address reaches the same mailbox: registering `ada+1@…`,
/// `ada+2@…` counts against `ada@…`'s limit.
#[sqlx::test(migrations = "../migrations")]
async fn tagged_addresses_share_their_mailbox_s_limit(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.register_per_email = 2;
    let app = spawn_app_with(pool, settings).await;
    for (i, email) in ["ada@example.com", "ada+1@example.com", "ada+2@example.com"]
        .into_iter()
        .enumerate()
    {
        let response = app
            .post_form_as(&new_client(), "/api/auth/register", &[("email", email)])
            .await;
        if i < 2 {
            assert!(
                response.status().as_u16() < 400,
                "{email}: {}",
                response.status()
            );
        } else {
            assert_eq!(response.status(), 429, "{email}");
        }
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn registration_rejects_bad_input_field_by_field_and_writes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    for email in [
        "not-an-email",
        // Addresses the mailer cannot send to as written: the mail would
        // never arrive (or would go elsewhere).
        "ada<victim@example.com>",
        "a..b@example.com",
        "ada@exa_mple.com",
        "",
    ] {
        let response = app
            .post_form("/api/auth/register", &[("email", email)])
            .await;
        assert_eq!(response.status(), 422, "{email}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["Invalid"]["field"], "email", "{body}");
        let (status, body) = register_api(&app, email).await;
        assert_eq!(status, 422, "{email}");
        assert_eq!(body["field"], "email", "{body}");
    }
    let malformed = new_client()
        .post(format!("{}/api/v1/auth/register", app.address))
        .header("content-type", "application/json")
        .body("{\"email\": ")
        .send()
        .await
        .expect("register");
    assert_eq!(malformed.status(), 400);

    let token = signup_token(&app.pool, "ada@example.com").await;
    let cases: [(&str, &str, &str, &str); 3] = [
        ("   ", PASSWORD, PASSWORD, "display_name"),
        ("Ada", "short", "short", "password"),
        ("Ada", PASSWORD, "different password", "password_confirm"),
    ];
    for (name, password, confirm, field) in cases {
        let response = app
            .post_form(
                "/api/auth/register/finish",
                &[
                    ("token", token.as_str()),
                    ("display_name", name),
                    ("password", password),
                    ("password_confirm", confirm),
                ],
            )
            .await;
        assert_eq!(response.status(), 422, "{name} {field}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["Invalid"]["field"], field, "{body}");
    }
    for junk in ["not-a-token", ""] {
        let refused = finish_registration(&app, &new_client(), junk).await;
        assert_eq!(refused.status(), 410, "{junk:?}");
    }
    assert_eq!(accounts(&app).await, 0, "nothing was made");
    assert_eq!(whoami(&app, &app.client).await, Value::Null);
    // The refusals left the link as it was: it still makes the account.
    let finished = finish_registration(&app, &new_client(), &token).await;
    assert!(finished.status().as_u16() < 400, "{}", finished.status());
}

/// Through the JSON API: 202 for the address, then the link's token makes
/// the account and signs in (201, the account).
#[sqlx::test(migrations = "../migrations")]
async fn the_api_registers_in_the_same_two_steps(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let (status, _) = register_api(&app, "ada@example.com").await;
    assert_eq!(status, 202);
    let mail = sink
        .wait_for("ada@example.com", "Finish creating your account", MAIL_WAIT)
        .await;
    let token = token_of(&mail.link("/register/finish?token=").expect("link"));
    let client = new_client();
    let made = client
        .post(format!("{}/api/v1/auth/register/finish", app.address))
        .json(&json!({ "token": token, "display_name": "Ada", "password": PASSWORD }))
        .send()
        .await
        .expect("finish");
    assert_eq!(made.status(), 201);
    let body: Value = made.json().await.expect("json");
    assert_eq!(body["email"], "ada@example.com");
    assert_eq!(body["email_verified"], true);
    assert_eq!(whoami(&app, &client).await["email"], "ada@example.com");
    let again = new_client()
        .post(format!("{}/api/v1/auth/register/finish", app.address))
        .json(&json!({ "token": token, "display_name": "Ada", "password": PASSWORD }))
        .send()
        .await
        .expect("finish");
    assert_eq!(again.status(), 410);
}

#[sqlx::test(migrations = "../migrations")]
async fn registration_is_throttled_per_ip(pool: PgPool) {
    let mut settings = test_settings(&crate::support::app::redis_url());
    settings.throttle.register_per_ip = 2;
    let app = spawn_app_with(pool, settings).await;
    for i in 0..3 {
        let email = format!("user{i}@example.com");
        let response = app
            .post_form_as(&new_client(), "/api/auth/register", &[("email", &email)])
            .await;
        if i < 2 {
            assert!(
                response.status().as_u16() < 400,
                "{i}: {}",
                response.status()
            );
        } else {
            assert_eq!(response.status(), 429);
            assert!(response.headers().contains_key("retry-after"));
        }
    }
    assert_refused_one_wrote_nothing(&app, "user2@example.com").await;
}

/// Every registration mails the address: a stranger cannot flood one
/// mailbox from many networks.
#[sqlx::test(migrations = "../migrations")]
async fn registration_is_throttled_per_address(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.throttle.register_per_email = 2;
    settings.server.trusted_proxy_hops = 1;
    let app = spawn_app_with(pool, settings).await;
    for i in 0..3 {
        let response = new_client()
            .post(format!("{}/api/auth/register", app.address))
            .header("x-forwarded-for", format!("198.51.100.{}", i + 1))
            .form(&[("email", "ada@example.com")])
            .send()
            .await
            .expect("register");
        if i < 2 {
            assert!(
                response.status().as_u16() < 400,
                "{i}: {}",
                response.status()
            );
        } else {
            assert_eq!(response.status(), 429, "the third, from a third network");
        }
    }
    assert_eq!(sink.wait_for_count(2, MAIL_WAIT).await.len(), 2);
    let other = app
        .post_form_as(
            &new_client(),
            "/api/auth/register",
            &[("email", "bob@example.com")],
        )
        .await;
    assert!(
        other.status().as_u16() < 400,
        "another address is not held up"
    );
}

/// A refused registration mailed nothing and made no link.
async fn assert_refused_one_wrote_nothing(app: &TestApp, email: &str) {
    // The accepted ones write in a task after the answer: wait for them.
    let deadline = tokio::time::Instant::now() + MAIL_WAIT;
    loop {
        let links: i64 = sqlx::query_scalar("SELECT count(*) FROM signup_links")
            .fetch_one(&app.pool)
            .await
            .expect("links");
        if links >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the accepted ones wrote {links}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let refused: i64 = sqlx::query_scalar("SELECT count(*) FROM signup_links WHERE email = $1")
        .bind(email)
        .fetch_one(&app.pool)
        .await
        .expect("links");
    assert_eq!(refused, 0, "the refused registration wrote nothing");
}

/// What the registrant of a taken-over account left open ends with it: a
/// move of its code to another account, which the registrant could still
/// confirm from the target's side, is cancelled.
#[sqlx::test(migrations = "../migrations")]
async fn a_taken_over_accounts_open_transfer_requests_end(pool: PgPool) {
    use crate::support::course::{admin, learners};
    use crate::support::transfers::{ask, bound_course, email_of};
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, _, (ann, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    let asked = ask(
        &app,
        &ann_client,
        &course,
        json!({ "email": email_of(bob.0) }),
    )
    .await;
    assert_eq!(asked.status(), 201);
    // Ann's account as registration made them before it started from the
    // address (her tenant let unverified learners bind).
    sqlx::query("UPDATE accounts SET email_verified_at = NULL WHERE id = $1")
        .bind(ann)
        .execute(&app.pool)
        .await
        .expect("unverify");
    let token = signup_token(&app.pool, &email_of(ann)).await;
    let finished = finish_registration(&app, &new_client(), &token).await;
    assert!(finished.status().as_u16() < 400, "{}", finished.status());
    let statuses: Vec<String> =
        sqlx::query_scalar("SELECT status FROM transfer_requests WHERE from_account = $1")
            .bind(ann)
            .fetch_all(&app.pool)
            .await
            .expect("requests");
    assert_eq!(statuses, ["cancelled"]);
    assert_eq!(
        whoami(&app, &ann_client).await,
        Value::Null,
        "the registrant is out"
    );
    crate::support::course::assert_invariants(&app, "after a takeover").await;
}
