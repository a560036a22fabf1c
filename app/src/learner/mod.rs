//! The learner's side in the browser: a share's page, code entry, opening
//! a resource, and "My courses".
//!
//! Server functions here are thin adapters over `service::learner` (the
//! same use cases the JSON API calls): they read the session, call the use
//! case, and shape its outcome for the pages (localised text, human
//! dates). Each has a stable endpoint under `/api/learner/`.

use crate::i18n::Msg;
use leptos::prelude::*;
use model::ResourceKind;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;
use crate::i18n::t;

pub mod transfers;

/// A share's landing page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharePage {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub resources: Vec<ResourceItem>,
    /// Why the course cannot be used now (paused, closed, full), if so.
    pub unavailable: Option<String>,
    pub me: LearnerState,
    /// Whether codes imported from another system can be typed here (the
    /// browser's check then lets their formats through).
    pub foreign_codes: bool,
    /// The course provider's branding.
    pub brand: Brand,
}

/// A tenant's branding on its learners' pages (`engine::branding`): never
/// another tenant's, as it comes with the share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brand {
    /// The tenant's name.
    pub name: String,
    /// `#rrggbb` (checked on the server).
    pub accent: Option<String>,
    /// Where its logo is served (`/brand/logo/{id}`).
    pub logo_url: Option<String>,
    pub support_email: Option<String>,
}

#[cfg(feature = "ssr")]
impl From<Option<engine::branding::Branding>> for Brand {
    fn from(branding: Option<engine::branding::Branding>) -> Self {
        branding.map_or_else(Self::default, |b| Self {
            logo_url: b.logo_path(),
            accent: b.accent.map(|a| a.as_str().to_owned()),
            name: b.name,
            support_email: b.support_email,
        })
    }
}

impl Brand {
    /// The stylesheet that sets the page's `--accent` to the brand's
    /// (`/brand/v1/accent/{rrggbb}.css`, lower case): a file from our
    /// origin, as the pages' Content-Security-Policy allows no inline
    /// style.
    pub fn stylesheet(&self) -> Option<String> {
        self.accent
            .as_deref()
            .and_then(|a| a.strip_prefix('#'))
            .filter(|hex| hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(|hex| format!("/brand/v1/accent/{}.css", hex.to_ascii_lowercase()))
    }
}

/// One resource of a share, as listed to learners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceItem {
    pub id: Uuid,
    pub title: String,
    pub kind: ResourceKind,
    pub size_bytes: i64,
}

/// Where the visitor stands with a share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LearnerState {
    SignedOut,
    /// Signed in, no code yet.
    NeedsCode {
        email: String,
    },
    /// A code was accepted and waits for the first opening (after the
    /// address is verified, if `must_verify`).
    Pending {
        email: String,
        must_verify: bool,
    },
    /// A code is bound to this account.
    HasAccess(Bound),
    /// The bound code was revoked by the course provider.
    Withdrawn {
        email: String,
        hint: String,
    },
    /// The share's access period is over for this learner (the code stays
    /// theirs; the provider can extend it).
    Ended {
        email: String,
        /// Human date it ended.
        ended: String,
    },
}

/// A binding as the learner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bound {
    pub email: String,
    pub hint: String,
    /// Human date of the first access.
    pub since: String,
    /// Human date the access ends (`None`: for good).
    pub until: Option<String>,
}

/// A resource the server has just decided this learner may open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenedResource {
    pub share_slug: String,
    pub share_title: String,
    pub resource: ResourceItem,
    /// Where the bytes are served (settled again on every request).
    pub content_url: String,
    pub bound: Bound,
    /// This opening bound the code.
    pub bound_now: bool,
    /// The course provider's branding.
    pub brand: Brand,
}

/// One course in "My courses".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CourseItem {
    pub slug: String,
    pub title: String,
    pub provider: String,
    pub hint: String,
    pub since: String,
    /// Human date the access ends, while it lasts (`None`: for good, or
    /// over: see `note`).
    pub until: Option<String>,
    /// Openable now from the learner's side (active share, code kept,
    /// access period not over).
    pub open: bool,
    /// What to say when it is not.
    pub note: Option<String>,
}

/// A course waiting for the learner in "My courses": a code addressed to
/// their verified address, mailed to them, not yet redeemed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingItem {
    pub slug: String,
    pub title: String,
    pub provider: String,
    /// The code's hint, as its mail names it (the code is only there).
    pub hint: String,
    /// Where the mail went: the learner's address.
    pub email: String,
}

