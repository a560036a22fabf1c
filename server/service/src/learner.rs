//! The learner's use cases: a share's page (what it holds and where the
//! visitor stands), code entry (phases 1+2 of `docs/design/overview.md`: validate, keep the
//! code pending in the session, bind nothing) and opening a resource
//! (phase 3: the settlement), plus "My courses". The pages and the JSON
//! API render these outcomes; neither decides anything itself.

use std::net::IpAddr;

pub use engine::settlement::patience::Patience;
use engine::{
    accounts::{AccountId, Principal},
    codes::TypedCode,
    coordination::ThrottleScope,
    resources::{self, Resource},
    settlement::{
        self, BindingView, Counting, Grant, Holding, RequestId, SettlementError, SettlementRequest,
        Validated,
    },
    shares::{Share, ShareId, Unavailability},
};
use time::OffsetDateTime;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{ServiceError, Services, session, throttle};

/// The session key of a share's pending code (phase 2).
fn pending_key(share: ShareId) -> String {
    format!("pending:{share}")
}

/// A code accepted in phase 2, with the account that entered it: a
/// session can outlive a sign-in (a shared computer), and a pending code
/// must never be bound to anyone but the learner who typed it.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Pending {
    principal: Uuid,
    code: Uuid,
}

/// A share learners may see (active, paused or outside its window: the
/// page explains); drafts and archived shares do not exist for them.
pub async fn visible_share(services: &Services, slug: &str) -> Result<Share, ServiceError> {
    match engine::shares::find_by_slug(&services.pool, slug).await? {
        Some(share) if share.status.visible_to_learners() => Ok(share),
        _ => Err(ServiceError::NotFound),
    }
}

/// [`visible_share`] for an opening (`POST …/open`): a share read within
/// [`crate::recent_shares::RECHECK`] is used again, since the settlement
/// reads everything about it that can change (see that module).
pub async fn share_to_open(
    services: &Services,
    slug: &str,
) -> Result<std::sync::Arc<Share>, ServiceError> {
    if let Some(share) = services.recent_shares.get(slug) {
        return Ok(share);
    }
    let share = visible_share(services, slug).await?;
    // Only a share open right now: a paused or closed one is read every
    // time, so that it opens again the moment it is resumed.
    if share
        .unavailable_because(OffsetDateTime::now_utc())
        .is_none()
    {
        return Ok(services.recent_shares.put(share));
    }
    Ok(std::sync::Arc::new(share))
}

/// A resource of `share` learners may see.
pub async fn resource(
    services: &Services,
    share: &Share,
    resource: Uuid,
) -> Result<Resource, ServiceError> {
    resources::resource(&services.pool, share.tenant(), share.id, resource)
        .await?
        .ok_or(ServiceError::NotFound)
}

/// The code id `principal` entered for `share` in this session (phase 2),
/// if any.
pub(crate) async fn pending_code(
    session: &Session,
    share: ShareId,
    principal: AccountId,
) -> Result<Option<Uuid>, ServiceError> {
    let pending = session
        .get::<Pending>(&pending_key(share))
        .await
        .map_err(session::session_error)?;
    Ok(pending
        .filter(|p| p.principal == principal.0)
        .map(|p| p.code))
}

/// Where a visitor stands with a share.
#[derive(Debug, Clone)]
pub enum Standing {
    SignedOut,
    /// Signed in, no code yet.
    NeedsCode(Principal),
    /// A code was accepted in this session and waits for the first opening;
    /// `must_verify`: it cannot bind until the account's address is
    /// verified (the tenant asks for it).
    Pending {
        principal: Principal,
        must_verify: bool,
    },
    /// A code is bound to this account (`binding.revoked`: the provider
    /// withdrew it).
    Holds(Principal, BindingView),
}

/// A share's page: the share, its resources, where the visitor stands,
/// and why nobody new can get in right now, if so.
#[derive(Debug, Clone)]
pub struct ShareOverview {
    pub share: Share,
    /// The share's tenant's name, accent, logo and support address
    /// (`None` if it could not be read: a page is never refused for it).
    pub branding: Option<engine::branding::Branding>,
    pub resources: Vec<Resource>,
    pub standing: Standing,
    pub unavailable: Option<Unavailability>,
}

