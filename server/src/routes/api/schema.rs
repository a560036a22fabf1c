//! The JSON API's response bodies as types, and its OpenAPI 3 document
//! (`/api/v1/openapi.json`), generated from the handlers' annotations and
//! these types so that it cannot drift from what the server sends.

use serde::Serialize;
use utoipa::{
    Modify, OpenApi, ToSchema,
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
};
use uuid::Uuid;

/// Every error: a stable code, a message for people, the input field.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable: `invalid_input`, `not_found`, `code_bound`, `busy_retry`, …
    pub error: String,
    pub message: String,
    /// The input field the error is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// An account.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountBody {
    pub id: Uuid,
    pub email: String,
    pub display_name: String,
    /// A link mailed to `email` came back. Codes bind only to verified
    /// accounts unless the course's tenant waives it.
    pub email_verified: bool,
}

/// A share's new status.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusChanged {
    pub id: Uuid,
    pub status: model::ShareStatus,
}

/// One issued code: the plain code appears in this answer only.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedCode {
    pub id: Uuid,
    /// `XXXX-XXXX-XXXX`.
    pub code: String,
}

/// A new batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedBatch {
    pub batch_id: Uuid,
    pub count: usize,
    pub codes: Vec<IssuedCode>,
}

/// A page of codes; pass `next_after` as `after` for the next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodePage {
    pub codes: Vec<engine::code_admin::CodeView>,
    /// Set exactly when another page follows.
    pub next_after: Option<Uuid>,
    /// Whether another page follows (`next_after` is set).
    pub has_more: bool,
}

/// A code's state after an action.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodeChanged {
    pub id: Uuid,
    pub state: model::CodeState,
}

/// A share as learners see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicShare {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub status: model::ShareStatus,
}

/// Where the caller stands with a share.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    pub signed_in: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binding: Option<engine::settlement::BindingView>,
    /// A code was entered and waits for the first opening.
    pub pending: bool,
    /// The pending code binds only once the account's address is verified
    /// (opening now answers 403 `email_not_verified`).
    pub must_verify: bool,
}

/// A share's page data.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharePage {
    pub share: PublicShare,
    pub available: bool,
    /// Why not, when it is not (a stable word to match on).
    pub unavailable: Option<model::Unavailability>,
    /// The same in English, for people.
    pub unavailable_reason: Option<String>,
    pub resources: Vec<engine::resources::Resource>,
    pub me: Me,
}

/// What entering a code did.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodeEntered {
    /// `pending` (bound at the first opening) or `bound` (already yours).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The multipart upload form.
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    reason = "describes a multipart body for the OpenAPI document"
)]
pub struct UploadForm {
    /// Defaults to the file name.
    title: Option<String>,
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    file: String,
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
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new("admitone_session"))),
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
        super::auth::register,
        super::auth::login,
        super::auth::logout,
        super::admin::shares::create_share,
        super::admin::shares::set_status,
        super::admin::resources::upload_resource,
        super::admin::codes::issue_codes,
        super::admin::codes::list_codes,
        super::admin::codes::revoke_code,
        super::admin::codes::unbind_code,
        super::learner::share,
        super::learner::enter_code,
        super::learner::content,
    ),
    modifiers(&Security),
    tags(
        (name = "accounts", description = "Sign up, sign in, sign out"),
        (name = "admin", description = "A tenant's shares, resources and codes"),
        (name = "learner", description = "A share's page, code entry, content")
    )
)]
pub struct ApiDoc;

/// `GET /api/v1/openapi.json`.
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}
