//! **The settlement transaction** ([`Settler::transaction`]): where a code
//! is bound and an access counted, in PostgreSQL, all or nothing.
//!
//! Its statements are one PL/pgSQL function, `settle_access`, whose
//! definition in force is `settle_access.sql` beside this file (the
//! migration that installs it links to that file; `migrations/README.md`
//! says how to change it): one call is one round trip and one implicit
//! transaction. It checks the
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
//! This file maps its answers: an outcome row (its word read as an
//! `Answer`, `answer.rs`, with the learner's binding on a grant), a refusal raised
//! after a write (SQLSTATE `AOREF`, so that the write is rolled back), a unique
//! violation (a concurrent attempt won: [`Settler::run_transaction`] starts
//! over, reading the final state afresh). The concurrency suite's
//! [`FaultPoint`]s are the function's `p_fault` steps (SQLSTATE `AOFLT`),
//! and `AfterCommit` here, after the call returned.

use sqlx::PgPool;
use tracing::Instrument as _;
use uuid::Uuid;

use super::{
    BindingView, Counting, Grant, SettlementError, SettlementRequest, Settler,
    answer::{Answer, refusal},
    options::FaultPoint,
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
        request: &SettlementRequest,
    ) -> Result<Grant, SettlementError> {
        for _ in 0..3 {
            let started = std::time::Instant::now();
            let attempt = tokio::time::timeout(
                self.options.transaction_timeout,
                self.transaction(&self.pool, request, started)
                    .instrument(tracing::debug_span!("settlement transaction")),
            )
            .await;
            crate::metrics::settlement_transaction(started.elapsed());
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

    /// **The settlement transaction**: one call of `settle_access`
    /// (`settle_access.sql` beside this file holds its statements), one
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
        // answer, so a caller told "unavailable" has no settlement still
        // running behind its back. One wait is not bounded: a commit
        // waiting for its synchronous standby (PostgreSQL turns the
        // statement timeout off before committing) may land after the
        // caller was told "unavailable"; its retry under the same request
        // id is answered from it (docs/operations/high-availability.md).
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
            r#"SELECT outcome AS "outcome!: Answer", code_id, bound_now AS "bound_now!", counted AS "counted!",
                      replayed AS "replayed!", tried_bind AS "tried_bind!", expires_at,
                      hint, bound_at, access_count, access_ends
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
        .fetch_all(&mut *conn)
        .await;
        // Exactly one row, as `settle_access` promises: a second (a branch
        // that answered and did not return) is a broken definition, and it
        // is said loudly (500, logged) instead of reading the first row
        // as if all were well. It cannot undo what that call committed.
        let settled = match settled.map(<[_; 1]>::try_from) {
            Ok(Ok([row])) => row,
            Ok(Err(rows)) => {
                return Err(Attempt::Failed(SettlementError::Unexpected(
                    anyhow::anyhow!("settle_access answered {} rows, not one", rows.len()),
                )));
            }
            Err(error) => return Err(self.failed(error)),
        };
        if settled.tried_bind {
            self.count(|p| &p.bind_attempts);
        }
        match settled.outcome {
            Answer::Granted => {
                let (
                    Some(code_id),
                    Some(expires_at),
                    Some(hint),
                    Some(bound_at),
                    Some(access_count),
                ) = (
                    settled.code_id,
                    settled.expires_at,
                    settled.hint,
                    settled.bound_at,
                    settled.access_count,
                )
                else {
                    return Err(Attempt::Failed(SettlementError::Unexpected(
                        anyhow::anyhow!(
                            "settle_access granted without the code, the grant's end or the binding"
                        ),
                    )));
                };
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
                    binding: BindingView {
                        code_id,
                        hint,
                        bound_at,
                        access_count,
                        // A revoked code is never granted.
                        revoked: false,
                        access_ends: settled.access_ends,
                    },
                })
            }
            // No binding when the call looked, yet there is one now: the
            // binding moved to a new code while the call waited on the old
            // code's row (revoke and replace inserts the new row, which a
            // statement that started before it cannot see). Start over.
            Answer::CodeRequired if request.pending_code.is_none() => {
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
            refused => Err(Attempt::Failed(refusal(refused, settled.expires_at))),
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
                    return Attempt::Failed(match Answer::parse(db.message()) {
                        Some(outcome) => refusal(outcome, None),
                        None => SettlementError::Unexpected(anyhow::anyhow!(
                            "settle_access raised an unknown refusal {:?}",
                            db.message()
                        )),
                    });
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

#[cfg(test)]
mod tests {
    /// The migrations in the order they are applied, with their text (a
    /// link read through), and whether each is a link.
    fn migrations() -> Vec<(String, String, bool)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
        let mut found: Vec<(String, String, bool)> = std::fs::read_dir(&dir)
            .expect("the migrations")
            .map(|entry| {
                let entry = entry.expect("a migration");
                let name = entry.file_name().to_string_lossy().into_owned();
                let linked = entry.file_type().expect("its type").is_symlink();
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                (name, text, linked)
            })
            .filter(|(name, _, _)| name.ends_with(".sql"))
            .collect();
        found.sort();
        found
    }

    /// `settle_access.sql` is the definition in force: the newest migration
    /// that defines the function is that very text. And only that migration
    /// may be a link to it: an older one linking to it would change what a
    /// database already applied (`migrations/README.md`).
    #[test]
    fn the_newest_migration_defining_settle_access_is_this_file() {
        let migrations = migrations();
        let defines = |text: &str| {
            text.contains("CREATE FUNCTION settle_access(")
                || text.contains("CREATE OR REPLACE FUNCTION settle_access(")
        };
        let newest = migrations
            .iter()
            .rfind(|(_, text, _)| defines(text))
            .expect("a migration defines settle_access");
        assert_eq!(
            newest.1,
            include_str!("settle_access.sql"),
            "{} is not settle_access.sql",
            newest.0
        );
        let linked: Vec<&str> = migrations
            .iter()
            .filter(|(_, _, linked)| *linked)
            .map(|(name, _, _)| name.as_str())
            .collect();
        assert!(
            linked.iter().all(|name| *name == newest.0),
            "only the newest definition may be a link: {linked:?}"
        );
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
}
