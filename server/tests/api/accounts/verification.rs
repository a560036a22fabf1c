//! Verifying the address of an account registered before registration
//! started from the address (such accounts remain), end to end with a real
//! SMTP server: its link verifies the address once, for a day; an
//! unverified learner is told to verify and keeps their pending code.

use serde_json::Value;
use sqlx::PgPool;

use super::{page, path_of, use_link, verified, whoami};
use crate::support::app::{new_client, spawn_app_with};
use crate::support::course::{
    PASSWORD, admin, course, enter_code, error_of, issue, open, state_of,
};
use crate::support::mail::{MAIL_WAIT, mail_settings, spawn_app_with_mail, token_of};

#[sqlx::test(migrations = "../migrations")]
async fn a_verification_link_verifies_an_older_accounts_address_once(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    let ada = new_client();
    app.create_unverified_account("ada@example.com", PASSWORD)
        .await;
    app.login_as(&ada, "ada@example.com", PASSWORD).await;
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
    app.create_unverified_account("ada@example.com", PASSWORD)
        .await;
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
    app.create_unverified_account("ada@example.com", PASSWORD)
        .await;
    app.login_as(&ada, "ada@example.com", PASSWORD).await;
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
