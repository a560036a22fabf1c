//! The versioned JSON API (`/api/v1`), for API callers and tests: the same
//! domain functions the pages use, with session-cookie authentication.

pub mod admin;
mod auth;
pub mod error;
pub mod learner;
pub mod schema;

use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{get, post},
};

use crate::startup::ServerState;

pub fn router() -> Router<ServerState> {
    Router::new()
        .route("/api/v1/openapi.json", get(schema::openapi_json))
        .route("/api/v1/docs", get(docs))
        .route("/api/v1/auth/register", post(auth::register))
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/auth/logout", post(auth::logout))
        .route(
            "/api/v1/tenants/{tenant_id}/shares",
            post(admin::create_share),
        )
        .route("/api/v1/shares/{share_id}/status", post(admin::set_status))
        .route(
            "/api/v1/shares/{share_id}/resources",
            // The storage layer enforces `storage.max_upload_bytes` while streaming.
            post(admin::upload_resource).layer(DefaultBodyLimit::disable()),
        )
        .route(
            "/api/v1/shares/{share_id}/codes",
            post(admin::issue_codes).get(admin::list_codes),
        )
        .route("/api/v1/codes/{code_id}/revoke", post(admin::revoke_code))
        .route("/api/v1/codes/{code_id}/unbind", post(admin::unbind_code))
        .route("/api/v1/s/{slug}", get(learner::share))
        .route("/api/v1/s/{slug}/code", post(learner::enter_code))
        .route(
            "/api/v1/s/{slug}/resources/{resource_id}/content",
            get(learner::content),
        )
}

/// `GET /api/v1/docs`: the API described for people, rendered on the
/// server from the same OpenAPI document (no script, nothing downloaded).
async fn docs() -> axum::response::Html<String> {
    use utoipa::OpenApi as _;
    let doc = schema::ApiDoc::openapi();
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut html = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>AdmitOne API</title><link rel=\"stylesheet\" href=\"/pkg/admitone.css\"></head>\
         <body><main class=\"container api-docs\"><h1>AdmitOne API</h1>",
    );
    if let Some(description) = &doc.info.description {
        html.push_str(&format!("<p class=\"lead\">{}</p>", escape(description)));
    }
    html.push_str(
        "<p>The machine-readable document: <a href=\"/api/v1/openapi.json\"><code>/api/v1/openapi.json</code></a> (OpenAPI 3). \
         Make a token under <em>API tokens</em> in the console.</p>",
    );
    for (path, item) in &doc.paths.paths {
        for (method, operation) in [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PUT", &item.put),
            ("DELETE", &item.delete),
        ] {
            let Some(operation) = operation else { continue };
            html.push_str(&format!(
                "<section class=\"card endpoint\"><h2><code>{method} {}</code></h2>",
                escape(path)
            ));
            if let Some(summary) = &operation.summary {
                html.push_str(&format!("<p>{}</p>", escape(summary)));
            }
            if let Some(description) = &operation.description {
                html.push_str(&format!("<p class=\"muted\">{}</p>", escape(description)));
            }
            html.push_str("<ul>");
            for (status, response) in &operation.responses.responses {
                let description = match response {
                    utoipa::openapi::RefOr::T(r) => r.description.clone(),
                    utoipa::openapi::RefOr::Ref(_) => String::new(),
                };
                html.push_str(&format!(
                    "<li><code>{}</code> {}</li>",
                    escape(status),
                    escape(&description)
                ));
            }
            html.push_str("</ul></section>");
        }
    }
    html.push_str("</main></body></html>");
    axum::response::Html(html)
}
