//! Imported codes: codes a shop or an LMS already sold, brought into a
//! share as a batch of their own, so the people holding them can redeem
//! them here like ours.
//!
//! Every line is read as the declared format says, with the functions
//! `codeformat::read` (a learner's typing) is made of, so a code is stored
//! under one of the readings its text is later looked up by. Codes in our
//! format are checked (check symbol) and stored like issued ones; foreign
//! ones are 4 to 64 letters and digits of the alphabet the creator
//! declared, upper-cased, separators dropped, hashed within their tenant
//! ([`HashedText`](crate::codes::HashedText)). Only HMAC digests and hints
//! are stored. The tenant's unique digest index (`auth_codes_tenant_digest`) deduplicates,
//! so two imports racing each other cannot both bring the same code in; a
//! code already stored under an older key, or under its text's other
//! reading, is found by a look-up first.
//!
//! Lines that cannot be imported are reported (line number and reason,
//! never the code's text), and the report is kept with the batch for the
//! creator to come back to. An import of which no line could be used
//! changes nothing and is refused.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{code_actions, progress::Progress, shares::ShareId};

mod read;
mod store;

pub use read::{Alphabet, ImportFormat, Rejection, lines_of_file};
pub use store::{import_codes, report_of};

/// What refuses an import of codes.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("an import's format is ours or foreign")]
    InvalidImportFormat,
    /// A foreign format's alphabet: letters and digits.
    #[error("an alphabet is 2 to 36 letters A–Z and digits 0–9")]
    InvalidAlphabet,
    #[error("a batch label has at most 120 characters")]
    InvalidLabel,
    #[error("there are no codes to import: one code per line")]
    NoCodesToImport,
    #[error("one import takes at most {max} codes: split the file")]
    TooManyLines { max: usize },
    /// Every line was rejected: nothing was imported (the first rejection
    /// names the line and its reason, one of `imports::Rejection`).
    #[error("none of the {lines} codes could be imported (line {line}: {reason})")]
    NothingImported {
        lines: u64,
        line: u32,
        reason: crate::imports::Rejection,
    },
    /// An expiry date is a moment still to come (none: never expires).
    #[error("an expiry date must be in the future")]
    InvalidExpiry,
    #[error("no such share")]
    ShareNotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<code_actions::PastExpiry> for ImportError {
    fn from(_: code_actions::PastExpiry) -> Self {
        Self::InvalidExpiry
    }
}

/// The most lines one import takes (as many as one issued batch).
pub const MAX_LINES: usize = 100_000;

/// The largest import request (a file, or the API's JSON): 100,000 codes
/// of up to 64 symbols, with room for separators, other columns and JSON.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Rejected lines the report lists one by one; the rest are counted.
pub const LISTED_REJECTIONS: usize = 1_000;

/// One line that was not imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedLine {
    /// 1-based: the file's line, or the position in the API's list.
    pub line: u32,
    pub reason: Rejection,
}

/// What an import did; kept with its batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Lines read (blank lines and a header not counted).
    pub lines: u64,
    pub imported: u64,
    pub rejected: u64,
    /// Rejected lines by reason.
    pub reasons: BTreeMap<Rejection, u64>,
    /// The first [`LISTED_REJECTIONS`] rejected lines, in line order.
    pub first_rejected: Vec<RejectedLine>,
}

/// An import that brought codes in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub batch_id: Uuid,
    pub report: ImportReport,
}

/// What an admin asks for when importing. Its `Debug` shows how many
/// lines, never their text.
pub struct ImportRequest<'a> {
    pub share: ShareId,
    pub label: &'a str,
    pub format: ImportFormat,
    /// When the batch's unused codes stop working (`None`: never).
    pub expires_at: Option<OffsetDateTime>,
    /// `(line number, text)`, as [`lines_of_file`] reads them or an API
    /// client sent them.
    pub lines: Vec<(u32, String)>,
    pub progress: Option<&'a Progress>,
}

impl std::fmt::Debug for ImportRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportRequest")
            .field("share", &self.share)
            .field("format", &self.format)
            .field("lines", &self.lines.len())
            .finish_non_exhaustive()
    }
}
