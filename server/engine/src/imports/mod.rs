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
//! ([`HashedText`]). Only HMAC digests and hints are stored. The unique
//! digest index (`auth_codes_digest`) deduplicates, so two imports racing
//! each other cannot both bring the same code in; a code already stored
//! under an older key, or under its text's other reading, is found by a
//! look-up first.
//!
//! Lines that cannot be imported are reported (line number and reason,
//! never the code's text), and the report is kept with the batch for the
//! creator to come back to. An import of which no line could be used
//! changes nothing and is refused.

use std::collections::{BTreeMap, HashSet};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit, code_actions,
    codes::{CodeFormatError, CodeText as _, HashedText, Keyring},
    progress::Progress,
    shares::ShareId,
    tenants::TenantId,
};

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

/// Rows per INSERT statement.
const INSERT_CHUNK: usize = 5_000;

/// The letters and digits a foreign format uses: 2 to 36 of A–Z and 0–9
/// (case does not count: codes are compared upper-cased).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alphabet(String);

impl Alphabet {
    /// Upper-cases `raw`, drops repeats and separators (spaces, commas);
    /// refuses anything but letters and digits, or fewer than 2 symbols.
    pub fn parse(raw: &str) -> Result<Self, ImportError> {
        let mut symbols: Vec<u8> = Vec::new();
        for b in raw.bytes() {
            if b.is_ascii_whitespace() || b == b',' {
                continue;
            }
            if !b.is_ascii_alphanumeric() {
                return Err(ImportError::InvalidAlphabet);
            }
            let upper = b.to_ascii_uppercase();
            if !symbols.contains(&upper) {
                symbols.push(upper);
            }
        }
        if symbols.len() < 2 {
            return Err(ImportError::InvalidAlphabet);
        }
        symbols.sort_unstable();
        Ok(Self(String::from_utf8(symbols).unwrap_or_default()))
    }

    /// Letters A–Z and digits 0–9: what a shop's codes usually use.
    pub fn letters_and_digits() -> Self {
        Self("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn allows(&self, canonical: &str) -> bool {
        canonical.bytes().all(|b| self.0.as_bytes().contains(&b))
    }
}

/// What the creator says the lines are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportFormat {
    /// Our own codes (issued here, or by another AdmitOne): every line must
    /// pass the check symbol.
    Ours,
    /// Another system's codes, of this alphabet.
    Foreign(Alphabet),
}

/// Why a line was not imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// Not only letters, digits, spaces and dashes.
    BadSymbol,
    /// Fewer than 4 or more than 64 symbols (ours: not 12).
    WrongLength,
    /// Our format with a wrong check symbol.
    Typo,
    /// A letter or digit the declared alphabet does not have.
    OutsideAlphabet,
    /// The same code on an earlier line of this import.
    DuplicateInFile,
    /// Some share of the platform has this code already.
    AlreadyExists,
}

impl Rejection {
    /// Its stable name (the report's `reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadSymbol => "bad_symbol",
            Self::WrongLength => "wrong_length",
            Self::Typo => "typo",
            Self::OutsideAlphabet => "outside_alphabet",
            Self::DuplicateInFile => "duplicate_in_file",
            Self::AlreadyExists => "already_exists",
        }
    }

    /// In English (the error's `Display`; the console translates
    /// [`Self::as_str`]).
    pub fn phrase(self) -> &'static str {
        match self {
            Self::BadSymbol => "characters other than letters and digits",
            Self::WrongLength => "too short or too long (4 to 64 letters and digits; ours have 12)",
            Self::Typo => "not a valid code of ours (check symbol)",
            Self::OutsideAlphabet => "a letter or digit outside the declared alphabet",
            Self::DuplicateInFile => "the same code is on an earlier line",
            Self::AlreadyExists => "this code already exists",
        }
    }

    fn of_format(error: CodeFormatError) -> Self {
        match error {
            CodeFormatError::WrongLength | CodeFormatError::ForeignWrongLength => Self::WrongLength,
            CodeFormatError::BadSymbol => Self::BadSymbol,
            CodeFormatError::BadCheckSymbol => Self::Typo,
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.phrase())
    }
}

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

