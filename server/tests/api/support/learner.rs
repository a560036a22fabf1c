//! The learner's pages as a browser without JavaScript gets them: a page's
//! status and HTML, a plain form post redirected back, and which codes of a
//! share are bound to whom.

use reqwest::StatusCode;
use uuid::Uuid;

use crate::support::app::TestApp;

/// A plain HTML form post, as a browser without JavaScript sends it from
/// the page at `from`.
pub async fn post_page_form(
    app: &TestApp,
    client: &reqwest::Client,
    from: &str,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(format!("{}{path}", app.address))
        .header("accept", "text/html,application/xhtml+xml")
        .header("referer", format!("{}{from}", app.address))
        .header("origin", &app.address)
        .form(form)
        .send()
        .await
        .expect("request")
}

pub async fn page(app: &TestApp, client: &reqwest::Client, path: &str) -> (StatusCode, String) {
    let response = app.get_page_as(client, path).await;
    let status = response.status();
    (status, response.text().await.expect("body"))
}

pub async fn bound_codes(app: &TestApp, share: Uuid) -> Vec<(Uuid, Uuid)> {
    sqlx::query_as(
        "SELECT id, bound_principal FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL",
    )
    .bind(share)
    .fetch_all(&app.pool)
    .await
    .expect("bound codes")
}
