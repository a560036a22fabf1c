//! The versioned JSON API (`/api/v1`), for API callers and tests: the same
//! domain functions the pages use, with session-cookie authentication.

mod auth;
pub mod console;
mod docs;
pub mod idempotency;
pub mod learner;
pub mod schema;
mod shop_hooks;
mod transfers;

use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{any, get, post},
};
use engine::outcome::ErrorKind;

use crate::problem::ApiError;
use crate::state::ServerState;

pub fn router() -> Router<ServerState> {
    Router::new()
        .route("/api/v1/openapi.json", get(schema::openapi_json))
        .route("/api/v1/docs", get(docs::page))
        .route("/api/v1/auth/register", post(auth::register))
        .route(
            "/api/v1/auth/register/finish",
            post(auth::finish_registration),
        )
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/auth/logout", post(auth::logout))
        .route(
            "/api/v1/tenants/{tenant_id}/shares",
            post(console::create_share).get(console::shares::list_shares),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/codes/find",
            post(console::codes::find_code),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/audit",
            get(console::activity::audit_log),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/tokens",
            get(console::integrations::list_tokens).post(console::integrations::create_token),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/tokens/{token_id}/revoke",
            post(console::integrations::revoke_token),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/webhooks",
            get(console::integrations::list_webhooks).post(console::integrations::create_webhook),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/webhooks/deliveries",
            get(console::integrations::list_deliveries),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}",
            get(console::integrations::get_webhook).put(console::integrations::update_webhook),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}/disable",
            post(console::integrations::disable_webhook),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}/deliveries/{event_id}/redeliver",
            post(console::integrations::redeliver),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/shops",
            get(console::shops::list_shops).post(console::shops::connect_shop),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}",
            get(console::shops::get_shop),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/secret",
            post(console::shops::rotate_secret),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/disable",
            post(console::shops::disable_shop),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/products/{product}",
            axum::routing::put(console::shops::map_product).delete(console::shops::unmap_product),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/shops/{shop_id}/events",
            get(console::shops::list_events),
        )
        .route(
            "/hooks/shops/{tenant_id}/{shop_id}",
            post(shop_hooks::receive)
                .layer(DefaultBodyLimit::max(engine::shops::intake::MAX_BODY_BYTES)),
        )
        .route(
            "/api/v1/shares/{share_id}",
            get(console::shares::get_share).put(console::shares::update_share),
        )
        .route(
            "/api/v1/shares/{share_id}/status",
            post(console::set_status),
        )
        .route(
            "/api/v1/shares/{share_id}/resources",
            // The storage layer enforces `storage.max_upload_bytes` while streaming.
            post(console::upload_resource)
                .layer(DefaultBodyLimit::disable())
                .get(console::resources::list_resources),
        )
        .route(
            "/api/v1/shares/{share_id}/resources/{resource_id}",
            post(console::resources::change_resource).delete(console::resources::remove_resource),
        )
        .route(
            "/api/v1/shares/{share_id}/batches",
            get(console::batches::list_batches),
        )
        .route(
            "/api/v1/shares/{share_id}/imports",
            post(console::imports::import_codes)
                .layer(DefaultBodyLimit::max(engine::imports::MAX_REQUEST_BYTES)),
        )
        .route(
            "/api/v1/batches/{batch_id}/import",
            get(console::imports::import_report),
        )
        .route(
            "/api/v1/batches/{batch_id}",
            get(console::batches::get_batch),
        )
        .route(
            "/api/v1/batches/{batch_id}/codes.csv",
            get(console::batches::codes_csv),
        )
        .route(
            "/api/v1/batches/{batch_id}/revoke-unused",
            post(console::batches::revoke_unused),
        )
        .route(
            "/api/v1/batches/{batch_id}/expiry",
            post(console::batches::set_expiry),
        )
        .route(
            "/api/v1/batches/{batch_id}/send",
            // 10,000 addresses of up to 254 characters, quoted.
            post(console::mailings::send_codes).layer(DefaultBodyLimit::max(4 << 20)),
        )
        .route(
            "/api/v1/batches/{batch_id}/recipients",
            get(console::mailings::list_recipients),
        )
        .route(
            "/api/v1/codes/{code_id}/resend",
            post(console::mailings::resend),
        )
        .route(
            "/api/v1/codes/{code_id}/revoke-and-resend",
            post(console::mailings::revoke_and_resend),
        )
        .route(
            "/api/v1/shares/{share_id}/orders",
            post(console::orders::place_order),
        )
        .route(
            "/api/v1/orders/{source}/{order_id}",
            get(console::orders::get_order),
        )
        .route(
            "/api/v1/orders/{source}/{order_id}/refund",
            post(console::refunds::refund_order),
        )
        .route(
            "/api/v1/shares/{share_id}/refund-policy",
            get(console::refunds::get_refund_policy).put(console::refunds::set_refund_policy),
        )
        .route(
            "/api/v1/shares/{share_id}/learners",
            get(console::activity::list_learners),
        )
        .route(
            "/api/v1/shares/{share_id}/records",
            get(console::activity::list_records),
        )
        .route(
            "/api/v1/shares/{share_id}/learners.csv",
            get(console::activity::learners_csv),
        )
        .route(
            "/api/v1/shares/{share_id}/records.csv",
            get(console::activity::records_csv),
        )
        .route(
            "/api/v1/shares/{share_id}/codes",
            post(console::issue_codes).get(console::list_codes),
        )
        .route("/api/v1/codes/{code_id}", get(console::codes::get_code))
        .route("/api/v1/codes/{code_id}/revoke", post(console::revoke_code))
        .route("/api/v1/codes/{code_id}/unbind", post(console::unbind_code))
        .route(
            "/api/v1/codes/{code_id}/expiry",
            post(console::codes::set_code_expiry),
        )
        .route(
            "/api/v1/codes/{code_id}/extend-access",
            post(console::access::extend_one),
        )
        .route(
            "/api/v1/shares/{share_id}/extend-access",
            post(console::access::extend_all),
        )
        .route(
            "/api/v1/codes/{code_id}/replace",
            post(console::codes::replace_code),
        )
        .route(
            "/api/v1/codes/{code_id}/revoke-and-replace",
            post(console::leaks::revoke_and_replace),
        )
        .route("/api/v1/s/{slug}", get(learner::share))
        .route("/api/v1/s/{slug}/code", post(learner::enter_code))
        .route(
            "/api/v1/s/{slug}/transfer",
            post(transfers::request_transfer)
                .get(transfers::latest_transfer)
                .delete(transfers::cancel_transfer),
        )
        .route(
            "/api/v1/transfers/confirm",
            post(transfers::confirm_transfer),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/branding",
            get(console::branding::get_branding).put(console::branding::put_branding),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/branding/logo",
            axum::routing::put(console::branding::put_logo)
                .delete(console::branding::delete_logo)
                .layer(axum::extract::DefaultBodyLimit::max(
                    console::branding::MAX_LOGO_BODY,
                )),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/transfers",
            get(console::transfers::list_transfers),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/transfers/{transfer_id}/approve",
            post(console::transfers::approve_transfer),
        )
        .route(
            "/api/v1/tenants/{tenant_id}/transfers/{transfer_id}/refuse",
            post(console::transfers::refuse_transfer),
        )
        .route(
            "/api/v1/s/{slug}/resources/{resource_id}/open",
            post(learner::open),
        )
        .route(
            "/api/v1/s/{slug}/resources/{resource_id}/content",
            get(learner::content),
        )
        // Every answer under /api/v1 is JSON, its errors problem details:
        // a path no route has, and a method a route does not take, too.
        .route("/api/v1/{*rest}", any(no_such_route))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(problems_only))
}

