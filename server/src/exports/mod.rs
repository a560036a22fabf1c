//! Every CSV a creator downloads (from the console's routes and from the
//! JSON API alike), built here once: a share's learners ([`learners`]),
//! its access records ([`records`]), its code table as filtered
//! ([`code_table`]), and the one-time CSV of freshly issued codes
//! ([`handover`]). Each is streamed a keyset page at a time, never all in
//! memory; UTF-8 with a byte-order mark (Excel then shows Chinese as
//! written), every text field quoted when it must be and defused so that a
//! spreadsheet never runs it as a formula ([`csv_field`]). The routes
//! authorise their caller first; nothing here checks who asks.

mod code_table;
pub mod handover;
mod learners;
mod records;

use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::Response,
};

pub use code_table::code_table;
pub use learners::learners;
pub use records::records;

use crate::problem::ApiError;

/// A CSV field, quoted when it must be, and never read as a formula by a
/// spreadsheet (a leading `=`, `+`, `-`, `@`, tab or carriage return gets a
/// quote mark).
pub fn csv_field(value: &str) -> String {
    // Spreadsheets start a formula with any of these (OWASP's list).
    let safe = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    if safe.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", safe.replace('"', "\"\""))
    } else {
        safe
    }
}

/// A streamed CSV download named `filename` (ASCII), never cached.
pub(crate) fn csv_response(body: Body, filename: &str) -> Result<Response, ApiError> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!("attachment; filename=\"{filename}\""))
            .map_err(anyhow::Error::new)?,
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_are_quoted_and_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        // Every character a spreadsheet starts a formula with (OWASP's
        // list: tab and carriage return too).
        for risky in ["+1", "-1", "@SUM(1)", "\tcmd", "\rcmd"] {
            let field = csv_field(risky);
            assert!(
                field.starts_with('\'') || field.starts_with("\"'"),
                "{risky:?} → {field:?}"
            );
        }
    }
}
