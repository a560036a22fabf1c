//! The admin console and what admins manage (through its pages and forms,
//! and through `/api/v1` with a session or a token): shares, resources,
//! batches, codes, imports, leaks, transfers, learners, team, tokens,
//! webhooks, branding, time zone, dashboard and audit log.

mod access_periods;
mod audit;
mod batches;
mod branding;
mod code_addresses;
mod code_expiry;
mod code_table;
mod codes;
mod dashboard;
mod forms;
mod imports;
mod leaks;
mod learners;
mod mailing_page;
mod one_time_codes;
mod resources;
mod revoke_and_replace;
mod sales;
mod shares;
mod shop_forms;
mod shops;
mod storage_quota;
mod team;
mod time_zone;
mod tokens;
mod transfers;
mod webhooks;

use sqlx::PgPool;

use crate::support::app::TestApp;
use crate::support::course::Admin;

/// Every plain code in `html` (the `XXXX-XXXX-XXXX` shape).
fn codes_in(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in html.match_indices("plain-code\">") {
        let start = i + "plain-code\">".len();
        if let Some(code) = html.get(start..start + 14) {
            found.push(code.to_owned());
        }
    }
    found
}

/// A digest of every row an admin form could change.
async fn snapshot(pool: &PgPool) -> String {
    sqlx::query_scalar(
        "SELECT concat_ws('|',
            (SELECT md5(coalesce(string_agg(s::text, ',' ORDER BY s.id), '')) FROM shares s),
            (SELECT md5(coalesce(string_agg(c::text, ',' ORDER BY c.id), '')) FROM auth_codes c),
            (SELECT md5(coalesce(string_agg(b::text, ',' ORDER BY b.id), '')) FROM code_batches b),
            (SELECT md5(coalesce(string_agg(l::text, ',' ORDER BY l.id), '')) FROM audit_log l))",
    )
    .fetch_one(pool)
    .await
    .expect("snapshot")
}

async fn call(app: &TestApp, admin: &Admin, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
    let response = admin
        .client
        .post(format!("{}{path}", app.address))
        .form(fields)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}
