//! The admin console as a browser without JavaScript uses it: a plain form
//! post from a page, a page's status and HTML, a batch issued through the
//! console's form, and the rows of a CSV download.

use reqwest::StatusCode;

use crate::support::course::Admin;

/// A plain HTML form post to a server function, from the page `from`.
pub async fn form(
    address: &str,
    client: &reqwest::Client,
    from: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(format!("{address}{path}"))
        .header("accept", "text/html")
        .header("referer", format!("{address}{from}"))
        .header("origin", address)
        .form(fields)
        .send()
        .await
        .expect("request")
}

pub async fn page(address: &str, client: &reqwest::Client, path: &str) -> (StatusCode, String) {
    let response = client
        .get(format!("{address}{path}"))
        .header("accept", "text/html")
        .send()
        .await
        .expect("request");
    (response.status(), response.text().await.expect("body"))
}

/// Issues a small batch through the console form; returns the result
/// page's path and the batch id.
pub async fn issue_by_form(
    address: &str,
    admin: &Admin,
    share: uuid::Uuid,
    count: &str,
) -> (String, uuid::Uuid) {
    let share_page = format!("/admin/t/{}/s/{share}", admin.tenant);
    let response = form(
        address,
        &admin.client,
        &share_page,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &admin.tenant.to_string()),
            ("share_id", &share.to_string()),
            ("count", count),
            ("label", "Big"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let result_page = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let batch = result_page
        .rsplit('/')
        .next()
        .expect("batch")
        .parse()
        .expect("batch id");
    (result_page, batch)
}

/// The CSV's rows after its header, which must be `header` behind a BOM.
pub async fn csv_rows(response: reqwest::Response, header: &str) -> Vec<String> {
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/csv; charset=utf-8"
    );
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = response.text().await.expect("csv");
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some(format!("\u{feff}{header}").as_str()));
    lines.map(str::to_owned).collect()
}
