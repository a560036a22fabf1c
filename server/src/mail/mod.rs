//! The mail relay: a background task in every instance that writes out
//! the mail outbox's rows ([`engine::mail`]) and sends them.
//!
//! It works like the webhook relay (`crate::relay`), with the same lease
//! and retry rules (`engine::delivery`): each round leases due mails
//! (committed before anything is sent, so a slow SMTP server holds no
//! lock), writes each out in the language it was asked in
//! ([`templates`]), derives the single-use link it carries from the row
//! (`engine::accounts::links`), sends them all at once ([`transport`]),
//! and records the round's attempts (the delivered ones in one statement)
//! only while each lease is still this relay's. A server that is stopped
//! (SIGTERM) lets the round under way finish, sent and recorded
//! (`crate::rounds`), so a restart sends nothing twice. A relay that dies
//! after the SMTP server took a mail and before recording it leaves the
//! lease to run out: the mail goes again, once per lease at most, and is
//! never lost. Every refusal backs off and is tried again (a reply code
//! cannot tell a missing mailbox from a refused sender), then dead-letters
//! after `mail.max_attempts`; `server admin requeue-mail` gives dead
//! letters another attempt. Each mail is a conversation of its own,
//! bounded by `mail.timeout_ms`.
//!
//! Several instances can run it at once: rows are claimed with
//! `FOR UPDATE SKIP LOCKED`.

mod settings;
pub mod templates;
pub mod transport;

use std::{collections::HashMap, sync::Arc, time::Duration};

use engine::{
    accounts::links::{LinkKey, LinkPurpose},
    branding::Branding,
    codes::Keyring,
    db::PgPool,
    delivery::{Attempted, Recorded, RetryPolicy},
    mail::{self, DueMail, MailLimits, Template},
    tenants::TenantId,
};
use futures::StreamExt as _;
use lettre::message::Mailbox;

pub use settings::MailSettings;
pub use transport::Transport;

/// How many mails one round leases, and sends all at once (one SMTP
/// conversation each): every leased mail is in flight from the start of
/// the round, so the lease (two SMTP timeouts and a margin) outlasts the
/// round as it outlasts one conversation. The delivered ones are recorded
/// together when the round ends: one commit for the round, not one per
/// mail, so a course launch's receipts add a quarter of a commit per mail
/// (the lease and the record of 8) to its first accesses' commits, not one
/// and a quarter.
const ROUND: usize = 8;

/// How long a leased mail stays a relay's: two SMTP timeouts and a
/// margin, so a lease never ends while its round can still succeed.
pub fn lease_of(settings: &MailSettings) -> Duration {
    Duration::from_millis(settings.timeout_ms.max(1)) * 2 + Duration::from_secs(5)
}

/// One mail relay.
#[derive(Debug, Clone)]
pub struct MailRelay {
    pool: PgPool,
    transport: Transport,
    from: Mailbox,
    links: Arc<LinkKey>,
    /// The code keys: an order's mail derives its codes again with them.
    keyring: Arc<Keyring>,
    /// The server's public origin: the base of every link.
    origin: Arc<str>,
    policy: RetryPolicy,
    /// How long a leased mail stays ours: two SMTP timeouts and a margin,
    /// so a lease never ends while its round can still succeed.
    lease: Duration,
    /// How much mail a tenant, and the server, may send
    /// (`mail.tenant_per_minute`, `mail.smtp_per_second`).
    limits: MailLimits,
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub sent: usize,
    pub failed: usize,
    pub dead: usize,
}

impl Round {
    pub fn is_idle(&self) -> bool {
        *self == Self::default()
    }
}

