//! Settlement: the moment a code is bound and an access is counted.
//!
//! DESIGN.md's three phases: [`validate`] (phase 1: a typed code is looked
//! up, nothing is bound; the caller keeps the code id in the session:
//! phase 2), then [`Settler::settle`] (phase 3) on a real content request:
//!
//! 1. a returning learner (bound in PostgreSQL) skips Redis entirely;
//! 2. otherwise `reserve.lua` takes the code and the learner for this
//!    attempt, turning away concurrent losers cheaply;
//! 3. **the settlement transaction** ([`Settler::transaction`]) checks the
//!    share, the account and an existing binding, binds with a
//!    compare-and-set `UPDATE … WHERE bound_principal IS NULL`, debits the
//!    learner's and the share's counters with conditional UPDATEs, writes the
//!    access record (unique per request id) and the outbox rows, and commits,
//!    or leaves nothing behind;
//! 4. `release.lua` frees the reservation, committed or not.
//!
//! A unique violation rolls the transaction back and the settlement starts
//! over, reading the final state afresh (never continuing in the failed
//! transaction). A retry with the same request id finds the first attempt's
//! record and returns it. If Redis fails, [`FailurePolicy`] decides; an
//! unanswered reservation is never taken for a granted one.
//!
//! What one *access* is: a grant of one resource to one learner, valid for
//! [`SettlementOptions::grant_ttl`]. Range requests, reloads and retries of
//! that resource inside the grant's lifetime are not counted again; opening
//! it after the grant expired counts a new access (debiting the learner's
//! limit and the share's quota once).

use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;
use sqlx::{PgPool, Postgres, Transaction};
use time::OffsetDateTime;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit,
    codes::{Keyring, PlainCode},
    coordination::Redis,
    reservation::{Reservation, ReservationKeys, Reserver},
    shares::Share,
    tenants::TenantId,
};

/// What to do when Redis does not answer a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Refuse the first access with a retryable "unavailable".
    FailClosed,
    /// Settle in PostgreSQL alone (still correct, less shielded).
    DbOnly,
}

/// Where a test may make the transaction fail on purpose (never set by
/// configuration; see the concurrency suite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    AfterBind,
    AfterLearnerDebit,
    AfterRecord,
    AfterShareDebit,
    /// After COMMIT, before the answer: the process "dies" with the work
    /// done; a retry must recognise it.
    AfterCommit,
}

#[derive(Debug, Clone)]
pub struct SettlementOptions {
    pub failure_policy: FailurePolicy,
    /// Reservation TTL: below `transaction_timeout`, so a crashed holder's
    /// reservation is gone before anyone could wait for its transaction.
    pub reservation_ttl: Duration,
    /// Bound on the whole settlement transaction.
    pub transaction_timeout: Duration,
    /// How long one counted access lasts (see the module doc).
    pub grant_ttl: Duration,
    pub fault: Option<FaultPoint>,
    /// Counts what reached the settlement transaction (never set by
    /// configuration; tests read it to know PostgreSQL was contended).
    pub probe: Option<std::sync::Arc<SettlementProbe>>,
}

/// What reached PostgreSQL, counted for tests (see [`SettlementOptions::probe`]).
#[derive(Debug, Default)]
pub struct SettlementProbe {
    /// Settlement transactions begun.
    pub transactions: std::sync::atomic::AtomicU64,
    /// Transactions that found no binding and tried to bind a code.
    pub bind_attempts: std::sync::atomic::AtomicU64,
    /// Transactions rolled back on a unique violation and started over.
    pub start_overs: std::sync::atomic::AtomicU64,
    /// Reservations asked of Redis (a request that waits asks again).
    pub reservations: std::sync::atomic::AtomicU64,
}

