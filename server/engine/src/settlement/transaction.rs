//! **The settlement transaction** ([`Settler::transaction`]): where a code
//! is bound and an access counted, in PostgreSQL, all or nothing.
//!
//! Its statements are one PL/pgSQL function, `settle_access`, defined in
//! `migrations/20261202000007_quota_slots_and_settle.sql` and redefined
//! whole by each later migration that changes it (today
//! `20261208000001_settle_checks_session.sql`, the definition in force):
//! one call is one round trip and one implicit transaction. It checks the
//! session first (the account still at the session's epoch, and not
//! disabled), answers a retry from the first attempt's record, checks the
//! share, the resource, the account (not suspended by the tenant, and, to
//! bind, a verified address unless the tenant waives it) and an existing
//! binding, binds with a
//! compare-and-set `UPDATE … WHERE bound_principal IS NULL`, debits the
//! learner's counter and the share's quota slot (`share_quota_slots`, when
//! the share has a quota) with conditional UPDATEs, writes the access
//! record (unique per request id), the outbox rows and, for a new binding,
//! the learner's receipt in the mail outbox.
//!
//! This file maps its answers: an outcome row, a refusal raised after a
//! write (SQLSTATE `AOREF`, so that the write is rolled back), a unique
//! violation (a concurrent attempt won: [`Settler::run_transaction`] starts
//! over, reading the final state afresh). The concurrency suite's
//! [`FaultPoint`]s are the function's `p_fault` steps (SQLSTATE `AOFLT`),
//! and `AfterCommit` here, after the call returned.

use sqlx::PgPool;
use tracing::Instrument as _;
use uuid::Uuid;

