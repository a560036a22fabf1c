//! **The settlement transaction** ([`Settler::transaction`]): where a code
//! is bound and an access counted, in PostgreSQL, all or nothing.
//!
//! It answers a retry from the first attempt's record, checks the share,
//! the resource, the account (not disabled, not suspended by the tenant,
//! and, to bind, a verified address unless the tenant waives it) and an
//! existing binding, binds with a compare-and-set `UPDATE … WHERE
//! bound_principal IS NULL`, debits the learner's and the share's counters
//! with conditional UPDATEs, writes the access record (unique per request
//! id), the outbox rows and, for a new binding, the learner's receipt in
//! the mail outbox, and commits.
//! A unique violation rolls it back and [`Settler::run_transaction`] starts
//! it over, reading the final state afresh. The concurrency suite's
//! [`FaultPoint`]s sit between the steps.

use anyhow::Context as _;
use serde_json::json;
use sqlx::{PgPool, Postgres, Transaction};
use time::OffsetDateTime;
use tracing::Instrument as _;
use uuid::Uuid;

use super::{Counting, Grant, SettlementError, SettlementRequest, Settler, options::FaultPoint};
use crate::{
    audit, mail,
    shares::{Share, ShareStatus},
    tenants::TenantId,
};

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
pub(super) fn classify(error: anyhow::Error) -> SettlementError {
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

impl Settler {
    /// Runs the transaction, starting over (at most a few times) when a
    /// unique violation says a concurrent attempt changed the state.
    pub(super) async fn run_transaction(
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
        let (tenant, share_id, principal) = (share.tenant_id.0, share.id.0, request.principal.0);
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
            r#"SELECT status AS "status: ShareStatus", valid_from, valid_until, per_learner_limit
               FROM shares WHERE tenant_id = $1 AND id = $2"#,
            tenant,
            share_id,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the share")?
        .ok_or(SettlementError::ShareUnavailable(
            crate::shares::Unavailability::NotAvailable,
        ))?;
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

        // The account: not disabled, not suspended by this tenant, and
        // whether it may bind (a verified address, unless the tenant does
        // not ask for one).
        let account = sqlx::query!(
            r#"SELECT a.disabled_at IS NULL AS "active!",
                      a.email_verified_at IS NOT NULL OR NOT t.require_verified_email AS "may_bind!",
                      EXISTS (SELECT 1 FROM suspended_learners s
                              WHERE s.tenant_id = t.id AND s.account_id = a.id) AS "suspended!"
               FROM accounts a, tenants t WHERE a.id = $1 AND t.id = $2"#,
            principal,
            tenant,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the account")?;
        let Some(account) = account.filter(|a| a.active) else {
            return Err(SettlementError::AccountDisabled.into());
        };
        if account.suspended {
            return Err(SettlementError::LearnerSuspended.into());
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
                // The binding went away since the settler looked (an
                // unbind): a request from another site still never binds.
                if request.counting == Counting::LiveGrantOnly {
                    return Err(SettlementError::OpenFromCoursePage.into());
                }
                // Verifying keeps the pending code: the learner comes back
                // after clicking the mailed link and this succeeds.
                if !account.may_bind {
                    return Err(SettlementError::EmailNotVerified.into());
                }
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

        // No live grant: a new access, unless this request may not count one.
        if request.counting == Counting::LiveGrantOnly {
            return Err(SettlementError::OpenFromCoursePage.into());
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
        let record_id = Uuid::now_v7();
        // The grant ends when the stored record says (PostgreSQL keeps
        // microseconds): a retry answered from the record gets exactly
        // this answer.
        let recorded = sqlx::query_scalar!(
            "INSERT INTO access_records
                 (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             RETURNING expires_at",
            tenant,
            record_id,
            share_id,
            code_id,
            principal,
            request.resource,
            request.request_id.as_str(),
            bound_now,
            OffsetDateTime::now_utc() + ttl,
        )
        .fetch_one(&mut *tx)
        .await;
        let expires_at = match recorded {
            Ok(expires_at) => expires_at,
            // A concurrent retry of this attempt recorded first: start over
            // and answer from its record.
            Err(error) if is_unique_violation(&error) => return Err(Attempt::StartOver),
            Err(error) => {
                return Err(anyhow::Error::new(error)
                    .context("recording the access")
                    .into());
            }
        };
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
            // The learner's receipt: "you now hold <course>".
            mail::enqueue_code_notice(
                &mut tx,
                mail::Template::CodeBound,
                tenant_id,
                share_id,
                request.principal,
                json!({}),
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
