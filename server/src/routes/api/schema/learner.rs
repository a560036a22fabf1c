//! The bodies a learner's calls answer with: their account, a share's
//! page (the share, where they stand with it, its provider's branding)
//! and what entering a code did. Apart from the console's bodies because
//! they are what the public side of the API promises.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

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