use super::{Counting, Grant, SettlementError, SettlementRequest, Settler, options::FaultPoint};

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
                self.transaction(pool, request, started)
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

    /// **The settlement transaction**: one call of `settle_access` (the
    /// migration `…_quota_slots_and_settle.sql` holds its statements), one
    /// round trip, one implicit transaction. Commits a binding, its debits,
    /// its access record and its outbox rows together, or nothing.
    async fn transaction(
        &self,
        pool: &PgPool,
        request: &SettlementRequest,
        started: std::time::Instant,
    ) -> Result<Grant, Attempt> {
        let share = &request.share;
        // The connection first: waiting for one counts against the bound,
        // and the call's budget is what is left of it.
        let mut conn = pool.acquire().await.map_err(|e| {
            Attempt::Failed(classify(
                anyhow::Error::new(e).context("a connection for the settlement"),
            ))
        })?;
        self.count(|p| &p.transactions);
        let ttl = self.options.grant_ttl.as_secs_f64();
        // Four fifths of what is left of the caller's bound: PostgreSQL
        // gives up (and rolls back) before this side stops waiting for its
        // answer, so a caller told "unavailable" never has a settlement
        // committing behind its back.
        let left = self
            .options
            .transaction_timeout
            .saturating_sub(started.elapsed());
        let budget_ms = i32::try_from(left.as_millis() * 4 / 5).unwrap_or(i32::MAX);
        if budget_ms <= 0 {
            return Err(Attempt::Failed(SettlementError::Unavailable));
        }
        let fault = match self.options.fault {
            Some(FaultPoint::AfterBind) => Some("after_bind"),
            Some(FaultPoint::AfterLearnerDebit) => Some("after_learner_debit"),
            Some(FaultPoint::AfterRecord) => Some("after_record"),
            Some(FaultPoint::AfterShareDebit) => Some("after_share_debit"),
            Some(FaultPoint::AfterCommit) | None => None,
        };
        let settled = sqlx::query!(
            r#"SELECT outcome AS "outcome!", code_id, bound_now AS "bound_now!", counted AS "counted!",
                      replayed AS "replayed!", tried_bind AS "tried_bind!", expires_at
               FROM settle_access($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"#,
            share.tenant_id.0,
            share.id.0,
            request.principal.0,
            request.resource,
            request.request_id.as_str(),
            request.pending_code,
            request.counting == Counting::Allowed,
            ttl,
            Uuid::now_v7(),
            Uuid::now_v7(),
            Uuid::now_v7(),
            Uuid::now_v7(),
            budget_ms,
            fault,
            request.session_epoch,
        )
        .fetch_one(&mut *conn)
        .await;
        let settled = match settled {
            Ok(row) => row,
            Err(error) => return Err(self.failed(error)),
        };
        if settled.tried_bind {
            self.count(|p| &p.bind_attempts);
        }
        match (
            settled.outcome.as_str(),
            settled.code_id,
            settled.expires_at,
        ) {
            ("granted", Some(code_id), Some(expires_at)) => {
                // The process "dies" after committing a new access.
                if settled.counted && !settled.replayed {
                    self.fault(FaultPoint::AfterCommit)?;
                }
                Ok(Grant {
                    code_id,
                    bound_now: settled.bound_now,
                    counted: settled.counted,
                    replayed: settled.replayed,
                    expires_at,
                })
            }
            // No binding when the call looked, yet there is one now: the
            // binding moved to a new code while the call waited on the old
            // code's row (revoke and replace inserts the new row, which a
            // statement that started before it cannot see). Start over.
            ("code_required", _, _) if request.pending_code.is_none() => {
                let bound_now = sqlx::query_scalar!(
                    r#"SELECT EXISTS (SELECT 1 FROM auth_codes
                                      WHERE tenant_id = $1 AND share_id = $2 AND bound_principal = $3)
                       AS "bound!""#,
                    share.tenant_id.0,
                    share.id.0,
                    request.principal.0,
                )
                .fetch_one(&mut *conn)
                .await
                .map_err(|error| self.failed(error))?;
                Err(if bound_now {
                    Attempt::StartOver
                } else {
                    Attempt::Failed(SettlementError::CodeRequired)
                })
            }
            (outcome, _, at) => Err(Attempt::Failed(refusal(outcome, at))),
        }
    }

    /// What a failed call means: a concurrent attempt won (start over), a
    /// refusal found after a write (raised so that nothing stays), a fault
    /// a test injected, or PostgreSQL failing.
    fn failed(&self, error: sqlx::Error) -> Attempt {
        if is_unique_violation(&error) {
            // The bind's compare-and-set met this learner's other binding.
            if error
                .as_database_error()
                .and_then(|e| e.constraint())
                .is_some_and(|c| c == "auth_codes_one_per_learner")
            {
                self.count(|p| &p.bind_attempts);
            }
            return Attempt::StartOver;
        }
        if let Some(db) = error.as_database_error() {
            match db.code().as_deref() {
                Some(REFUSED) => {
                    let tried_bind = db
                        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                        .and_then(|e| e.detail())
                        == Some("tried_bind");
                    if tried_bind {
                        self.count(|p| &p.bind_attempts);
                    }
                    return Attempt::Failed(refusal(db.message(), None));
                }
                Some(INJECTED) => {
                    return Attempt::Failed(SettlementError::Unexpected(anyhow::anyhow!(
                        "{}",
                        db.message()
                    )));
                }
                _ => {}
            }
        }
        Attempt::Failed(classify(
            anyhow::Error::new(error).context("settling (settle_access)"),
        ))
    }
}

/// SQLSTATE of a refusal `settle_access` raised after it wrote something.
const REFUSED: &str = "AOREF";
/// SQLSTATE of a fault a test injected (`p_fault`).
const INJECTED: &str = "AOFLT";