/// What a visitor sees of the share at `slug` (drafts, archived and
/// unknown slugs are `NotFound`).
pub async fn share_overview(
    services: &Services,
    session: &Session,
    slug: &str,
) -> Result<ShareOverview, ServiceError> {
    let share = visible_share(services, slug).await?;
    let resources = resources::resources(&services.pool, share.tenant(), share.id).await?;
    let standing = match session::principal_of(services, session).await? {
        None => Standing::SignedOut,
        Some(principal) => {
            match settlement::binding_of(&services.pool, &share, principal.id).await? {
                Some(binding) => Standing::Holds(principal, binding),
                None if pending_code(session, share.id, principal.id)
                    .await?
                    .is_some() =>
                {
                    let must_verify = !principal.email_verified
                        && engine::tenants::settings(&services.pool, share.tenant())
                            .await?
                            .is_none_or(|s| s.require_verified_email);
                    Standing::Pending {
                        principal,
                        must_verify,
                    }
                }
                None => Standing::NeedsCode(principal),
            }
        }
    };
    let unavailable = share.unavailable_to_newcomers(OffsetDateTime::now_utc());
    let branding = branding(services, share.tenant()).await;
    Ok(ShareOverview {
        share,
        branding,
        resources,
        standing,
        unavailable,
    })
}

/// A tenant's branding for its learners' pages. A failed read is logged
/// and shows the page without it: branding never keeps a learner from a
/// course.
pub async fn branding(
    services: &Services,
    tenant: engine::tenants::TenantId,
) -> Option<engine::branding::Branding> {
    engine::branding::of(&services.pool, tenant)
        .await
        .inspect_err(|error| {
            tracing::warn!(error = format!("{error:#}"), "reading a tenant's branding")
        })
        .ok()
        .flatten()
}

/// What entering a code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeEntered {
    /// Kept in the session; bound at the first opening.
    Pending,
    /// The learner typed the code already bound to them.
    AlreadyBound,
}

/// Phases 1+2: checks a typed code for this learner and keeps it pending in
/// the session. Binds nothing. A typo is refused by the check symbol before
/// any attempt is counted; well-formed codes count per account and per IP
/// (refused past their limits). A code the share does not have also counts
/// for the share, as a signal only ([`throttle::note`]): a flood of wrong
/// codes from many accounts never keeps a learner with a right one out.
#[tracing::instrument(name = "enter_code", skip_all, fields(share = %share.id))]
pub async fn enter_code(
    services: &Services,
    session: &Session,
    principal: &Principal,
    ip: IpAddr,
    share: &Share,
    typed: &str,
) -> Result<CodeEntered, ServiceError> {
    let code = TypedCode::read(typed, share.foreign_codes)?;
    let policy = &services.auth;
    throttle::hit(
        services,
        ThrottleScope::CodeAccount,
        &principal.id.0.to_string(),
        policy.code_per_account,
    )
    .await?;
    throttle::hit_ip(services, ThrottleScope::CodeIp, ip, policy.code_per_ip).await?;
    let validated = settlement::validate(
        &services.pool,
        &services.keyring,
        share,
        principal.id,
        &code,
    )
    .await;
    if let Err(SettlementError::InvalidCode | SettlementError::WrongShare) = &validated {
        throttle::note(
            services,
            ThrottleScope::CodeShare,
            &share.id.to_string(),
            policy.code_per_share,
        )
        .await;
    }
    let validated = validated?;
    let code_id = match validated {
        Validated::AlreadyYours(_) => return Ok(CodeEntered::AlreadyBound),
        Validated::Usable(code_id) => code_id,
    };
    session
        .insert(
            &pending_key(share.id),
            Pending {
                principal: principal.id.0,
                code: code_id,
            },
        )
        .await
        .map_err(session::session_error)?;
    Ok(CodeEntered::Pending)
}

/// One request to open a resource.
#[derive(Debug)]
pub struct Opening<'a> {
    pub share: &'a Share,
    pub resource: Uuid,
    /// Random per logical attempt; an API client's retries reuse it.
    pub request_id: RequestId,
    /// Not from this site ([`is_cross_site`]): see [`open`].
    pub cross_site: bool,
    pub patience: Patience,
}