impl MailRelay {
    pub fn new(
        pool: PgPool,
        settings: &MailSettings,
        links: Arc<LinkKey>,
        keyring: Arc<Keyring>,
        origin: &str,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            transport: Transport::new(settings, pool.clone())?,
            pool,
            from: transport::from_address(settings)?,
            links,
            keyring,
            origin: Arc::from(origin.trim_end_matches('/')),
            policy: RetryPolicy {
                max_attempts: settings.max_attempts.max(1),
                base: Duration::from_millis(settings.backoff_base_ms),
                max: Duration::from_secs(settings.backoff_max_secs),
            },
            lease: lease_of(settings),
            limits: MailLimits::new(settings.tenant_per_minute, settings.smtp_per_second),
        })
    }

    /// The lease a claimed mail gets (tests wait for it to run out).
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// One round: lease, write out, send, record.
    pub async fn round(&self) -> anyhow::Result<Round> {
        let due = self.claim().await?;
        let brands = self.brandings(&due).await;
        let attempts: Vec<(DueMail, Attempted)> = futures::stream::iter(due)
            .map(|due| {
                let brand = due.tenant.and_then(|t| brands.get(&t));
                async move {
                    let outcome = self.send_branded(&due, brand).await;
                    (due, outcome)
                }
            })
            .buffer_unordered(ROUND)
            .collect()
            .await;
        let (delivered, failed): (Vec<_>, Vec<_>) = attempts
            .iter()
            .partition(|(_, outcome)| matches!(outcome, Attempted::Delivered { .. }));
        let delivered: Vec<&DueMail> = delivered.into_iter().map(|(due, _)| due).collect();
        let mut round = Round::default();
        // Every attempt is recorded, whatever became of the others': a
        // record that fails leaves its mails to their leases (they go again).
        let mut first_error = None;
        match mail::record_delivered(&self.pool, &delivered).await {
            Ok(recorded) => {
                round.sent = recorded.len();
                for _ in &recorded {
                    engine::metrics::mail_delivery("sent");
                }
                for due in delivered.iter().filter(|due| !recorded.contains(&due.id)) {
                    // Another relay leased it again meanwhile: it is being
                    // sent twice (at least once holds, at most once per
                    // lease did not).
                    engine::metrics::mail_delivery("lease_lost");
                    tracing::warn!(mail = %due.id, "a mail was delivered after its lease ran out: another relay has it again");
                }
            }
            Err(error) => first_error = Some(error),
        }
        for (due, outcome) in failed {
            match self.record(due, outcome).await {
                Ok(Recorded::WillRetry) => {
                    round.failed += 1;
                    engine::metrics::mail_delivery("failed");
                }
                Ok(Recorded::Dead) => {
                    round.dead += 1;
                    engine::metrics::mail_delivery("dead");
                }
                Ok(Recorded::LeaseLost) => {
                    engine::metrics::mail_delivery("lease_lost");
                    tracing::warn!(mail = %due.id, "a failed attempt outlived its lease: another relay has the mail again");
                }
                Ok(Recorded::Delivered) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(round),
        }
    }

    /// Leases the due mails (the first half of a round; tests call it to
    /// stop a relay between sending and recording, as a crash would).
    pub async fn claim(&self) -> anyhow::Result<Vec<DueMail>> {
        mail::claim_due(&self.pool, ROUND as i64, self.lease, self.limits).await
    }

    /// A tenant's branding as it is now, for its mails. A mail is never
    /// held back for it: it goes out plain if it cannot be read.
    async fn branding(&self, tenant: TenantId) -> Option<Branding> {
        engine::branding::of(&self.pool, tenant)
            .await
            .inspect_err(|error| {
                tracing::warn!(tenant = %tenant.0, error = format!("{error:#}"), "reading the branding of a mail");
            })
            .ok()
            .flatten()
    }

    /// The branding of every tenant a round's mails are about, in one read.
    /// The mails are never held back for it: they go out plain if it
    /// cannot be read.
    async fn brandings(&self, due: &[DueMail]) -> HashMap<TenantId, Branding> {
        let mut tenants: Vec<TenantId> = due.iter().filter_map(|due| due.tenant).collect();
        if tenants.is_empty() {
            return HashMap::new();
        }
        tenants.sort_unstable_by_key(|tenant| tenant.0);
        tenants.dedup();
        engine::branding::of_each(&self.pool, &tenants)
            .await
            .inspect_err(|error| {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "reading the branding of a round's mails"
                );
            })
            .unwrap_or_default()
    }

    /// Writes one leased mail out and sends it.
    pub async fn send(&self, due: &DueMail) -> Attempted {
        let brand = match due.tenant {
            Some(tenant) => self.branding(tenant).await,
            None => None,
        };
        self.send_branded(due, brand.as_ref()).await
    }

    /// Writes one leased mail out with its tenant's `brand` and sends it.
    async fn send_branded(&self, due: &DueMail, brand: Option<&Branding>) -> Attempted {
        let link = due
            .link
            .map(|id| self.links.url(&self.origin, link_purpose(due.template), id));
        let codes = match self.codes_of(due).await {
            Ok(codes) => codes,
            Err(attempt) => return attempt,
        };
        let rendered = templates::render(
            due.template,
            &templates::Context {
                lang: due.lang,
                params: &due.params,
                link: link.as_deref(),
                origin: &self.origin,
                codes: &codes,
                brand,
            },
        );
        self.transport
            .send(due.id, &self.from, &due.to, &rendered)
            .await
    }

    /// The codes an order's mail carries, derived again and displayed
    /// (none for any other mail). A mail whose codes were all revoked, or
    /// cannot be derived again, is never tried again; a failed read is.
    async fn codes_of(&self, due: &DueMail) -> Result<Vec<String>, Attempted> {
        if due.template != Template::CodesSent {
            return Ok(Vec::new());
        }
        let permanent = |error: String| Attempted::Permanent {
            status: None,
            error,
        };
        let tenant = due
            .tenant
            .ok_or_else(|| permanent("an order's mail without its tenant".to_owned()))?;
        let ids: Vec<uuid::Uuid> = due
            .params
            .get("code_ids")
            .cloned()
            .and_then(|ids| serde_json::from_value(ids).ok())
            .ok_or_else(|| permanent("an order's mail without its codes".to_owned()))?;
        match engine::orders::mailed_codes(&self.pool, &self.keyring, tenant, &ids).await {
            Ok(codes) => Ok(codes
                .iter()
                .map(engine::codes::PlainCode::display)
                .collect()),
            Err(engine::orders::MailedCodesError::Unexpected(error)) => Err(Attempted::Failed {
                status: None,
                error: format!("{error:#}"),
            }),
            Err(refused) => Err(permanent(refused.to_string())),
        }
    }

    /// Records one attempt (if the lease is still ours).
    pub async fn record(&self, due: &DueMail, outcome: &Attempted) -> anyhow::Result<Recorded> {
        mail::record(&self.pool, due, outcome, &self.policy).await
    }

    /// Runs rounds among the server's `rounds` until they stop.
    pub fn spawn(self, rounds: &mut crate::rounds::Rounds, idle: Duration) {
        rounds.spawn("mail relay", idle, move || {
            let relay = self.clone();
            async move { relay.round().await.map(|round| !round.is_idle()) }
        })
    }
}

/// Which kind of link a template carries (its secret is derived with it).
fn link_purpose(template: Template) -> LinkPurpose {
    match template {
        Template::ResetPassword => LinkPurpose::ResetPassword,
        Template::ChangeEmail => LinkPurpose::ChangeEmail,
        Template::Invitation => LinkPurpose::Invitation,
        Template::TransferConfirm => LinkPurpose::Transfer,
        Template::SignUp => LinkPurpose::SignUp,
        Template::VerifyEmail
        | Template::PasswordChanged
        | Template::EmailChangeRequested
        | Template::EmailChanged
        | Template::CodeBound
        | Template::CodeUnbound
        | Template::CodeRevoked
        | Template::LeakSuspected
        | Template::CodeReplaced
        | Template::CodeTransferredAway
        | Template::CodeTransferredHere
        | Template::TransferRefused
        | Template::AccountExists
        | Template::CodesSent => LinkPurpose::VerifyEmail,
    }
}
