//! Every metric AdmitOne records, named and labelled in one place.
//!
//! The domain code says what happened (`metrics::settlement(..)`); this
//! module decides how that reads on a dashboard. The `metrics` facade
//! records nothing until the server installs a recorder, so the engine's
//! tests and tools pay nothing for it. Labels are small closed sets (never
//! tenants, codes or people), so series stay few.

use std::time::Duration;

use metrics::{counter, gauge, histogram};

use crate::{reservation::Reservation, settlement::SettlementError};

pub const HTTP_REQUESTS: &str = "admitone_http_requests_total";
pub const HTTP_DURATION: &str = "admitone_http_request_duration_seconds";
pub const RESERVATIONS: &str = "admitone_reservations_total";
pub const RESERVATION_SCRIPT: &str = "admitone_reservation_script_seconds";
pub const SETTLEMENTS: &str = "admitone_settlements_total";
pub const SETTLEMENT_TRANSACTION: &str = "admitone_settlement_transaction_seconds";
pub const IDEMPOTENT_REPLAYS: &str = "admitone_idempotent_replays_total";
pub const THROTTLED: &str = "admitone_throttled_total";
pub const SIGNALS: &str = "admitone_signals_total";
pub const LEAK_SIGNALS: &str = "admitone_bound_code_attempts_total";
pub const OUTBOX_BACKLOG: &str = "admitone_outbox_backlog";
pub const WEBHOOK_DELIVERIES: &str = "admitone_webhook_deliveries_total";
pub const WEBHOOK_DEAD: &str = "admitone_webhook_dead_letters";
pub const MAIL_DELIVERIES: &str = "admitone_mail_deliveries_total";
pub const MAIL_BACKLOG: &str = "admitone_mail_backlog";
pub const MAIL_DEAD: &str = "admitone_mail_dead_letters";
pub const DB_CONNECTIONS: &str = "admitone_db_pool_connections";
pub const REDIS_UP: &str = "admitone_redis_up";
pub const DB_PRIMARY_CHANGES: &str = "admitone_db_primary_changes_total";
pub const DB_READS: &str = "admitone_db_reads_total";
pub const INVARIANT_VIOLATIONS: &str = "admitone_invariant_violations";
pub const COUNTER_DRIFT_REPAIRED: &str = "admitone_counter_drift_repaired_total";
pub const PANICS: &str = "admitone_request_panics_total";
pub const TIMEOUTS: &str = "admitone_request_timeouts_total";

/// Describes every metric (help texts and units in the exposition).
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(HTTP_REQUESTS, "HTTP requests by route, method and status.");
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "HTTP request latency by route and method."
    );
    describe_counter!(
        RESERVATIONS,
        "reserve.lua outcomes: ok, code_held, user_busy, redis_error."
    );
    describe_histogram!(RESERVATION_SCRIPT, Unit::Seconds, "reserve.lua round trip.");
    describe_counter!(
        SETTLEMENTS,
        "First-access settlements by outcome: bound, already_bound, lost_race, quota_exhausted, learner_limit, share_unavailable, refused, failed."
    );
    describe_histogram!(
        SETTLEMENT_TRANSACTION,
        Unit::Seconds,
        "The settlement transaction, begin to commit or rollback."
    );
    describe_counter!(
        IDEMPOTENT_REPLAYS,
        "Retries answered from an earlier committed attempt."
    );
    describe_counter!(THROTTLED, "Attempts refused by a rate limit, by scope.");
    describe_counter!(
        SIGNALS,
        "Windows in which a counted signal (wrong codes for one course) reached its limit, by scope."
    );
    describe_counter!(PANICS, "Requests whose handler panicked (answered 500).");
    describe_counter!(
        TIMEOUTS,
        "Requests unanswered at their deadline (answered 503)."
    );
    describe_counter!(
        LEAK_SIGNALS,
        "Attempts by other accounts to use an already bound code."
    );
    describe_gauge!(OUTBOX_BACKLOG, "Outbox events not yet handed to webhooks.");
    describe_counter!(
        WEBHOOK_DELIVERIES,
        "Webhook delivery attempts by outcome: delivered, failed, dead."
    );
    describe_gauge!(
        WEBHOOK_DEAD,
        "Webhook deliveries dead-lettered and not redelivered."
    );
    describe_counter!(
        MAIL_DELIVERIES,
        "Mail delivery attempts by outcome: sent, failed, dead."
    );
    describe_gauge!(MAIL_BACKLOG, "Mails queued and not yet sent.");
    describe_gauge!(MAIL_DEAD, "Mails dead-lettered.");
    describe_gauge!(
        DB_CONNECTIONS,
        "PostgreSQL pool connections by state (idle, in_use)."
    );
    describe_gauge!(REDIS_UP, "1 when Redis answered the last PING, else 0.");
    describe_counter!(
        DB_PRIMARY_CHANGES,
        "Times this instance's pool moved to another PostgreSQL node that answered as the primary."
    );
    describe_counter!(
        DB_READS,
        "Stale-tolerant reads (dashboards, audit log, lists and exports) by where they ran: standby, primary_standby_behind, primary_no_standby, primary."
    );
    describe_gauge!(
        INVARIANT_VIOLATIONS,
        "Violations the last reconciler run found, by check (must be 0)."
    );
    describe_counter!(
        COUNTER_DRIFT_REPAIRED,
        "Quota counters the reconciler repaired."
    );
}

