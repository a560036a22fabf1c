//! The OpenAPI document itself (`ApiDoc`): its operations, its security
//! schemes, and the problem answers every operation can give, added in
//! one place ([`Problems`]) rather than on every handler. Apart from the
//! body types so that the document's assembly reads on its own.

use utoipa::{
    Modify, OpenApi,
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
};

/// Every 4xx and 5xx answer is `application/problem+json` (RFC 9457): the
/// handlers' annotations say `body = ErrorBody`, this names its media type
/// once for all of them. It also adds the answers every operation can give
/// whatever it does: 503 (a dependency away) everywhere, and 429 (the
/// token's allowance spent) wherever a token is accepted.
struct Problems;

fn problem_response(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            crate::problem::PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
        .into()
}

impl Modify for Problems {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                let takes_token = operation.security.as_ref().is_some_and(|all| {
                    serde_json::to_string(all).is_ok_and(|json| json.contains("\"bearer\""))
                });
                let responses = &mut operation.responses.responses;
                if takes_token && !responses.contains_key("429") {
                    responses.insert(
                        "429".to_owned(),
                        problem_response("This token's calls per minute are spent (`rate_limited`): `Retry-After` says when to come back"),
                    );
                }
                if !responses.contains_key("503") {
                    responses.insert(
                        "503".to_owned(),
                        problem_response("A dependency cannot serve now (`unavailable`): retry after `Retry-After`"),
                    );
                }
                for (status, response) in responses.iter_mut() {
                    let utoipa::openapi::RefOr::T(response) = response else {
                        continue;
                    };
                    if !(status.starts_with('4') || status.starts_with('5')) {
                        continue;
                    }
                    if let Some(content) = response.content.shift_remove("application/json") {
                        response
                            .content
                            .insert(crate::problem::PROBLEM_JSON.to_owned(), content);
                    }
                }
            }
        }
    }
}

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A tenant API token (`a1t_…`), made in the console"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "admitone_session",
                "The session a sign-in opens; over https its cookie is named __Host-admitone_session",
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "AdmitOne API",
        description = "Shares, resources and access codes for course creators; code entry and content for learners. Admin endpoints take an API token (`Authorization: Bearer a1t_…`) or an admin's session cookie.",
        version = "1"
    ),
    paths(
        crate::routes::api::auth::register,
        crate::routes::api::auth::finish_registration,
        crate::routes::api::auth::login,
        crate::routes::api::auth::logout,
        crate::routes::api::console::shares::list_shares,
        crate::routes::api::console::shares::create_share,
        crate::routes::api::console::shares::get_share,
        crate::routes::api::console::shares::update_share,
        crate::routes::api::console::shares::set_status,
        crate::routes::api::console::resources::list_resources,
        crate::routes::api::console::resources::upload_resource,
        crate::routes::api::console::resources::change_resource,
        crate::routes::api::console::resources::remove_resource,
        crate::routes::api::console::batches::list_batches,
        crate::routes::api::console::batches::get_batch,
        crate::routes::api::console::batches::codes_csv,
        crate::routes::api::console::batches::revoke_unused,
        crate::routes::api::console::batches::set_expiry,
        crate::routes::api::console::mailings::send_codes,
        crate::routes::api::console::mailings::list_recipients,
        crate::routes::api::console::mailings::resend,
        crate::routes::api::console::mailings::revoke_and_resend,
        crate::routes::api::console::codes::issue_codes,
        crate::routes::api::console::orders::place_order,
        crate::routes::api::console::orders::get_order,
        crate::routes::api::console::refunds::refund_order,
        crate::routes::api::console::refunds::get_refund_policy,
        crate::routes::api::console::refunds::set_refund_policy,
        crate::routes::api::console::imports::import_codes,
        crate::routes::api::console::imports::import_report,
        crate::routes::api::console::codes::list_codes,
        crate::routes::api::console::codes::get_code,
        crate::routes::api::console::codes::find_code,
        crate::routes::api::console::codes::revoke_code,
        crate::routes::api::console::codes::unbind_code,
        crate::routes::api::console::codes::replace_code,
        crate::routes::api::console::codes::set_code_expiry,
        crate::routes::api::console::leaks::revoke_and_replace,
        crate::routes::api::console::branding::get_branding,
        crate::routes::api::console::branding::put_branding,
        crate::routes::api::console::branding::put_logo,
        crate::routes::api::console::branding::delete_logo,
        crate::routes::api::console::transfers::list_transfers,
        crate::routes::api::console::transfers::approve_transfer,
        crate::routes::api::console::transfers::refuse_transfer,
        crate::routes::api::console::access::extend_one,
        crate::routes::api::console::access::extend_all,
        crate::routes::api::console::activity::list_learners,
        crate::routes::api::console::activity::list_records,
        crate::routes::api::console::activity::learners_csv,
        crate::routes::api::console::activity::records_csv,
        crate::routes::api::console::activity::audit_log,
        crate::routes::api::console::integrations::list_tokens,
        crate::routes::api::console::integrations::create_token,
        crate::routes::api::console::integrations::revoke_token,
        crate::routes::api::console::integrations::list_webhooks,
        crate::routes::api::console::integrations::create_webhook,
        crate::routes::api::console::integrations::get_webhook,
        crate::routes::api::console::integrations::update_webhook,
        crate::routes::api::console::integrations::disable_webhook,
        crate::routes::api::console::integrations::list_deliveries,
        crate::routes::api::console::integrations::redeliver,
        crate::routes::api::console::shops::list_shops,
        crate::routes::api::console::shops::connect_shop,
        crate::routes::api::console::shops::get_shop,
        crate::routes::api::console::shops::rotate_secret,
        crate::routes::api::console::shops::disable_shop,
        crate::routes::api::console::shops::map_product,
        crate::routes::api::console::shops::unmap_product,
        crate::routes::api::console::shops::list_events,
        crate::routes::api::shop_hooks::receive,
        crate::routes::api::learner::share,
        crate::routes::api::learner::enter_code,
        crate::routes::api::learner::open,
        crate::routes::api::learner::content,
        crate::routes::api::transfers::request_transfer,
        crate::routes::api::transfers::latest_transfer,
        crate::routes::api::transfers::cancel_transfer,
        crate::routes::api::transfers::confirm_transfer,
    ),
    modifiers(&Security, &Problems),
    tags(
        (name = "accounts", description = "Sign up, sign in, sign out"),
        (name = "admin", description = "A tenant's shares, resources, batches, codes, learners, access records and audit log"),
        (name = "integrations", description = "API tokens, webhook endpoints, and the shops whose webhooks place orders"),
        (name = "learner", description = "A share's page, code entry, content"),
        (name = "shops", description = "The shops' own webhooks, verified by their signatures")
    )
)]
pub struct ApiDoc;

/// `GET /api/v1/openapi.json`.
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}