/// The codes of an uploaded file: its first column (`,`, `;` or tab
/// separated, quotes stripped), one per line; blank lines are skipped. The
/// first non-blank line is a header, and skipped, when `header` says so or
/// its first column is `code`, `codes` or `access code`. Stops after
/// [`MAX_LINES`]` + 1` codes (the import then refuses the file) so a huge
/// file is never held line by line. Text that is not UTF-8 is read with
/// replacement characters, which its lines then report as `bad_symbol`.
pub fn lines_of_file(bytes: &[u8], header: bool) -> Vec<(u32, String)> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = Vec::new();
    let mut header_seen = false;
    for (index, line) in text.lines().enumerate() {
        let first = line
            .split([',', ';', '\t'])
            .next()
            .unwrap_or_default()
            .trim()
            .trim_matches('"')
            .trim();
        if first.is_empty() {
            continue;
        }
        if !header_seen {
            header_seen = true;
            if header
                || ["code", "codes", "access code"].contains(&first.to_ascii_lowercase().as_str())
            {
                continue;
            }
        }
        lines.push((
            u32::try_from(index + 1).unwrap_or(u32::MAX),
            first.to_owned(),
        ));
        if lines.len() > MAX_LINES {
            break;
        }
    }
    lines
}

/// One line as it will be stored: the text hashed, its hint, whether it
/// is a foreign code, and the line's other reading, if it has one (a
/// learner's look-up tries both, so a code stored under it already is the
/// same code).
struct Read {
    hashed: HashedText,
    hint: String,
    foreign: bool,
    twin: Option<HashedText>,
}

impl Read {
    /// Every digest this code may already be stored under: its own and its
    /// twin's, under every key version.
    fn known_as(&self, keyring: &Keyring) -> Vec<Vec<u8>> {
        let mut digests = keyring.candidates(&self.hashed);
        if let Some(twin) = &self.twin {
            digests.extend(keyring.candidates(twin));
        }
        digests
    }
}

/// Reads one line in `format`, for `tenant`: what to store, or why not.
/// Ours are stored as ours; a foreign format's line as its foreign reading
/// (nothing folded, so `ABCO` and `ABC0` stay two codes), in the tenant's
/// own namespace ([`HashedText`]). A learner's look-up tries both readings.
fn read_line(format: &ImportFormat, tenant: TenantId, text: &str) -> Result<Read, Rejection> {
    match format {
        ImportFormat::Ours => {
            let code = codeformat::canonicalise(text).map_err(Rejection::of_format)?;
            Ok(Read {
                hint: codeformat::hint(&code),
                hashed: HashedText::ours(&code),
                foreign: false,
                twin: codeformat::read_foreign(text)
                    .ok()
                    .map(|foreign| HashedText::foreign(tenant, &foreign)),
            })
        }
        ImportFormat::Foreign(alphabet) => {
            let code = codeformat::read_foreign(text).map_err(Rejection::of_format)?;
            if !alphabet.allows(&code) {
                return Err(Rejection::OutsideAlphabet);
            }
            Ok(Read {
                hint: codeformat::hint(&code),
                hashed: HashedText::foreign(tenant, &code),
                foreign: true,
                twin: codeformat::canonicalise(text)
                    .ok()
                    .map(|ours| HashedText::ours(&ours)),
            })
        }
    }
}

