//! Who calls a console endpoint: a browser with a member's session, or an
//! integration with an API token (`Authorization: Bearer a1t_…`), and the
//! one check both go through ([`Caller::member_of`]: the member acting on a
//! tenant with a permission). Each endpoint resolves the tenant that owns
//! its target first and authorises against it ([`member_of_share`]), so a
//! path naming another tenant's share or code is refused before anything
//! is read or written.

use engine::{
    accounts::Principal,
    shares::{Share, ShareId},
    tenants::{Permission, TenantId},
    tokens::{self, TokenCaller},
};
use service::ServiceError;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{problem::ApiError, state::ServerState};

pub(crate) fn parse_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::not_found())
}

/// Who calls a console endpoint: a browser with a member's session, or an
/// integration with an API token (`Authorization: Bearer a1t_…`).
pub enum Caller {
    Session(Session),
    Token(TokenCaller),
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller
where
    ServerState: axum::extract::FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let state = <ServerState as axum::extract::FromRef<S>>::from_ref(state);
        if let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or(ServiceError::Unauthenticated)?;
            let caller = tokens::authenticate(
                &state.services.pool,
                &secrecy::SecretString::from(token.trim().to_owned()),
            )
            .await?
            .ok_or(ServiceError::Unauthenticated)?;
            // Each token has its own allowance, so one runaway script
            // slows down only itself.
            service::throttle::hit(
                &state.services,
                engine::coordination::ThrottleScope::ApiToken,
                &caller.token.to_string(),
                state.services.auth.api_token,
            )
            .await?;
            return Ok(Self::Token(caller));
        }
        let session = Session::from_request_parts(parts, &state)
            .await
            .map_err(|(_, message)| anyhow::anyhow!("session layer missing: {message}"))?;
        Ok(Self::Session(session))
    }
}

impl Caller {
    /// Which login this is (an API token, or the session), for what must
    /// not cross logins even of one member (idempotency keys).
    pub fn login(&self) -> String {
        match self {
            Self::Session(_) => "session".to_owned(),
            Self::Token(token) => format!("token:{}", token.token),
        }
    }

    /// The member acting on `tenant` with `permission` (a session's role, or
    /// a token's scope and its creator's role), or 401/403.
    pub async fn member_of(
        &self,
        state: &ServerState,
        tenant: TenantId,
        permission: Permission,
    ) -> Result<Principal, ApiError> {
        match self {
            Self::Session(session) => {
                Ok(
                    service::session::member_of(&state.services, session, tenant, permission)
                        .await?,
                )
            }
            Self::Token(token) if token.tenant == tenant && token.allows(permission) => {
                // What `service::session` records for a signed-in admin.
                service::request_span::record("principal", token.principal.id.0);
                service::request_span::record("tenant", tenant.0);
                Ok(token.principal.clone())
            }
            Self::Token(_) => Err(ServiceError::Forbidden.into()),
        }
    }

    /// The tenants among which an id in a path is looked up: a token's
    /// one, or those the signed-in account is a member of (none for
    /// nobody). So a look-up by id alone stays inside tenants the caller
    /// could act on, and never leads into another tenant's rows
    /// (docs/design/tenancy.md).
    pub(crate) async fn tenants(&self, state: &ServerState) -> Result<Vec<TenantId>, ApiError> {
        match self {
            Self::Token(token) => Ok(vec![token.tenant]),
            Self::Session(session) => {
                match service::session::principal_of(&state.services, session).await? {
                    Some(principal) => Ok(engine::tenants::tenant_ids_of(
                        &state.services.pool,
                        principal.id,
                    )
                    .await?),
                    None => Ok(Vec::new()),
                }
            }
        }
    }

    /// 401 for nobody, else 403: what an unknown object answers, so ids
    /// cannot be probed.
    pub(crate) async fn refuse(&self, state: &ServerState) -> ApiError {
        match self {
            Self::Session(session) => {
                match service::session::principal_of(&state.services, session).await {
                    Ok(Some(_)) => ServiceError::Forbidden.into(),
                    Ok(None) => ServiceError::Unauthenticated.into(),
                    Err(error) => error.into(),
                }
            }
            Self::Token(_) => ServiceError::Forbidden.into(),
        }
    }
}

/// The tenant named by a path, and its member allowed `permission`: an id
/// that does not parse is refused like a tenant the caller is not in.
pub(crate) async fn member_of_tenant(
    state: &ServerState,
    caller: &Caller,
    tenant_id: &str,
    permission: Permission,
) -> Result<(TenantId, Principal), ApiError> {
    let tenant =
        TenantId(parse_id(tenant_id).map_err(|_| ApiError::from(ServiceError::Forbidden))?);
    let member = caller.member_of(state, tenant, permission).await?;
    Ok((tenant, member))
}

/// The share and its member allowed `permission`, or 401/403/404.
pub(crate) async fn member_of_share(
    state: &ServerState,
    caller: &Caller,
    share_id: &str,
    permission: Permission,
) -> Result<(Share, Principal), ApiError> {
    let id = ShareId(parse_id(share_id)?);
    let among = caller.tenants(state).await?;
    let share = engine::shares::get_among(&state.services.pool, &among, id).await?;
    // Authorise before revealing whether the share exists.
    let Some(share) = share else {
        return Err(caller.refuse(state).await);
    };
    let admin = caller.member_of(state, share.tenant(), permission).await?;
    Ok((share, admin))
}

/// The tenant of a code and its member who may manage courses, or
/// 401/403/404.
pub(crate) async fn member_of_code(
    state: &ServerState,
    caller: &Caller,
    code_id: &str,
) -> Result<(TenantId, Uuid, Principal), ApiError> {
    let code = parse_id(code_id)?;
    let among = caller.tenants(state).await?;
    let Some((tenant, _share)) =
        engine::code_table::share_of_code(&state.services.pool, &among, code).await?
    else {
        return Err(caller.refuse(state).await);
    };
    let member = caller
        .member_of(state, tenant, Permission::ManageCourses)
        .await?;
    Ok((tenant, code, member))
}