/// Phase 3: decides whether the signed-in learner (`claim`) may open the
/// resource now, binding the pending code on a first access. A cross-site
/// request (a link or an embed on another site, which `SameSite=Lax` lets
/// through with the cookie) may only reach a live grant the learner
/// already has: it never binds, counts or debits
/// ([`Counting::LiveGrantOnly`]).
///
/// One call to PostgreSQL: the settlement itself checks the session (the
/// account still at the claim's epoch, not disabled), the share and the
/// resource. A session the account moved past, or whose account is
/// disabled, is ended here (`Unauthenticated`); a share archived or taken back to a draft is
/// `NotFound`, as it is for [`visible_share`].
#[tracing::instrument(name = "open", skip_all, fields(share = %opening.share.id, resource = %opening.resource))]
pub async fn open(
    services: &Services,
    session: &Session,
    claim: session::Claim,
    opening: Opening<'_>,
) -> Result<Grant, ServiceError> {
    let Opening {
        share,
        resource,
        request_id,
        cross_site,
        patience,
    } = opening;
    // Who the session says is asking, on the request's span (refused or
    // not: the settlement checks the claim).
    crate::request_span::record("principal", claim.account.0);
    // Read from another site too: the settlement refuses to bind it then
    // (`Counting::LiveGrantOnly`) and says to open it here.
    let pending = pending_code(session, share.id, claim.account).await?;
    let request = SettlementRequest {
        share: share.clone(),
        principal: claim.account,
        session_epoch: claim.epoch,
        resource,
        pending_code: pending,
        request_id,
        patience,
        counting: if cross_site {
            Counting::LiveGrantOnly
        } else {
            Counting::Allowed
        },
    };
    let settled = services.settler.settle(&request).await;
    let grant = match settled {
        Ok(grant) => grant,
        // As for every other request (`session::principal_of`): a session
        // whose account moved past it, or was disabled, ends.
        Err(SettlementError::SessionEnded | SettlementError::AccountDisabled) => {
            return Err(session::ended(session).await?);
        }
        Err(SettlementError::ShareUnavailable(reason)) => {
            // The share changed: the next opening reads it afresh.
            services.recent_shares.forget(&share.slug);
            return Err(match reason {
                Unavailability::NotAvailable => ServiceError::NotFound,
                other => SettlementError::ShareUnavailable(other).into(),
            });
        }
        Err(other) => return Err(other.into()),
    };
    if pending.is_some() {
        // The access is decided (and maybe bound): a session hiccup now
        // must not turn it into an error page. A stale pending id is
        // harmless; the next settlement finds the binding first.
        if let Err(error) = session.remove::<Pending>(&pending_key(share.id)).await {
            tracing::warn!(error = %error, "could not clear a pending code after settlement");
        }
    }
    Ok(grant)
}

/// Every share `principal` holds a code of, in every tenant ("My courses").
pub async fn courses(
    services: &Services,
    principal: &Principal,
) -> Result<Vec<Holding>, ServiceError> {
    Ok(settlement::holdings_of(&services.pool, principal.id).await?)
}

/// Courses waiting for `principal`: codes addressed to their verified
/// address, not yet redeemed.
pub async fn waiting(
    services: &Services,
    principal: &Principal,
) -> Result<Vec<settlement::Waiting>, ServiceError> {
    Ok(settlement::waiting_for(&services.pool, principal.id).await?)
}

/// Whether the request may not count an access because it did not come
/// from this site: `Sec-Fetch-Site` is anything but `same-origin` or
/// `none` (typed, bookmarked). `same-site` counts as another site too: a
/// sibling subdomain (a shared university domain) is someone else's site.
/// A request without the header (old browsers, API clients with a
/// session) counts as this site's. A prefetch or prerender
/// (`Sec-Purpose`, `Purpose`) never counts.
pub fn is_cross_site(headers: &http::HeaderMap) -> bool {
    let elsewhere = headers
        .get("sec-fetch-site")
        .is_some_and(|v| !matches!(v.as_bytes(), b"same-origin" | b"none"));
    // A prefetch or prerender (the address bar's preloading, speculation
    // rules) is nobody opening the resource: it may not count either.
    let prefetch = ["sec-purpose", "purpose"].iter().any(|name| {
        headers
            .get(*name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("prefetch") || v.contains("prerender"))
    });
    elsewhere || prefetch
}