/// One answer of `reserve.lua` (or its failure) and how long it took.
pub fn reservation(answer: Result<Reservation, ()>, took: Duration) {
    let outcome = match answer {
        Ok(Reservation::Reserved) => "ok",
        Ok(Reservation::CodeHeld) => "code_held",
        Ok(Reservation::UserBusy) => "user_busy",
        Err(()) => "redis_error",
    };
    counter!(RESERVATIONS, "outcome" => outcome).increment(1);
    histogram!(RESERVATION_SCRIPT).record(took.as_secs_f64());
}

/// The outcome of one settlement (phase 3).
pub fn settlement(result: Result<(bool, bool), &SettlementError>) {
    use SettlementError as E;
    let outcome = match result {
        Ok((_, true)) => {
            counter!(IDEMPOTENT_REPLAYS).increment(1);
            "replayed"
        }
        Ok((true, false)) => "bound",
        Ok((false, false)) => "already_bound",
        Err(E::Busy | E::CodeBound) => "lost_race",
        Err(E::QuotaExhausted) => "quota_exhausted",
        Err(E::LearnerLimitReached) => "learner_limit",
        Err(E::ShareUnavailable(_)) => "share_unavailable",
        Err(E::Unavailable | E::Unexpected(_)) => "failed",
        Err(_) => "refused",
    };
    counter!(SETTLEMENTS, "outcome" => outcome).increment(1);
}

/// How long one settlement transaction ran.
pub fn settlement_transaction(took: Duration) {
    histogram!(SETTLEMENT_TRANSACTION).record(took.as_secs_f64());
}

/// An attempt refused by the rate limit of `scope`.
pub fn throttled(scope: &'static str) {
    counter!(THROTTLED, "scope" => scope).increment(1);
}

/// A counted signal reached its limit in its window (once per window).
pub fn signal_raised(scope: &'static str) {
    counter!(SIGNALS, "scope" => scope).increment(1);
}

/// A request's handler panicked (it was answered 500).
pub fn request_panicked() {
    counter!(PANICS).increment(1);
}

/// A request outlived its deadline (`server.request_timeout_secs`).
pub fn request_timed_out() {
    counter!(TIMEOUTS).increment(1);
}

/// Another account tried a code that is already bound.
pub fn leak_signal() {
    counter!(LEAK_SIGNALS).increment(1);
}

/// One webhook delivery attempt: `delivered`, `failed` (will retry) or
/// `dead` (gave up).
pub fn webhook_delivery(outcome: &'static str) {
    counter!(WEBHOOK_DELIVERIES, "outcome" => outcome).increment(1);
}

/// One mail delivery attempt: `sent`, `failed` (will retry), `dead`, or
/// `lease_lost` (settled after its lease ran out: another relay has the
/// mail again).
pub fn mail_delivery(outcome: &'static str) {
    counter!(MAIL_DELIVERIES, "outcome" => outcome).increment(1);
}

/// The mail outbox at scrape time: queued, and dead-lettered.
pub fn mail_backlog(pending: i64, dead: i64) {
    gauge!(MAIL_BACKLOG).set(pending as f64);
    gauge!(MAIL_DEAD).set(dead as f64);
}

/// State read at scrape time.
pub fn backlog(outbox: i64, dead: i64) {
    gauge!(OUTBOX_BACKLOG).set(outbox as f64);
    gauge!(WEBHOOK_DEAD).set(dead as f64);
}

pub fn db_pool(idle: usize, in_use: usize) {
    gauge!(DB_CONNECTIONS, "state" => "idle").set(idle as f64);
    gauge!(DB_CONNECTIONS, "state" => "in_use").set(in_use as f64);
}

pub fn redis_up(up: bool) {
    gauge!(REDIS_UP).set(if up { 1.0 } else { 0.0 });
}

/// What one reconciler run found, per check.
pub fn invariant_violations(check: &'static str, count: usize) {
    gauge!(INVARIANT_VIOLATIONS, "check" => check).set(count as f64);
}

/// A stale-tolerant read ran on the standby or the primary (`db::reads`).
pub fn read_served(served_by: &'static str) {
    counter!(DB_READS, "served_by" => served_by).increment(1);
}

/// The pool moved to a new PostgreSQL primary (`db::primary`).
pub fn primary_changed() {
    counter!(DB_PRIMARY_CHANGES).increment(1);
}

pub fn counter_drift_repaired(shares: u64) {
    counter!(COUNTER_DRIFT_REPAIRED).increment(shares);
}

/// An HTTP request served.
pub fn http_request(route: String, method: String, status: u16, took: Duration) {
    counter!(
        HTTP_REQUESTS,
        "route" => route.clone(),
        "method" => method.clone(),
        "status" => status.to_string()
    )
    .increment(1);
    histogram!(HTTP_DURATION, "route" => route, "method" => method).record(took.as_secs_f64());
}
