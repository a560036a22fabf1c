//! Handing a batch's plain codes to the admin who issued it, once.
//!
//! The database never holds a plain code, so the only moment codes exist in
//! full is right after issuing. They are parked in Redis under two keys
//! (one for the result page, one for the CSV download), readable by the
//! issuing admin only and gone after [`HANDOVER_TTL`] anyway. A batch
//! issued through the API with an `Idempotency-Key` has a third copy
//! instead, its whole answer ([`hold_answer`]), read by each retry of that
//! request until the TTL (or until the batch's unused codes are revoked). If parking
//! fails, the caller revokes the batch: codes nobody ever saw must not stay
//! usable.
//!
//! The page copy is taken in one step (`GETDEL`): a page is small and
//! rendered whole. The CSV copy can be megabytes streamed over a slow
//! link, so it is deleted only once the server has handed the whole body
//! to the connection ([`DownloadLease::finish`]). A download that breaks
//! before that (client gone, network cut) leaves the codes parked and can
//! be retried, in full, until [`HANDOVER_TTL`] runs out; after a completed
//! one every request gets nothing. HTTP cannot tell whether the client
//! stored the file: "completed" means the server sent it all, no more.
//!
//! Only one download of a batch runs at a time, under a lease in Redis,
//! and every download, completed or broken off, is in the tenant's audit
//! log: see [`start_download`] and [`DownloadLease`].

use std::time::Duration;

mod answer;
mod download;
mod parked;

pub use answer::{held_answer, hold_answer};
pub use download::{DOWNLOAD_LEASE, Download, DownloadLease, start_download};
pub use parked::{park, take};

/// How long plain codes wait for their one viewing.
pub const HANDOVER_TTL: Duration = Duration::from_secs(15 * 60);

/// Which one-time copy to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// The result page right after issuing.
    Page,
    /// The CSV download.
    Csv,
    /// An API client's whole answer (JSON), read again by every retry with
    /// the same `Idempotency-Key` until [`HANDOVER_TTL`]: see
    /// [`hold_answer`].
    ApiAnswer,
}

impl Copy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Csv => "csv",
            Self::ApiAnswer => "api-answer",
        }
    }
}