/// Imports the usable lines of `request` into a new batch of `share`, in
/// one transaction (audited `batch.imported`; webhook `batch.issued` with
/// `"source": "imported"`), and reports the others. Marks the share as
/// taking foreign codes when any was imported.
pub async fn import_codes(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    request: ImportRequest<'_>,
) -> Result<Imported, ImportError> {
    let label = request.label.trim();
    if label.chars().count() > 120 || label.chars().any(char::is_control) {
        return Err(ImportError::InvalidLabel);
    }
    if request.lines.is_empty() {
        return Err(ImportError::NoCodesToImport);
    }
    if request.lines.len() > MAX_LINES {
        return Err(ImportError::TooManyLines { max: MAX_LINES });
    }
    let expires_at = code_actions::check_expiry(request.expires_at, OffsetDateTime::now_utc())?;

    // Read every line; keep the first of each code.
    let mut rejected: Vec<RejectedLine> = Vec::new();
    let mut accepted: Vec<(u32, Read)> = Vec::with_capacity(request.lines.len());
    let mut seen: HashSet<String> = HashSet::with_capacity(request.lines.len());
    for (line, text) in &request.lines {
        match read_line(&request.format, tenant, text) {
            Err(reason) => rejected.push(RejectedLine {
                line: *line,
                reason,
            }),
            Ok(code) => {
                if !seen.insert(code.hashed.canonical().to_owned()) {
                    rejected.push(RejectedLine {
                        line: *line,
                        reason: Rejection::DuplicateInFile,
                    });
                } else {
                    accepted.push((*line, code));
                }
            }
        }
    }

    // Digests under the current key (stored), and the others the code may
    // already be stored under: older keys (a code stored before a rotation
    // is the same code), and its other reading (text that is one of ours
    // and also a foreign code is one code: the look-up finds either).
    let mut rows = Vec::with_capacity(accepted.len());
    let mut older: Vec<Vec<u8>> = Vec::new();
    for (line, code) in &accepted {
        let (version, digest) = keyring.digest(&code.hashed);
        older.extend(code.known_as(keyring).into_iter().filter(|d| *d != digest));
        rows.push((
            *line,
            Uuid::now_v7(),
            digest,
            i16::try_from(version).context("key version above 32767")?,
            code.hint.clone(),
            code.foreign,
        ));
    }

    let batch_id = Uuid::now_v7();
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let share_exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $2) AS "exists!""#,
        tenant.0,
        request.share.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("finding the share")?;
    if !share_exists {
        return Err(ImportError::ShareNotFound);
    }
    let known_older: std::collections::HashSet<Vec<u8>> = if older.is_empty() {
        Default::default()
    } else {
        sqlx::query_scalar!(
            "SELECT digest FROM auth_codes WHERE digest = ANY($1)",
            &older
        )
        .fetch_all(&mut *tx)
        .await
        .context("looking for codes stored under older keys or readings")?
        .into_iter()
        .collect()
    };
    if !known_older.is_empty() {
        let keep: Vec<bool> = accepted
            .iter()
            .map(|(_, code)| {
                !code
                    .known_as(keyring)
                    .iter()
                    .any(|d| known_older.contains(d))
            })
            .collect();
        let mut keep = keep.into_iter();
        rows.retain(|(line, ..)| {
            let kept = keep.next().unwrap_or(true);
            if !kept {
                rejected.push(RejectedLine {
                    line: *line,
                    reason: Rejection::AlreadyExists,
                });
            }
            kept
        });
    }

    // In digest order: two imports racing over the same codes take their
    // index entries in one order, so they queue instead of deadlocking.
    rows.sort_unstable_by(|a, b| a.2.cmp(&b.2));

    // The batch first (its count is set once the codes are in).
    let alphabet = match &request.format {
        ImportFormat::Ours => None,
        ImportFormat::Foreign(alphabet) => Some(alphabet.as_str().to_owned()),
    };
    sqlx::query!(
        "INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by, expires_at,
                                   source, alphabet, import_report)
         VALUES ($1, $2, $3, $4, 1, $5, $6, 'imported', $7, '{}'::jsonb)",
        tenant.0,
        batch_id,
        request.share.0,
        label,
        actor.0,
        expires_at,
        alphabet,
    )
    .execute(&mut *tx)
    .await
    .context("inserting an import's batch")?;

    let total = rows.len() as u64;
    let mut imported: u64 = 0;
    let mut any_foreign = false;
    for chunk in rows.chunks(INSERT_CHUNK) {
        let ids: Vec<Uuid> = chunk.iter().map(|r| r.1).collect();
        let digests: Vec<Vec<u8>> = chunk.iter().map(|r| r.2.clone()).collect();
        let versions: Vec<i16> = chunk.iter().map(|r| r.3).collect();
        let hints: Vec<String> = chunk.iter().map(|r| r.4.clone()).collect();
        // A code some share already has (or an import racing this one
        // just took) is skipped here and reported below.
        let inserted: std::collections::HashSet<Uuid> = sqlx::query_scalar!(
            "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint)
             SELECT $1, id, $2, $3, digest, version, hint
             FROM UNNEST($4::uuid[], $5::bytea[], $6::smallint[], $7::text[]) AS c(id, digest, version, hint)
             ON CONFLICT (digest) DO NOTHING
             RETURNING id",
            tenant.0,
            request.share.0,
            batch_id,
            &ids,
            &digests,
            &versions,
            &hints,
        )
        .fetch_all(&mut *tx)
        .await
        .context("inserting imported codes")?
        .into_iter()
        .collect();
        for (line, id, _, _, _, foreign) in chunk {
            if inserted.contains(id) {
                imported += 1;
                any_foreign |= *foreign;
            } else {
                rejected.push(RejectedLine {
                    line: *line,
                    reason: Rejection::AlreadyExists,
                });
            }
        }
        // Codes written so far (of those not refused before), as issuing
        // reports them; the last report comes after the commit.
        if let Some(progress) = request.progress {
            progress.report(imported, total).await;
        }
    }

    rejected.sort_unstable_by_key(|r| r.line);
    let mut reasons = BTreeMap::new();
    for r in &rejected {
        *reasons.entry(r.reason).or_insert(0u64) += 1;
    }
    let report = ImportReport {
        lines: request.lines.len() as u64,
        imported,
        rejected: rejected.len() as u64,
        reasons,
        first_rejected: rejected.iter().take(LISTED_REJECTIONS).copied().collect(),
    };
    if imported == 0 {
        // Nothing to keep: the transaction rolls back (the batch too).
        let first = rejected.first().copied().unwrap_or(RejectedLine {
            line: 1,
            reason: Rejection::WrongLength,
        });
        return Err(ImportError::NothingImported {
            lines: report.lines,
            line: first.line,
            reason: first.reason,
        });
    }
    sqlx::query!(
        "UPDATE code_batches SET count = $3, import_report = $4 WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        batch_id,
        i32::try_from(imported).context("more than 2^31 codes")?,
        serde_json::to_value(&report).context("encoding the import report")?,
    )
    .execute(&mut *tx)
    .await
    .context("recording the import's report")?;
    if any_foreign {
        sqlx::query!(
            "UPDATE shares SET foreign_codes = true WHERE tenant_id = $1 AND id = $2 AND NOT foreign_codes",
            tenant.0,
            request.share.0,
        )
        .execute(&mut *tx)
        .await
        .context("letting the share take foreign codes")?;
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.imported",
        ("code_batch", batch_id),
        json!({ "share_id": request.share.0, "label": label, "lines": report.lines,
                "imported": imported, "rejected": report.rejected,
                "alphabet": alphabet, "expires_at": code_actions::rfc3339(expires_at) }),
    )
    .await?;
    audit::emit(
        &mut tx,
        tenant,
        "batch.issued",
        json!({ "share_id": request.share.0, "batch_id": batch_id, "count": imported,
                "source": "imported" }),
    )
    .await?;
    tx.commit().await.context("committing the import")?;
    if let Some(progress) = request.progress {
        progress.report(total, total).await;
    }
    Ok(Imported { batch_id, report })
}