impl SettlementProbe {
    /// (transactions, bind attempts, start-overs) so far.
    pub fn counts(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.transactions.load(Relaxed),
            self.bind_attempts.load(Relaxed),
            self.start_overs.load(Relaxed),
        )
    }

    /// Reservations asked of Redis so far.
    pub fn reservations(&self) -> u64 {
        self.reservations.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Default for SettlementOptions {
    fn default() -> Self {
        Self {
            failure_policy: FailurePolicy::FailClosed,
            reservation_ttl: Duration::from_secs(4),
            transaction_timeout: Duration::from_secs(5),
            grant_ttl: Duration::from_secs(6 * 3600),
            fault: None,
            probe: None,
        }
    }
}

/// One first-access (or returning) request for a resource.
#[derive(Debug, Clone)]
pub struct SettlementRequest {
    pub share: Share,
    pub principal: AccountId,
    pub resource: Uuid,
    /// The code id from phase 2 (the session), if any.
    pub pending_code: Option<Uuid>,
    /// Random per logical attempt, reused by its retries.
    pub request_id: RequestId,
    /// What to do while someone else's attempt holds the code.
    pub patience: Patience,
}

/// What a settlement does while another attempt holds the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// A person clicked: wait a moment for a definite answer.
    WaitBriefly,
    /// An API client: answer `busy` now (it retries with its
    /// `Idempotency-Key`), so a hot code's losers stay off PostgreSQL.
    AnswerAtOnce,
}

/// The one wait schedule of a settlement that finds what it needs held by
/// another attempt (the learner's own other request, or, with
/// [`Patience::WaitBriefly`], someone else's attempt at the code): about
/// 0.75 s in all, then `Busy`. Attempts take milliseconds, so the waits
/// usually end in a definite answer.
const BUSY_WAITS_MS: [u64; 5] = [25, 50, 100, 200, 375];

/// A request id: 1 to 200 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    pub fn parse(raw: &str) -> Result<Self, SettlementError> {
        let ok = (1..=200).contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_graphic());
        ok.then(|| Self(raw.to_owned()))
            .ok_or(SettlementError::InvalidRequestId)
    }

    pub fn generate() -> Self {
        Self(Uuid::new_v4().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Access granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub code_id: Uuid,
    /// This request bound the code.
    pub bound_now: bool,
    /// This request counted a new access (false: a live grant was reused).
    pub counted: bool,
    /// This request is a retry answered from the first attempt's record.
    pub replayed: bool,
    pub expires_at: OffsetDateTime,
}

#[derive(Debug, thiserror::Error)]
pub enum SettlementError {
    #[error("enter your access code first")]
    CodeRequired,
    #[error("this code is already used by another account")]
    CodeBound,
    #[error("this code was revoked by the course provider")]
    CodeRevoked,
    #[error("this code does not belong to this course")]
    WrongShare,
    #[error("this code is not valid")]
    InvalidCode,
    #[error("you already have access to this course")]
    AlreadyHasAccess,
    #[error("{0}")]
    ShareUnavailable(crate::shares::Unavailability),
    #[error("this course has reached its access limit")]
    QuotaExhausted,
    #[error("you have used all your accesses to this course")]
    LearnerLimitReached,
    #[error("this account is disabled")]
    AccountDisabled,
    #[error("no such resource")]
    ResourceNotFound,
    #[error(
        "this request id was already used for another request, or its access has ended; retry with a new one"
    )]
    RequestIdReused,
    #[error("a request id is 1 to 200 visible characters")]
    InvalidRequestId,
    /// Another attempt holds the code or the learner right now.
    #[error("someone is using this code right now; try again in a moment")]
    Busy,
    /// Redis (fail-closed) or PostgreSQL cannot serve now.
    #[error("the service is degraded; try again in a moment")]
    Unavailable,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Phase 1: what a typed code is, for this learner in this share. Binds
