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
/// another attempt. Attempts take milliseconds, so the waits usually end
/// in a definite answer; how many of them a request sits through is
/// [`Patience::waits`]'s.
pub(super) const BUSY_WAITS_MS: [u64; 8] = [25, 50, 100, 200, 375, 500, 750, 1000];

/// The first five waits (0.75 s): what the learner's own other request is
/// worth (it takes milliseconds, then this one takes the returning-learner
/// path), whoever asks.
const OWN_REQUEST_WAITS: usize = 5;

/// What a request waits for, and so how many of [`BUSY_WAITS_MS`] it sits
/// through before it answers `Busy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holder {
    /// The learner's own other request.
    OwnRequest,
    /// Someone else's attempt at the code.
    SomeoneElse,
}

impl Patience {
    /// How many waits of [`BUSY_WAITS_MS`] a request waiting on `holder`
    /// sits through: the learner's own request, 0.75 s; someone else's
    /// attempt, none for an API client and all of them (about 3 s) for a
    /// person, who came for a definite answer. A loaded server can take
    /// longer than 0.75 s over a first access (CI once did), and "busy,
    /// try again" after a lost race is a worse answer than "already used".
    /// Still below the reservation's lifetime (4 s by default), so a
    /// crashed holder's key is not waited on for nothing much longer.
    pub(super) fn waits(self, holder: Holder) -> usize {
        match (holder, self) {
            (Holder::OwnRequest, _) => OWN_REQUEST_WAITS,
            (Holder::SomeoneElse, Self::AnswerAtOnce) => 0,
            (Holder::SomeoneElse, Self::WaitBriefly) => BUSY_WAITS_MS.len(),
        }
    }
}