/// The report of an imported batch of `tenant`, if it is one.
pub async fn report_of(
    pool: &PgPool,
    tenant: TenantId,
    batch: Uuid,
) -> anyhow::Result<Option<(ShareId, String, ImportReport)>> {
    let row = sqlx::query!(
        "SELECT share_id, label, import_report FROM code_batches
         WHERE tenant_id = $1 AND id = $2 AND source = 'imported'",
        tenant.0,
        batch,
    )
    .fetch_optional(pool)
    .await
    .context("reading an import's report")?;
    row.map(|r| {
        let report = serde_json::from_value(r.import_report.unwrap_or_default())
            .context("decoding an import's report")?;
        Ok((ShareId(r.share_id), r.label, report))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alphabet_is_letters_and_digits_upper_cased() {
        assert_eq!(Alphabet::parse("abc 123").expect("ok").as_str(), "123ABC");
        assert_eq!(Alphabet::parse("A,B,A").expect("ok").as_str(), "AB");
        for bad in ["A", "AB-", "", "ÄB"] {
            assert!(
                matches!(Alphabet::parse(bad), Err(ImportError::InvalidAlphabet)),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_file_gives_its_first_column_with_line_numbers() {
        let file = "\u{feff}Code,Email\n\"AB12-CD34\",x@y\n\n  wxyz9876 ;note\n";
        assert_eq!(
            lines_of_file(file.as_bytes(), false),
            vec![(2, "AB12-CD34".to_owned()), (4, "wxyz9876".to_owned())]
        );
        // A header is only the first non-blank line, named or declared.
        assert_eq!(
            lines_of_file(b"ABCD1234\ncode\n", false),
            vec![(1, "ABCD1234".to_owned()), (2, "code".to_owned())]
        );
        assert_eq!(
            lines_of_file(b"\nVoucher code\nABCD1234\n", true),
            vec![(3, "ABCD1234".to_owned())]
        );
        // Not UTF-8: the line is kept, and will be refused as a bad symbol.
        assert_eq!(lines_of_file(b"AB\xff1234\n", false).len(), 1);
    }

    #[test]
    fn a_huge_file_is_cut_after_one_line_too_many() {
        let file = "ABCD1234\n".repeat(MAX_LINES + 50);
        assert_eq!(lines_of_file(file.as_bytes(), false).len(), MAX_LINES + 1);
    }

    fn reason(format: &ImportFormat, text: &str) -> Result<bool, Rejection> {
        read_line(format, TenantId(Uuid::nil()), text).map(|r| r.foreign)
    }

    #[test]
    fn lines_are_read_by_the_declared_format() {
        let hex = ImportFormat::Foreign(Alphabet::parse("0123456789ABCDEF").expect("ok"));
        assert_eq!(reason(&hex, "dead-beef"), Ok(true));
        assert_eq!(reason(&hex, "DEADBEEG"), Err(Rejection::OutsideAlphabet));
        assert_eq!(reason(&hex, "DEAD_BEEF"), Err(Rejection::BadSymbol));
        assert_eq!(reason(&hex, "ABC"), Err(Rejection::WrongLength));
        assert_eq!(
            reason(&ImportFormat::Ours, "DEADBEEF"),
            Err(Rejection::WrongLength)
        );
        let ours = crate::codes::PlainCode::generate();
        let mut typo = ours.canonical().to_owned().into_bytes();
        typo[0] = if typo[0] == b'2' { b'3' } else { b'2' };
        let typo = String::from_utf8(typo).expect("ascii");
        assert_eq!(reason(&ImportFormat::Ours, &typo), Err(Rejection::Typo));
        assert_eq!(reason(&ImportFormat::Ours, &ours.display()), Ok(false));
        // A foreign line is hashed in its tenant, ours platform-wide.
        let (a, b) = (TenantId(Uuid::now_v7()), TenantId(Uuid::now_v7()));
        let hashed = |format: &ImportFormat, tenant, text: &str| {
            read_line(format, tenant, text)
                .map(|r| r.hashed)
                .expect("read")
        };
        assert_ne!(hashed(&hex, a, "DEADBEEF"), hashed(&hex, b, "DEADBEEF"));
        let display = ours.display();
        assert_eq!(
            hashed(&ImportFormat::Ours, a, &display),
            hashed(&ImportFormat::Ours, b, &display)
        );
    }
}
