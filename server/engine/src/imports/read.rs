//! Reading an import's lines into codes: the file's first column
//! ([`lines_of_file`]), then each line in the declared [`ImportFormat`]
//! (our check symbol, or a foreign [`Alphabet`]) into what will be
//! stored, or the [`Rejection`] that keeps it out. No I/O: what reaches
//! the database is decided here, and a line's text never leaves it except
//! hashed.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{ImportError, MAX_LINES, RejectedLine};
use crate::{
    codes::{CodeFormatError, CodeText as _, HashedText, Keyring},
    tenants::TenantId,
};

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
pub(super) struct Read {
    pub(super) hashed: HashedText,
    pub(super) hint: String,
    pub(super) foreign: bool,
    twin: Option<HashedText>,
}

impl Read {
    /// Every digest this code may already be stored under: its own and its
    /// twin's, under every key version.
    pub(super) fn known_as(&self, keyring: &Keyring) -> Vec<Vec<u8>> {
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

/// Reads every line of `lines` in `format`: the codes to store, with their
/// line, keeping the first of each code; and the lines rejected.
pub(super) fn read_lines(
    format: &ImportFormat,
    tenant: TenantId,
    lines: &[(u32, String)],
) -> (Vec<(u32, Read)>, Vec<RejectedLine>) {
    let mut rejected: Vec<RejectedLine> = Vec::new();
    let mut accepted: Vec<(u32, Read)> = Vec::with_capacity(lines.len());
    let mut seen: HashSet<String> = HashSet::with_capacity(lines.len());
    for (line, text) in lines {
        match read_line(format, tenant, text) {
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
    (accepted, rejected)
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

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