/// nothing. `Ok` carries the code id to keep in the session (phase 2).
pub async fn validate(
    pool: &PgPool,
    keyring: &Keyring,
    share: &Share,
    principal: AccountId,
    code: &PlainCode,
) -> Result<Uuid, SettlementError> {
    if let Some(reason) = share.unavailable_because(OffsetDateTime::now_utc()) {
        return Err(SettlementError::ShareUnavailable(reason));
    }
    let candidates = keyring.candidates(code);
    let found = sqlx::query!(
        r#"SELECT id, tenant_id, share_id, bound_principal, revoked_at IS NOT NULL AS "revoked!"
           FROM auth_codes WHERE digest = ANY($1)"#,
        &candidates,
    )
    .fetch_optional(pool)
    .await
    .context("looking a code up")?;
    let Some(found) = found else {
        return Err(SettlementError::InvalidCode);
    };
    if found.tenant_id != share.tenant_id || found.share_id != share.id {
        return Err(SettlementError::WrongShare);
    }
    if found.revoked {
        return Err(SettlementError::CodeRevoked);
    }
    match found.bound_principal {
        Some(p) if p == principal.0 => return Ok(found.id),
        Some(_) => {
            // The leak signal: someone else holds this code's text.
            sqlx::query!(
                "UPDATE auth_codes SET foreign_attempts = foreign_attempts + 1,
                        last_foreign_attempt_at = now()
                 WHERE tenant_id = $1 AND id = $2",
                found.tenant_id,
                found.id,
            )
            .execute(pool)
            .await
            .context("counting an attempt on a bound code")?;
            crate::measures::leak_signal();
            return Err(SettlementError::CodeBound);
        }
        None => {}
    }
    if binding_of(pool, share, principal).await?.is_some() {
        return Err(SettlementError::AlreadyHasAccess);
    }
    Ok(found.id)
}

/// The code bound to `principal` in `share`, if any.
pub async fn binding_of(
    pool: &PgPool,
    share: &Share,
    principal: AccountId,
) -> anyhow::Result<Option<BindingView>> {
    sqlx::query_as!(
        BindingView,
        r#"SELECT id AS code_id, hint, first_used_at AS "bound_at!", access_count, revoked_at IS NOT NULL AS "revoked!"
           FROM auth_codes
           WHERE tenant_id = $1 AND share_id = $2 AND bound_principal = $3 AND bound_principal IS NOT NULL"#,
        share.tenant_id,
        share.id,
        principal.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a learner's binding")
}

/// Every share `principal` holds a code of, in every tenant, most recently
/// bound first ("My courses"). Bounded: nobody holds thousands of courses.
pub async fn holdings_of(pool: &PgPool, principal: AccountId) -> anyhow::Result<Vec<Holding>> {
    sqlx::query_as!(
        Holding,
        r#"SELECT s.slug, s.title, s.status, t.name AS tenant_name, c.hint,
                  c.first_used_at AS "bound_at!", c.revoked_at IS NOT NULL AS "revoked!"
           FROM auth_codes c
           JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           JOIN tenants t ON t.id = c.tenant_id
           WHERE c.bound_principal = $1
           ORDER BY c.first_used_at DESC
           LIMIT 500"#,
        principal.0,
    )
    .fetch_all(pool)
    .await
    .context("listing a learner's courses")
}

/// One share a learner holds a code of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    pub slug: String,
    pub title: String,
    pub status: String,
    pub tenant_name: String,
    pub hint: String,
    pub bound_at: OffsetDateTime,
    pub revoked: bool,
}

/// A learner's binding in a share, as the learner sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct BindingView {
    pub code_id: Uuid,
    pub hint: String,
    #[serde(with = "time::serde::rfc3339")]
    pub bound_at: OffsetDateTime,
    pub access_count: i32,
    pub revoked: bool,
}

/// Why one transaction attempt must start over.
enum Attempt {
    Failed(SettlementError),
    StartOver,
}

impl From<SettlementError> for Attempt {
    fn from(error: SettlementError) -> Self {
        Self::Failed(error)
    }
}

impl From<anyhow::Error> for Attempt {
    fn from(error: anyhow::Error) -> Self {
        Self::Failed(classify(error))
    }
}

/// Connection loss and timeouts are "unavailable" (retryable), not bugs.
fn classify(error: anyhow::Error) -> SettlementError {
    if crate::db::is_transient(&error) {
        tracing::warn!(
            error = format!("{error:#}"),
            "settlement could not reach PostgreSQL in time"
        );
        SettlementError::Unavailable
    } else {
        SettlementError::Unexpected(error)
    }
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|e| e.kind() == sqlx::error::ErrorKind::UniqueViolation)
}