/// `settle_access`'s outcome as the refusal it names (`at`: the row's
/// `expires_at`, which says when an access period ended). Every outcome
/// the function has is here; anything else is a bug, not a refusal.
fn refusal(outcome: &str, at: Option<time::OffsetDateTime>) -> SettlementError {
    use crate::shares::Unavailability as U;
    match outcome {
        "access_ended" => match at {
            Some(ended_at) => SettlementError::AccessEnded { ended_at },
            None => SettlementError::Unexpected(anyhow::anyhow!(
                "settle_access answered access_ended without its date"
            )),
        },
        "request_id_reused" => SettlementError::RequestIdReused,
        "code_revoked" => SettlementError::CodeRevoked,
        // Raised by the trigger auth_codes_refuse_expired, from the bind.
        "code_expired" => SettlementError::CodeExpired,
        "code_required" => SettlementError::CodeRequired,
        "code_bound" => SettlementError::CodeBound,
        "wrong_share" => SettlementError::WrongShare,
        "not_available" => SettlementError::ShareUnavailable(U::NotAvailable),
        "paused" => SettlementError::ShareUnavailable(U::Paused),
        "not_open_yet" => SettlementError::ShareUnavailable(U::NotOpenYet),
        "closed" => SettlementError::ShareUnavailable(U::Closed),
        "resource_not_found" => SettlementError::ResourceNotFound,
        "account_disabled" => SettlementError::AccountDisabled,
        "session_ended" => SettlementError::SessionEnded,
        "learner_suspended" => SettlementError::LearnerSuspended,
        "open_from_course_page" => SettlementError::OpenFromCoursePage,
        "email_not_verified" => SettlementError::EmailNotVerified,
        "learner_limit_reached" => SettlementError::LearnerLimitReached,
        "quota_exhausted" => SettlementError::QuotaExhausted,
        other => SettlementError::Unexpected(anyhow::anyhow!(
            "settle_access answered an unknown outcome {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every outcome the function can answer maps to its refusal; an
    /// unknown one is a bug, never a refusal a learner would read.
    #[test]
    fn every_outcome_of_settle_access_is_a_known_refusal() {
        // The latest definition (each migration that changes it redefines
        // it whole).
        let migration =
            include_str!("../../../../migrations/20261208000001_settle_checks_session.sql");
        // The function's own body: the migration's other functions raise
        // errors of their own (a time budget, a quota out of step).
        let start = migration
            .find("CREATE OR REPLACE FUNCTION settle_access(")
            .expect("settle_access");
        let body = &migration[start..];
        let body = &body[..body.find("\n$$;").expect("the end of settle_access")];
        let mut outcomes: Vec<&str> = body
            .split("RETURN QUERY SELECT '")
            .skip(1)
            .chain(body.split("RAISE EXCEPTION '").skip(1))
            .filter_map(|rest| rest.split('\'').next())
            // Not a refusal: a fault a test injected.
            .filter(|o| !o.starts_with("injected fault"))
            .collect();
        outcomes.sort_unstable();
        outcomes.dedup();
        assert!(outcomes.len() >= 15, "{outcomes:?}");
        for outcome in outcomes {
            if outcome == "granted" {
                continue;
            }
            assert!(
                !matches!(
                    refusal(outcome, Some(time::OffsetDateTime::now_utc())),
                    SettlementError::Unexpected(_)
                ),
                "{outcome} is not mapped"
            );
        }
        assert!(matches!(
            refusal("nonsense", None),
            SettlementError::Unexpected(_)
        ));
        // An ended access says when it ended, or it is a bug.
        assert!(matches!(
            refusal("access_ended", None),
            SettlementError::Unexpected(_)
        ));
    }

    /// The number of arguments of a `settle_access(…)` call in `text`.
    fn arguments_of_the_call(text: &str) -> usize {
        let call = &text[text.find("FROM settle_access(").expect("a call") + 19..];
        // Commas outside nested calls (`md5(random()::text)`), up to the
        // parenthesis that closes this one.
        let (mut depth, mut commas) = (0usize, 0);
        for c in call.chars() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => return commas + 1,
                ')' => depth -= 1,
                ',' if depth == 0 => commas += 1,
                _ => {}
            }
        }
        panic!("the call does not end")
    }

    /// The bench's raw counterpart (`scripts/bench/settle.sql`) calls the
    /// function the app calls with as many arguments: when the function
    /// changes, a bench still calling the old form fails here, not in a
    /// late `make bench`.
    #[test]
    fn the_bench_calls_settle_access_as_the_app_does() {
        let bench = include_str!("../../../../scripts/bench/settle.sql");
        let app = include_str!("transaction.rs");
        assert_eq!(arguments_of_the_call(app), 15);
        assert_eq!(arguments_of_the_call(bench), arguments_of_the_call(app));
    }

    /// The refusals the triggers on a binding raise (SQLSTATE AOREF) map
    /// too: they reach the caller through `settle_access`'s bind.
    #[test]
    fn every_refusal_a_binding_trigger_raises_is_known() {
        let migration = include_str!("../../../../migrations/20261203000001_code_expiry.sql");
        let raised: Vec<&str> = migration
            .split("RAISE EXCEPTION '")
            .skip(1)
            .filter_map(|rest| rest.split('\'').next())
            .collect();
        assert_eq!(raised, ["code_expired"]);
        for outcome in raised {
            assert!(matches!(
                refusal(outcome, None),
                SettlementError::CodeExpired
            ));
        }
    }
}
