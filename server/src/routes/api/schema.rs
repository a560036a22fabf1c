//! The JSON API's response bodies as types, and its OpenAPI 3 document
//! (`/api/v1/openapi.json`), generated from the handlers' annotations and
//! these types so that it cannot drift from what the server sends.

use serde::{Deserialize, Serialize};
use utoipa::{
    Modify, OpenApi, ToSchema,
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
};
use uuid::Uuid;

/// Every error, as RFC 9457 problem details (`application/problem+json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The kind of problem: `/api/v1/docs#problem-<kind>` (e.g.
    /// `#problem-conflict`), described on the docs page.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// The kind's summary, the same for every occurrence.
    pub title: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// What happened, for people (English).
    pub detail: String,
    /// Stable, what clients match on: `invalid_input`, `not_found`,
    /// `code_bound`, `busy_retry`, …
    pub code: String,
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
    pub codes: Vec<engine::code_table::CodeView>,
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
    /// The course provider's name, accent, logo and support address, to
    /// show with the course (`null` if it could not be read just now).
    pub brand: Option<BrandingView>,
}

/// What learners see of a tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct BrandingView {
    /// The tenant's name.
    pub name: String,
    /// `#rrggbb`; `null`: the default.
    pub accent: Option<String>,
    /// Shown below the courses and in learners' mails; `null`: none.
    pub support_email: Option<String>,
    /// Where the logo is served (it changes with every upload); `null`:
    /// no logo.
    pub logo_url: Option<String>,
}

impl From<engine::branding::Branding> for BrandingView {
    fn from(b: engine::branding::Branding) -> Self {
        Self {
            logo_url: b.logo_path(),
            name: b.name,
            accent: b.accent.map(|a| a.as_str().to_owned()),
            support_email: b.support_email,
        }
    }
}

/// What entering a code did.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodeEntered {
    /// `pending` (bound at the first opening) or `bound` (already yours).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A share in a tenant's list, with its code counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShareSummary {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub status: model::ShareStatus,
    /// Codes issued, bound to a learner, revoked.
    pub issued: i64,
    pub bound: i64,
    pub revoked: i64,
}

/// A page of shares, newest first; pass `next_after` as `after` for the
/// next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharesPage {
    pub shares: Vec<ShareSummary>,
    pub next_after: Option<Uuid>,
    /// Whether another page follows (`next_after` is set).
    pub has_more: bool,
}

/// A batch of codes.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchBody {
    pub id: Uuid,
    pub label: String,
    pub count: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// When its unused codes stop working (a code's own date overrides
    /// it); `null`: never.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<time::OffsetDateTime>,
}

/// A batch with its codes counted by state.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchDetail {
    pub id: Uuid,
    pub share_id: Uuid,
    pub label: String,
    /// How many codes were issued.
    pub count: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// When its unused codes stop working (a code's own date overrides
    /// it); `null`: never.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<time::OffsetDateTime>,
    /// Codes nobody has used yet and still usable (replacement codes
    /// included).
    pub unused: i64,
    /// Codes bound to a learner.
    pub bound: i64,
    /// Codes revoked (replaced ones included).
    pub revoked: i64,
    /// Codes nobody used before their date: refused to everyone.
    pub expired: i64,
}

/// A date to extend access to.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ExtendBody {
    /// RFC 3339, in the future.
    #[schema(value_type = String, format = DateTime)]
    pub until: String,
}

/// One learner's access after an extension.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessExtended {
    pub code_id: Uuid,
    /// When the learner's access now ends.
    #[serde(with = "time::serde::rfc3339")]
    pub access_ends: time::OffsetDateTime,
}

/// Everyone's access after an extension.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessExtendedAll {
    pub share_id: Uuid,
    /// Learners (codes bound and not revoked) whose extension moved to
    /// this date; those whose extension was already later are not counted.
    pub extended: u64,
}

/// A new expiry date for a batch or one code.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ExpiryBody {
    /// RFC 3339, in the future; `null` (or absent): never (for a code:
    /// its batch's date applies again).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<String>,
}

/// What revoking a batch's unused codes did.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchRevoked {
    pub batch_id: Uuid,
    /// How many unused codes were revoked now (bound codes keep working).
    pub revoked: u64,
}

/// A code found by its full text.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundCode {
    pub share_id: Uuid,
    pub code: engine::code_table::CodeView,
}

/// A learner bound in a share.
#[derive(Debug, Serialize, ToSchema)]
pub struct LearnerBody {
    /// The code they hold.
    pub code_id: Uuid,
    pub account_id: Uuid,
    pub email: String,
    pub hint: String,
    #[serde(with = "time::serde::rfc3339")]
    pub bound_at: time::OffsetDateTime,
    pub accesses: i64,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_access: Option<time::OffsetDateTime>,
    /// The tenant suspended this learner.
    pub suspended: bool,
    /// When their access ends (the share's access period from their first
    /// access, or a later extension); `null`: for good.
    #[serde(with = "time::serde::rfc3339::option")]
    pub access_ends: Option<time::OffsetDateTime>,
}

/// A page of a share's learners; pass `next_after` as `after`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LearnersPage {
    pub learners: Vec<LearnerBody>,
    pub next_after: Option<Uuid>,
    pub has_more: bool,
}

/// One counted access.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordBody {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub granted_at: time::OffsetDateTime,
    pub email: String,
    pub hint: String,
    /// The resource's title (`(deleted)` once removed).
    pub resource: String,
    /// This access bound the code.
    pub bound_now: bool,
}

