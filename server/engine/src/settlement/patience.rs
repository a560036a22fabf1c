//! How long a settlement waits when what it needs is held by another
//! attempt: one schedule ([`BUSY_WAITS_MS`]), owned here, so a request never
//! waits inside another wait. Whether a held code is worth waiting for is
//! the caller's [`Patience`]: a person who clicked waits a moment for the
//! definite answer, an API client hears `Busy` at once.

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
pub(super) const BUSY_WAITS_MS: [u64; 5] = [25, 50, 100, 200, 375];