/// Settles first and returning accesses.
#[derive(Debug, Clone)]
pub struct Settler {
    reserver: Reserver,
    options: SettlementOptions,
}

impl Settler {
    pub fn new(options: SettlementOptions) -> Self {
        Self {
            reserver: Reserver::new(),
            options,
        }
    }

    pub fn options(&self) -> &SettlementOptions {
        &self.options
    }

    /// Phase 3: decides access to `request.resource`, binding the pending
    /// code on a first access.
    pub async fn settle(
        &self,
        pool: &PgPool,
        redis: &Redis,
        request: &SettlementRequest,
    ) -> Result<Grant, SettlementError> {
        let span = tracing::info_span!(
            "settle",
            tenant = %request.share.tenant_id,
            share = %request.share.id,
            principal = %request.principal.0,
            outcome = tracing::field::Empty,
        );
        let result = self
            .settle_unmeasured(pool, redis, request)
            .instrument(span.clone())
            .await;
        crate::measures::settlement(result.as_ref().map(|g| (g.bound_now, g.replayed)));
        span.record(
            "outcome",
            match &result {
                Ok(grant) if grant.bound_now => "bound",
                Ok(_) => "granted",
                Err(_) => "refused",
            },
        );
        result
    }

    async fn settle_unmeasured(
        &self,
        pool: &PgPool,
        redis: &Redis,
        request: &SettlementRequest,
    ) -> Result<Grant, SettlementError> {
        let share = &request.share;
        if let Some(reason) = share.unavailable_because(OffsetDateTime::now_utc()) {
            return Err(SettlementError::ShareUnavailable(reason));
        }
        // Returning learners: the database binding decides, no Redis.
        let bound = binding_of(pool, share, request.principal)
            .await
            .map_err(classify)?;
        if bound.is_some() {
            return self.run_transaction(pool, request).await;
        }
        let code = request.pending_code.ok_or(SettlementError::CodeRequired)?;
        let keys = ReservationKeys {
            code: redis
                .keys()
                .reservation_code(share.tenant_id, share.id, code),
            user: redis
                .keys()
                .reservation_user(share.tenant_id, share.id, request.principal.0),
        };
        // Request ids are chosen by callers: scope the owner to the learner
        // so that two learners picking the same id never share a reservation.
        let owner = format!("{}:{}", request.principal.0, request.request_id.as_str());
        let owner = owner.as_str();
        // One wait schedule for every kind of "busy", owned here: a
        // request never waits inside another wait.
        let mut waits = BUSY_WAITS_MS.iter();
        let reserved = loop {
            self.count(|p| &p.reservations);
            let answer = self
                .reserver
                .reserve(redis, &keys, owner, self.options.reservation_ttl)
                .await;
            let worth_waiting = match answer {
                Ok(Reservation::Reserved) => break true,
                // The learner's own other request (a video player's Range
                // requests): it takes milliseconds, then this one takes the
                // returning-learner path.
                Ok(Reservation::UserBusy) => true,
                // Someone else's attempt at this code: a person waits for
                // the definite answer ("already used"); an API client
                // hears "busy" at once and retries with its request id, so
                // a hot code's losers stay off PostgreSQL.
                Ok(Reservation::CodeHeld) => request.patience == Patience::WaitBriefly,
                Err(error) => match self.options.failure_policy {
                    FailurePolicy::FailClosed => {
                        tracing::warn!(
                            error = format!("{error:#}"),
                            "reservation failed; refusing (fail-closed)"
                        );
                        return Err(SettlementError::Unavailable);
                    }
                    FailurePolicy::DbOnly => {
                        tracing::warn!(
                            error = format!("{error:#}"),
                            "reservation failed; settling in PostgreSQL alone"
                        );
                        break false;
                    }
                },
            };
            let Some(wait) = waits.next().filter(|_| worth_waiting) else {
                return Err(SettlementError::Busy);
            };
            tokio::time::sleep(Duration::from_millis(*wait)).await;
            if binding_of(pool, share, request.principal)
                .await
                .map_err(classify)?
                .is_some()
            {
                return self.run_transaction(pool, request).await;
            }
        };
        let result = self.run_transaction(pool, request).await;
        if reserved && let Err(error) = self.reserver.release(redis, &keys, owner).await {
            // The TTL cleans up; the settlement's outcome stands.
            tracing::warn!(
                error = format!("{error:#}"),
                "releasing a reservation failed"
            );
        }
        result
    }