/// The URL of a resource's content (the JSON API route that streams it).
pub fn content_url(slug: &str, resource: Uuid) -> String {
    format!("/api/v1/s/{slug}/resources/{resource}/content")
}

/// A share's page: what it holds and where the visitor stands.
#[server(endpoint = "learner/share", input = server_fn::codec::GetUrl)]
pub async fn share_view(slug: String) -> Result<SharePage, AppError> {
    use crate::auth::guard;
    use service::learner::{self, Standing};
    let state = crate::state::services()?;
    let session = guard::session().await?;
    let overview = learner::share_overview(&state, &session, &slug).await?;
    let me = match overview.standing {
        Standing::SignedOut => LearnerState::SignedOut,
        Standing::NeedsCode(p) => LearnerState::NeedsCode { email: p.email },
        Standing::Pending {
            principal,
            must_verify,
        } => LearnerState::Pending {
            email: principal.email,
            must_verify,
        },
        Standing::Holds(p, binding) if binding.revoked => LearnerState::Withdrawn {
            email: p.email,
            hint: binding.hint,
        },
        Standing::Holds(p, binding) if binding.access_ended() => LearnerState::Ended {
            email: p.email,
            ended: binding.access_ends.map(human_date).unwrap_or_default(),
        },
        Standing::Holds(p, binding) => LearnerState::HasAccess(Bound {
            email: p.email,
            hint: binding.hint,
            since: human_date(binding.bound_at),
            until: binding.access_ends.map(human_date),
        }),
    };
    let unavailable = overview.unavailable.map(|why| {
        crate::i18n::errors::share_unavailable(why, crate::i18n::lang())
            .map(|text| format!("{text}。"))
            .unwrap_or_else(|| capitalise(&why.to_string()))
    });
    let share = overview.share;
    Ok(SharePage {
        slug: share.slug,
        title: share.title,
        description: share.description,
        resources: overview.resources.into_iter().map(item).collect(),
        unavailable,
        me,
        foreign_codes: share.foreign_codes,
        brand: overview.branding.into(),
    })
}

/// Phases 1+2: enters a code for a share. Binds nothing.
#[server(endpoint = "learner/code")]
pub async fn enter_code(slug: String, code: String) -> Result<CodeOutcome, AppError> {
    use crate::auth::guard;
    use service::learner::{self, CodeEntered};
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let share = learner::visible_share(&state, &slug).await?;
    let session = guard::session().await?;
    let ip = guard::client_ip().await?;
    let outcome = learner::enter_code(&state, &session, &principal, ip, &share, &code).await?;
    Ok(match outcome {
        CodeEntered::Pending => CodeOutcome::Pending,
        CodeEntered::AlreadyBound => CodeOutcome::AlreadyBound,
    })
}

/// What entering a code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CodeOutcome {
    Pending,
    AlreadyBound,
}

impl CodeOutcome {
    pub fn message(self) -> &'static str {
        match self {
            Self::Pending => t(Msg::CodeAcceptedItWillBeBound),
            Self::AlreadyBound => t(Msg::ThisCodeIsAlreadyBoundTo),
        }
    }
}

/// Phase 3: opens a resource, binding the pending code on a first access.
#[server(endpoint = "learner/open")]
pub async fn open_resource(slug: String, resource: String) -> Result<OpenedResource, AppError> {
    use crate::auth::guard;
    use engine::settlement::RequestId;
    use service::learner;
    let state = crate::state::services()?;
    // Unknown shares are a 404 for everyone, signed in or not.
    let share = learner::visible_share(&state, &slug).await?;
    let resource_id = Uuid::parse_str(&resource).map_err(|_| AppError::NotFound)?;
    let principal = guard::require_learner().await?;
    let session = guard::session().await?;
    let claim = service::session::claimed(&state, &session).await?;
    let resource = learner::resource(&state, &share, resource_id).await?;
    // Without the request's headers nothing says it came from this
    // site: it may not count.
    let cross_site = use_context::<http::request::Parts>()
        .is_none_or(|parts| learner::is_cross_site(&parts.headers));
    let grant = learner::open(
        &state,
        &session,
        claim,
        learner::Opening {
            share: &share,
            resource: resource.id,
            request_id: RequestId::generate(),
            cross_site,
            patience: learner::Patience::WaitBriefly,
        },
    )
    .await?;
    // The binding as the settlement left it, from the same call.
    let bound = Bound {
        email: principal.email.clone(),
        hint: grant.binding.hint.clone(),
        since: human_date(grant.binding.bound_at),
        until: grant.binding.access_ends.map(human_date),
    };
    let brand = learner::branding(&state, share.tenant()).await.into();
    Ok(OpenedResource {
        brand,
        content_url: content_url(&share.slug, resource.id),
        share_slug: share.slug,
        share_title: share.title,
        resource: item(resource),
        bound,
        bound_now: grant.bound_now,
    })
}

