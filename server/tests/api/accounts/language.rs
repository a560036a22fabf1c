//! An account's language: it follows the sign-in's language and the
//! switcher (best effort: a sign-in succeeds when it cannot be saved), and
//! its mail comes in it, Traditional Chinese included.

use sqlx::PgPool;

use super::whoami;
use crate::support::app::new_client;
use crate::support::course::PASSWORD;
use crate::support::mail::{MAIL_WAIT, spawn_app_with_mail};

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