/// A page of access records, newest first; pass `next_before` as
/// `before` for the next one.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordsPage {
    pub records: Vec<RecordBody>,
    /// An opaque cursor.
    pub next_before: Option<String>,
    pub has_more: bool,
}

/// One audit log entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditBody {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// Who did it (none for the system).
    pub actor_email: Option<String>,
    /// `code.revoked`, `code.unbound`, `share.created`, …
    pub action: String,
    pub target_type: String,
    pub target_id: Option<Uuid>,
    pub reason: Option<String>,
    /// What the action changed.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

/// A page of the audit log, newest first; pass `next_before` as `before`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    pub entries: Vec<AuditBody>,
    /// An opaque cursor.
    pub next_before: Option<String>,
    pub has_more: bool,
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
        super::console::shares::list_shares,
        super::console::shares::create_share,
        super::console::shares::get_share,
        super::console::shares::update_share,
        super::console::shares::set_status,
        super::console::resources::list_resources,
        super::console::resources::upload_resource,
        super::console::batches::list_batches,
        super::console::batches::get_batch,
        super::console::batches::codes_csv,
        super::console::batches::revoke_unused,
        super::console::batches::set_expiry,
        super::console::codes::issue_codes,
        super::console::imports::import_codes,
        super::console::imports::import_report,
        super::console::codes::list_codes,
        super::console::codes::get_code,
        super::console::codes::find_code,
        super::console::codes::revoke_code,
        super::console::codes::unbind_code,
        super::console::codes::replace_code,
        super::console::codes::set_code_expiry,
        super::console::leaks::revoke_and_replace,
        super::console::branding::get_branding,
        super::console::branding::put_branding,
        super::console::branding::put_logo,
        super::console::branding::delete_logo,
        super::console::transfers::list_transfers,
        super::console::transfers::approve_transfer,
        super::console::transfers::refuse_transfer,
        super::console::access::extend_one,
        super::console::access::extend_all,
        super::console::activity::list_learners,
        super::console::activity::list_records,
        super::console::activity::learners_csv,
        super::console::activity::records_csv,
        super::console::activity::audit_log,
        super::console::integrations::list_tokens,
        super::console::integrations::create_token,
        super::console::integrations::revoke_token,
        super::console::integrations::list_webhooks,
        super::console::integrations::create_webhook,
        super::console::integrations::get_webhook,
        super::console::integrations::update_webhook,
        super::console::integrations::disable_webhook,
        super::console::integrations::list_deliveries,
        super::console::integrations::redeliver,
        super::learner::share,
        super::learner::enter_code,
        super::learner::open,
        super::learner::content,
        super::transfers::request_transfer,
        super::transfers::latest_transfer,
        super::transfers::cancel_transfer,
        super::transfers::confirm_transfer,
    ),
    modifiers(&Security, &Problems),
    tags(
        (name = "accounts", description = "Sign up, sign in, sign out"),
        (name = "admin", description = "A tenant's shares, resources, batches, codes, learners, access records and audit log"),
        (name = "integrations", description = "API tokens and webhook endpoints"),
        (name = "learner", description = "A share's page, code entry, content")
    )
)]
pub struct ApiDoc;

/// `GET /api/v1/openapi.json`.
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}

/// A learner's request to move their code to another account.
#[derive(Debug, Serialize, ToSchema)]
pub struct TransferView {
    pub id: Uuid,
    pub share_id: Uuid,
    /// The course's title.
    pub course: String,
    pub code_id: Uuid,
    /// The code's last characters.
    pub code_hint: String,
    /// The learner who held the code and asked.
    pub from_account: Uuid,
    pub from_email: String,
    /// The address the confirmation link went to.
    pub to_email: String,
    /// The account that confirmed with it (`null` until then).
    pub to_account: Option<Uuid>,
    /// The learner's word for the course's team (may be empty).
    pub note: String,
    pub status: model::TransferStatus,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    /// The confirmation link works until then.
    #[serde(with = "time::serde::rfc3339")]
    pub link_expires_at: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub confirmed_at: Option<time::OffsetDateTime>,
    /// Approved, refused or cancelled then.
    #[serde(with = "time::serde::rfc3339::option")]
    pub decided_at: Option<time::OffsetDateTime>,
    /// Who decided (an admin; the learner for a cancellation). `null` in
    /// the learner's own answers: the team's addresses stay the team's.
    pub decided_by_email: Option<String>,
    /// The admin's reason for a refusal (quoted in both learners' mail),
    /// or note on an approval (the audit log's; `null` for learners).
    pub decision_reason: Option<String>,
}

impl TransferView {
    /// What the learner who asked is shown of their request: no admin's
    /// address, and only a refusal's reason.
    pub fn for_learner(transfer: engine::transfers::Transfer) -> Self {
        let refused = transfer.status == model::TransferStatus::Refused;
        Self {
            decided_by_email: None,
            decision_reason: transfer.decision_reason.clone().filter(|_| refused),
            ..Self::from(transfer)
        }
    }
}

impl From<engine::transfers::Transfer> for TransferView {
    fn from(t: engine::transfers::Transfer) -> Self {
        Self {
            id: t.id,
            share_id: t.share,
            course: t.course,
            code_id: t.code,
            code_hint: t.code_hint,
            from_account: t.from_account.0,
            from_email: t.from_email,
            to_email: t.to_email,
            to_account: t.to_account.map(|a| a.0),
            note: t.note,
            status: t.status,
            created_at: t.created_at,
            link_expires_at: t.link_expires_at,
            confirmed_at: t.confirmed_at,
            decided_at: t.decided_at,
            decided_by_email: t.decided_by_email,
            decision_reason: t.decision_reason,
        }
    }
}