    /// Runs the transaction, starting over (at most a few times) when a
    /// unique violation says a concurrent attempt changed the state.
    async fn run_transaction(
        &self,
        pool: &PgPool,
        request: &SettlementRequest,
    ) -> Result<Grant, SettlementError> {
        for _ in 0..3 {
            let started = std::time::Instant::now();
            let attempt = tokio::time::timeout(
                self.options.transaction_timeout,
                self.transaction(pool, request)
                    .instrument(tracing::debug_span!("settlement transaction")),
            )
            .await;
            crate::measures::settlement_transaction(started.elapsed());
            match attempt {
                Err(_elapsed) => {
                    tracing::warn!("settlement transaction timed out (rolled back)");
                    return Err(SettlementError::Unavailable);
                }
                Ok(Ok(grant)) => return Ok(grant),
                Ok(Err(Attempt::Failed(error))) => return Err(error),
                Ok(Err(Attempt::StartOver)) => self.count(|p| &p.start_overs),
            }
        }
        Err(SettlementError::Busy)
    }

    fn count(&self, which: impl Fn(&SettlementProbe) -> &std::sync::atomic::AtomicU64) {
        if let Some(probe) = &self.options.probe {
            which(probe).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn fault(&self, point: FaultPoint) -> Result<(), Attempt> {
        if self.options.fault == Some(point) {
            return Err(Attempt::Failed(SettlementError::Unexpected(
                anyhow::anyhow!("injected fault at {point:?}"),
            )));
        }
        Ok(())
    }

    /// **The settlement transaction.** Commits a binding, its debits, its
    /// access record and its outbox rows together, or nothing.
    async fn transaction(
        &self,
        pool: &PgPool,
        request: &SettlementRequest,
    ) -> Result<Grant, Attempt> {
        let share = &request.share;
        let (tenant, share_id, principal) = (share.tenant_id, share.id, request.principal.0);
        let mut tx: Transaction<'_, Postgres> =
            pool.begin().await.context("starting the settlement")?;
        self.count(|p| &p.transactions);

        // A retry of an attempt that committed gets its first result, but
        // only while that result still holds: the grant is live, the code is
        // still this learner's and not revoked.
        if let Some(previous) = sqlx::query!(
            "SELECT code_id, resource_id, bound_now, expires_at
             FROM access_records WHERE tenant_id = $1 AND principal_id = $2 AND request_id = $3",
            tenant,
            principal,
            request.request_id.as_str(),
        )
        .fetch_optional(&mut *tx)
        .await
        .context("looking for an earlier attempt")?
        {
            if previous.resource_id != request.resource {
                return Err(SettlementError::RequestIdReused.into());
            }
            let code = sqlx::query!(
                r#"SELECT bound_principal, revoked_at IS NOT NULL AS "revoked!" FROM auth_codes
                   WHERE tenant_id = $1 AND id = $2 FOR SHARE"#,
                tenant,
                previous.code_id,
            )
            .fetch_one(&mut *tx)
            .await
            .context("re-checking a replayed attempt's code")?;
            if code.revoked {
                return Err(SettlementError::CodeRevoked.into());
            }
            if code.bound_principal != Some(principal) {
                return Err(SettlementError::CodeRequired.into());
            }
            if previous.expires_at <= OffsetDateTime::now_utc() {
                return Err(SettlementError::RequestIdReused.into());
            }
            return Ok(Grant {
                code_id: previous.code_id,
                bound_now: previous.bound_now,
                counted: true,
                replayed: true,
                expires_at: previous.expires_at,
            });
        }

        // The share, its window and policy, as of now.
        let policy = sqlx::query!(
            "SELECT status, valid_from, valid_until, per_learner_limit FROM shares WHERE tenant_id = $1 AND id = $2",
            tenant,
            share_id,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the share")?
        .ok_or(SettlementError::ShareUnavailable(crate::shares::Unavailability::NotAvailable))?;
        let current = Share {
            status: policy.status,
            valid_from: policy.valid_from,
            valid_until: policy.valid_until,
            ..share.clone()
        };
        if let Some(reason) = current.unavailable_because(OffsetDateTime::now_utc()) {
            return Err(SettlementError::ShareUnavailable(reason).into());
        }
        // FOR SHARE: a resource being removed is either gone before this
        // access is counted, or removed only after it commits.
        let resource_ok = sqlx::query_scalar!(
            r#"SELECT 1 AS "one!" FROM resources
               WHERE tenant_id = $1 AND share_id = $2 AND id = $3 AND deleted_at IS NULL
               FOR SHARE"#,
            tenant,
            share_id,
            request.resource,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the resource")?
        .is_some();
        if !resource_ok {
            return Err(SettlementError::ResourceNotFound.into());
        }

        // The account.
        let active = sqlx::query_scalar!(
            r#"SELECT disabled_at IS NULL AS "active!" FROM accounts WHERE id = $1"#,
            principal,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the account")?;
        if active != Some(true) {
            return Err(SettlementError::AccountDisabled.into());
        }

        // An existing binding decides; it is locked so that one learner's
        // concurrent settlements in a share run one after another.
        let existing = sqlx::query!(
            r#"SELECT id, revoked_at IS NOT NULL AS "revoked!" FROM auth_codes
               WHERE tenant_id = $1 AND share_id = $2 AND bound_principal = $3 AND bound_principal IS NOT NULL
               FOR UPDATE"#,
            tenant,
            share_id,
            principal,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the learner's binding")?;
        let (code_id, bound_now) = match existing {
            Some(row) if row.revoked => return Err(SettlementError::CodeRevoked.into()),
            Some(row) => (row.id, false),
            None => {
                let code = request.pending_code.ok_or(SettlementError::CodeRequired)?;
                self.count(|p| &p.bind_attempts);
                let bound = sqlx::query_scalar!(
                    "UPDATE auth_codes SET bound_principal = $4, first_used_at = now()
                     WHERE tenant_id = $1 AND share_id = $2 AND id = $3
                       AND bound_principal IS NULL AND revoked_at IS NULL
                     RETURNING id",
                    tenant,
                    share_id,
                    code,
                    principal,
                )
                .fetch_optional(&mut *tx)
                .await;
                match bound {
                    Ok(Some(id)) => (id, true),
                    Ok(None) => {
                        // Lost the compare-and-set: read why, in this fresh statement.
                        let state = sqlx::query!(
                            r#"SELECT bound_principal, revoked_at IS NOT NULL AS "revoked!" FROM auth_codes
                               WHERE tenant_id = $1 AND share_id = $2 AND id = $3 FOR UPDATE"#,
                            tenant,
                            share_id,
                            code,
                        )
                        .fetch_optional(&mut *tx)
                        .await
                        .context("re-reading a code after losing it")?
                        .ok_or(SettlementError::WrongShare)?;
                        match state.bound_principal {
                            _ if state.revoked => return Err(SettlementError::CodeRevoked.into()),
                            Some(p) if p == principal => (code, false),
                            Some(_) => return Err(SettlementError::CodeBound.into()),
                            None => return Err(SettlementError::CodeRevoked.into()),
                        }
                    }
                    // This learner bound another code concurrently: roll
                    // back and start over; the next attempt finds it.
                    Err(error) if is_unique_violation(&error) => return Err(Attempt::StartOver),
                    Err(error) => {
                        return Err(anyhow::Error::new(error).context("binding the code").into());
                    }
                }
            }
        };
        self.fault(FaultPoint::AfterBind)?;

        // A live grant of this resource: no new access to count.
        if let Some(live) = sqlx::query_scalar!(
            "SELECT expires_at FROM access_records
             WHERE tenant_id = $1 AND share_id = $2 AND principal_id = $3 AND resource_id = $4 AND expires_at > now()
             ORDER BY expires_at DESC LIMIT 1",
            tenant,
            share_id,
            principal,
            request.resource,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("looking for a live grant")?
        {
            tx.commit().await.context("committing the settlement")?;
            return Ok(Grant {
                code_id,
                bound_now,
                counted: false,
                replayed: false,
                expires_at: live,
            });
        }

        // Debit the learner (the share's counter comes last, see below):
        // conditional, never past the limit.
        let learner = sqlx::query!(
            "UPDATE auth_codes SET access_count = access_count + 1
             WHERE tenant_id = $1 AND id = $2 AND ($3::integer IS NULL OR access_count < $3)",
            tenant,
            code_id,
            policy.per_learner_limit,
        )
        .execute(&mut *tx)
        .await
        .context("debiting the learner")?;
        if learner.rows_affected() == 0 {
            return Err(SettlementError::LearnerLimitReached.into());
        }
        self.fault(FaultPoint::AfterLearnerDebit)?;

        let ttl =
            time::Duration::try_from(self.options.grant_ttl).context("grant TTL out of range")?;
        let expires_at = OffsetDateTime::now_utc() + ttl;
        let record_id = Uuid::now_v7();
        let recorded = sqlx::query!(
            "INSERT INTO access_records
                 (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            tenant,
            record_id,
            share_id,
            code_id,
            principal,
            request.resource,
            request.request_id.as_str(),
            bound_now,
            expires_at,
        )
        .execute(&mut *tx)
        .await;
        match recorded {
            Ok(_) => {}
            // A concurrent retry of this attempt recorded first: start over
            // and answer from its record.
            Err(error) if is_unique_violation(&error) => return Err(Attempt::StartOver),
            Err(error) => {
                return Err(anyhow::Error::new(error)
                    .context("recording the access")
                    .into());
            }
        }
        self.fault(FaultPoint::AfterRecord)?;

        let tenant_id = TenantId(tenant);
        if bound_now {
            audit::emit(
                &mut tx,
                tenant_id,
                "code.bound",
                json!({ "share_id": share_id, "code_id": code_id, "principal": principal }),
            )
            .await?;
        }
        audit::emit(
            &mut tx,
            tenant_id,
            "access.recorded",
            json!({ "share_id": share_id, "code_id": code_id, "principal": principal,
                    "resource_id": request.resource, "access_id": record_id }),
        )
        .await?;
        // The share's counter last: every settlement in a share updates this
        // one row, so it is locked for as short a time as possible.
        let quota = sqlx::query!(
            "UPDATE shares SET quota_used = quota_used + 1
             WHERE tenant_id = $1 AND id = $2 AND (quota IS NULL OR quota_used < quota)",
            tenant,
            share_id,
        )
        .execute(&mut *tx)
        .await
        .context("debiting the share")?;
        if quota.rows_affected() == 0 {
            return Err(SettlementError::QuotaExhausted.into());
        }
        self.fault(FaultPoint::AfterShareDebit)?;
        tx.commit().await.context("committing the settlement")?;
        self.fault(FaultPoint::AfterCommit)?;
        Ok(Grant {
            code_id,
            bound_now,
            counted: true,
            replayed: false,
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_bounded_visible_ascii() {
        assert!(RequestId::parse("abc-123").is_ok());
        assert!(RequestId::parse("").is_err());
        assert!(RequestId::parse("a b").is_err());
        assert!(RequestId::parse(&"x".repeat(201)).is_err());
        assert!(RequestId::parse("ключ").is_err());
        assert_ne!(RequestId::generate(), RequestId::generate());
    }
}
