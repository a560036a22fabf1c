//! Accounts: registration, signing in and out, sessions, passwords, the
//! address's verification and change, resets, the account's language and
//! the notices it gets by mail. Shared here: the passwords, signing up,
//! who a client is, and following a mailed link.

mod change_of_address;
mod language;
mod notices;
mod password;
mod registration;
mod reset;
mod sessions;
mod sign_in;
mod sign_out;
mod verification;

use serde_json::Value;

use crate::support::app::TestApp;
use crate::support::mail::token_of;

const NEW_PASSWORD: &str = "a brand new password";

/// Signs `client` up as `email` (signed in afterwards, the address
/// verified), in English.
async fn register(app: &TestApp, client: &reqwest::Client, email: &str) {
    crate::support::mail::sign_up(app, client, email).await;
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
