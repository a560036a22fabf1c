//! A learner moves the code they hold to another account they control
//! (`engine::transfers` holds the rules and the one transaction that moves
//! a binding). The learner's side lives here: asking (it sends a mail, so
//! it is throttled like every mail an account asks for), withdrawing,
//! seeing where the request stands, and the receiving account's
//! confirmation from the mailed link. The admins' side (list, approve,
//! refuse) is one engine call after the adapter's own authorisation, with
//! [`per_code_limit`].

use std::net::IpAddr;

use engine::{
    accounts::{Email, Principal, links::LinkToken},
    transfers::{self, Transfer, TransferError, TransferPreview},
};
use model::Lang;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{ServiceError, Services, learner, session, team::count_mail, throttle};

/// What the learner's form carries.
#[derive(Debug)]
pub struct TransferForm {
    /// The receiving account's address.
    pub email: String,
    /// A word for the course's team (may be empty).
    pub note: String,
}

/// How many times one code may move: the server's setting
/// `tenants.transfers_per_code`, the same for every tenant.
pub fn per_code_limit(services: &Services) -> u16 {
    services.auth.transfers_per_code
}

/// The signed-in learner asks to move their code of the course at `slug`
/// to the account with the form's address; a link goes to that address.
/// A newer request replaces the open one.
#[tracing::instrument(name = "request_transfer", skip_all)]
pub async fn request(
    services: &Services,
    session: &Session,
    ip: IpAddr,
    slug: &str,
    form: TransferForm,
    lang: Lang,
) -> Result<Uuid, ServiceError> {
    let principal = session::learner_of(services, session).await?;
    let share = learner::visible_share(services, slug).await?;
    let email = Email::parse(&form.email)?;
    count_mail(services, principal.id, ip).await?;
    Ok(transfers::request(
        &services.pool,
        &services.links,
        share.tenant(),
        share.id,
        principal.id,
        &email,
        &form.note,
        per_code_limit(services),
        lang,
    )
    .await?)
}

/// The signed-in learner's latest request for the course at `slug`.
pub async fn latest(
    services: &Services,
    session: &Session,
    slug: &str,
) -> Result<Option<Transfer>, ServiceError> {
    let principal = session::learner_of(services, session).await?;
    let share = learner::visible_share(services, slug).await?;
    Ok(transfers::latest_of(&services.pool, share.tenant(), share.id, principal.id).await?)
}

/// The signed-in learner withdraws their open request for the course at
/// `slug`.
pub async fn cancel(
    services: &Services,
    session: &Session,
    slug: &str,
) -> Result<Uuid, ServiceError> {
    let principal = session::learner_of(services, session).await?;
    let share = learner::visible_share(services, slug).await?;
    Ok(transfers::cancel(&services.pool, share.tenant(), share.id, principal.id).await?)
}

/// The request behind a confirmation link, while it waits for its
/// target (`None`: expired, replaced, used or never one).
pub async fn preview(
    services: &Services,
    token: &str,
) -> Result<Option<TransferPreview>, ServiceError> {
    let Some(token) = LinkToken::parse(token) else {
        return Ok(None);
    };
    Ok(transfers::preview(&services.pool, &token).await?)
}

/// The receiving account confirms, signed in with the address the link
/// went to. Throttled per IP: the link is the secret.
#[tracing::instrument(name = "confirm_transfer", skip_all)]
pub async fn confirm(
    services: &Services,
    principal: &Principal,
    ip: IpAddr,
    token: &str,
) -> Result<Transfer, ServiceError> {
    let token = LinkToken::parse(token).ok_or(TransferError::LinkInvalid)?;
    throttle::hit_ip(
        services,
        engine::coordination::ThrottleScope::MailIp,
        ip,
        services.auth.mail_per_ip,
    )
    .await?;
    Ok(transfers::confirm(&services.pool, &token, principal.id).await?)
}