/// What the router or an extractor answers on its own (a path segment
/// that is not UTF-8, a body over the limit) becomes a problem document
/// too, with the same status.
async fn problems_only(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::{http::StatusCode, response::IntoResponse as _};
    let response = next.run(request).await;
    let is_problem = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| {
            v.as_bytes()
                .starts_with(crate::problem::PROBLEM_JSON.as_bytes())
        });
    if is_problem || !response.status().is_client_error() {
        return response;
    }
    let (kind, code, detail) = match response.status() {
        StatusCode::BAD_REQUEST => (
            ErrorKind::Malformed,
            "malformed_request",
            "the request could not be read",
        ),
        StatusCode::NOT_FOUND => (ErrorKind::NotFound, "not_found", "not found"),
        StatusCode::METHOD_NOT_ALLOWED => (
            ErrorKind::MethodNotAllowed,
            "method_not_allowed",
            "this endpoint does not take this method",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            ErrorKind::TooLarge,
            "too_large",
            "the request body is too large",
        ),
        _ => return response,
    };
    let (mut parts, _) = response.into_parts();
    let problem = ApiError::new(kind, code, detail).into_response();
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let (problem_parts, body) = problem.into_parts();
    parts.headers.insert(
        axum::http::header::CONTENT_TYPE,
        problem_parts.headers[axum::http::header::CONTENT_TYPE].clone(),
    );
    axum::response::Response::from_parts(parts, body)
}

async fn no_such_route() -> ApiError {
    ApiError::new(
        ErrorKind::NotFound,
        "no_such_route",
        "no such endpoint: /api/v1/docs lists them",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorKind::MethodNotAllowed,
        "method_not_allowed",
        "this endpoint does not take this method: /api/v1/docs lists what it takes",
    )
}