/// Every course the signed-in learner holds, in every tenant.
#[server(endpoint = "learner/courses", input = server_fn::codec::GetUrl)]
pub async fn my_courses() -> Result<Vec<CourseItem>, AppError> {
    use model::ShareStatus;

    use crate::auth::guard;
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let holdings = service::learner::courses(&state, &principal).await?;
    Ok(holdings
        .into_iter()
        .map(|h| {
            let ended = h.ended_at();
            let note = if h.revoked {
                Some(t(Msg::YourAccessWasWithdrawnByThe).to_owned())
            } else if let Some(ended) = ended {
                Some(
                    crate::i18n::lang()
                        .format(Msg::AccessEndedNote, &[("ended", &human_date(ended))]),
                )
            } else {
                match h.status {
                    ShareStatus::Active => None,
                    ShareStatus::Paused => Some(t(Msg::PausedByTheCourseProvider).to_owned()),
                    ShareStatus::Draft | ShareStatus::Archived => {
                        Some(t(Msg::NoLongerOffered).to_owned())
                    }
                }
            };
            CourseItem {
                open: note.is_none(),
                until: h.access_ends.filter(|_| ended.is_none()).map(human_date),
                note,
                slug: h.slug,
                title: h.title,
                provider: h.tenant_name,
                hint: h.hint,
                since: human_date(h.bound_at),
            }
        })
        .collect())
}

/// Courses waiting for the signed-in learner: codes addressed to their
/// verified address that nobody redeemed yet.
#[server(endpoint = "learner/waiting", input = server_fn::codec::GetUrl)]
pub async fn waiting_courses() -> Result<Vec<WaitingItem>, AppError> {
    use crate::auth::guard;
    let state = crate::state::services()?;
    let principal = guard::require_learner().await?;
    let waiting = service::learner::waiting(&state, &principal).await?;
    Ok(waiting
        .into_iter()
        .map(|w| WaitingItem {
            slug: w.slug,
            title: w.title,
            provider: w.tenant_name,
            hint: w.hint,
            email: w.email,
        })
        .collect())
}

/// A settlement outcome as the pages show it (kind, code and field from
/// `engine::outcome`, like the JSON API).
#[cfg(feature = "ssr")]
pub fn settlement_error(error: engine::settlement::SettlementError) -> AppError {
    use engine::settlement::SettlementError;
    match error {
        // The page says what to do with the unused code.
        SettlementError::AlreadyHasAccess => AppError::Refused {
            kind: engine::outcome::Outcome::kind(&error),
            reason: engine::outcome::Outcome::code(&error).to_owned(),
            message: t(Msg::YouAlreadyHaveAccessToThis).to_owned(),
            field: None,
        },
        error => AppError::outcome(error),
    }
}

/// A date as pages show it: `29 November 2026`.
#[cfg(feature = "ssr")]
pub fn human_date(at: time::OffsetDateTime) -> String {
    let format = match crate::i18n::lang() {
        crate::i18n::Lang::En => {
            time::macros::format_description!("[day padding:none] [month repr:long] [year]")
        }
        crate::i18n::Lang::ZhCn | crate::i18n::Lang::ZhTw => {
            time::macros::format_description!("[year]年[month padding:none]月[day padding:none]日")
        }
    };
    at.format(&format).unwrap_or_else(|_| at.date().to_string())
}

/// A resource as pages list it (learner pages and the console alike).
#[cfg(feature = "ssr")]
pub(crate) fn item(resource: engine::resources::Resource) -> ResourceItem {
    ResourceItem {
        id: resource.id,
        title: resource.title,
        kind: resource.kind,
        size_bytes: resource.size_bytes,
    }
}

#[cfg(feature = "ssr")]
fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// Bytes for people: `1.5 MB`.
pub fn human_size(bytes: i64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KB", "MB", "GB"];
    let mut value = bytes.max(0) as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        crate::i18n::lang().format(Msg::Bytes, &[("bytes", &bytes)])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
