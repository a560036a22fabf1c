//! The shape of an access code, and nothing else: no randomness, no keys,
//! no I/O, so the same check runs natively in `engine` and as wasm in the
//! learner's browser, and a typo is caught before a request is sent.
//!
//! A code is 11 payload symbols and one check symbol in Crockford's base32
//! alphabet (no I, L, O, U), shown as `XXXX-XXXX-XXXX`. [`canonicalise`]
//! forgives case, spaces, dashes and the look-alikes O→0 and I/L→1; the
//! check symbol (Luhn mod 32) catches every single wrong symbol and almost
//! every swap of two neighbours.

/// Crockford's base32 alphabet: digits, then letters without I, L, O, U.
pub const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Random symbols per code.
pub const PAYLOAD_SYMBOLS: usize = 11;
/// Symbols per code including the check symbol.
pub const SYMBOLS: usize = PAYLOAD_SYMBOLS + 1;

/// Why typed text is not a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeFormatError {
    #[error("a code has 12 letters and digits, like ABCD-2345-WXYZ")]
    WrongLength,
    #[error("a code uses only letters and digits")]
    BadSymbol,
    #[error("this code has a typo: check it and try again")]
    BadCheckSymbol,
    /// Where codes another system sold are taken too, no reading fits:
    /// said in those terms, not ours.
    #[error("a code has 4 to 64 letters and digits")]
    ForeignWrongLength,
}

/// The value (0..32) of a typed symbol, forgiving case and look-alikes.
fn value_of(symbol: u8) -> Option<u8> {
    let upper = match symbol.to_ascii_uppercase() {
        b'O' => b'0',
        b'I' | b'L' => b'1',
        other => other,
    };
    ALPHABET
        .iter()
        .position(|&c| c == upper)
        .and_then(|p| u8::try_from(p).ok())
}

/// Luhn mod 32 over symbol values: the check value that makes the whole
/// sum valid.
pub fn check_value(payload: &[u8]) -> u8 {
    let mut sum = 0u32;
    // Double every second value counting from the right of the payload.
    for (i, &v) in payload.iter().rev().enumerate() {
        let mut addend = u32::from(v);
        if i % 2 == 0 {
            addend *= 2;
            addend = addend / 32 + addend % 32;
        }
        sum += addend;
    }
    u8::try_from((32 - sum % 32) % 32).unwrap_or(0)
}

/// The canonical text (12 symbols, no separators) of a payload of symbol
/// values (each below 32), with its check symbol appended.
pub fn from_payload(payload: &[u8; PAYLOAD_SYMBOLS]) -> String {
    let check = check_value(payload);
    payload
        .iter()
        .chain(std::iter::once(&check))
        .map(|&v| char::from(ALPHABET[usize::from(v & 31)]))
        .collect()
}

/// Parses what a person typed into the canonical 12 symbols.
pub fn canonicalise(raw: &str) -> Result<String, CodeFormatError> {
    if !raw.is_ascii() {
        return Err(CodeFormatError::BadSymbol);
    }
    let mut values = Vec::with_capacity(SYMBOLS);
    for b in raw.bytes() {
        if b == b'-' || b.is_ascii_whitespace() {
            continue;
        }
        if values.len() == SYMBOLS {
            return Err(CodeFormatError::WrongLength);
        }
        values.push(value_of(b).ok_or(CodeFormatError::BadSymbol)?);
    }
    if values.len() != SYMBOLS {
        return Err(CodeFormatError::WrongLength);
    }
    let (payload, check) = values.split_at(PAYLOAD_SYMBOLS);
    if check_value(payload) != check[0] {
        return Err(CodeFormatError::BadCheckSymbol);
    }
    Ok(values
        .iter()
        .map(|&v| char::from(ALPHABET[usize::from(v)]))
        .collect())
}

/// Grouped for people: `ABCD-2345-WXYZ` (from canonical text).
pub fn display(canonical: &str) -> String {
    match (canonical.get(..4), canonical.get(4..8), canonical.get(8..)) {
        (Some(a), Some(b), Some(c)) => format!("{a}-{b}-{c}"),
        _ => canonical.to_owned(),
    }
}

/// What stays visible after a code was shown once: its first two and last
/// two symbols (from canonical text). An imported code shorter than 10
/// shows one and one, and one shorter than 6 nothing: a hint must leave
/// most of a short code unknown.
pub fn hint(canonical: &str) -> String {
    let n = canonical.len();
    let shown = if n >= 10 { 2 } else { 1 };
    match (
        canonical.get(..shown),
        canonical.get(n.saturating_sub(shown)..),
    ) {
        (Some(head), Some(tail)) if n >= 6 => format!("{head}…{tail}"),
        _ => "…".to_owned(),
    }
}

/// The shortest and longest imported (foreign) code, in symbols.
pub const FOREIGN_LENGTH: std::ops::RangeInclusive<usize> = 4..=64;

/// What typed (or imported) text can be, once read: one of ours (the
/// canonical 12 symbols, look-alikes folded, check symbol verified), a
/// foreign code (4 to 64 letters and digits, upper-cased, separators
/// dropped, nothing folded), or both: a foreign `HELLOWORLD12` may pass our
/// check symbol once `O` and `L` are folded, and is then looked up both
/// ways. At least one reading is present. `Debug` shows hints only.
#[derive(Clone, PartialEq, Eq)]
pub struct Readings {
    pub ours: Option<String>,
    pub foreign: Option<String>,
}

impl std::fmt::Debug for Readings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readings")
            .field("ours", &self.ours.as_deref().map(hint))
            .field("foreign", &self.foreign.as_deref().map(hint))
            .finish()
    }
}

/// Reads what a person typed, or a line of an import. Without `foreign`
/// (a share that never received imported codes) only our format is
/// accepted, so a typo in one of our codes is named before any attempt
/// counts. With it, any 4 to 64 ASCII letters and digits are also a
/// foreign code: case, spaces and dashes do not count, so `ab12-cd34` and
/// `AB12CD34` are one code, while `O` and `0` stay different symbols.
///
/// The import stores one reading (the one its declared format names) and
/// the look-up tries every reading, so storing and looking up agree.
pub fn read(raw: &str, foreign: bool) -> Result<Readings, CodeFormatError> {
    let ours = canonicalise(raw);
    if !foreign {
        return ours.map(|code| Readings {
            ours: Some(code),
            foreign: None,
        });
    }
    match (ours, read_foreign(raw)) {
        (Err(_), Err(error)) => Err(error),
        (ours, foreign) => Ok(Readings {
            ours: ours.ok(),
            foreign: foreign.ok(),
        }),
    }
}

/// The foreign reading alone: 4 to 64 ASCII letters and digits,
/// upper-cased, spaces and dashes dropped.
pub fn read_foreign(raw: &str) -> Result<String, CodeFormatError> {
    if !raw.is_ascii() {
        return Err(CodeFormatError::BadSymbol);
    }
    let mut text = String::with_capacity(raw.len().min(*FOREIGN_LENGTH.end() + 1));
    for b in raw.bytes() {
        if b == b'-' || b.is_ascii_whitespace() {
            continue;
        }
        if !b.is_ascii_alphanumeric() {
            return Err(CodeFormatError::BadSymbol);
        }
        if text.len() == *FOREIGN_LENGTH.end() {
            return Err(CodeFormatError::ForeignWrongLength);
        }
        text.push(char::from(b.to_ascii_uppercase()));
    }
    if !FOREIGN_LENGTH.contains(&text.len()) {
        return Err(CodeFormatError::ForeignWrongLength);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: [u8; PAYLOAD_SYMBOLS] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 31];

    #[test]
    fn a_payload_round_trips_through_typing_habits() {
        let code = from_payload(&SAMPLE);
        assert_eq!(code.len(), SYMBOLS);
        let typed = display(&code).to_lowercase().replace('-', " ");
        assert_eq!(canonicalise(&typed), Ok(code.clone()));
        assert_eq!(canonicalise(&format!("  {code}\n")), Ok(code));
    }

    #[test]
    fn look_alikes_are_read_as_digits() {
        let code = from_payload(&[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
        let typed: String = code
            .chars()
            .enumerate()
            .map(|(i, c)| match (c, i % 3) {
                ('0', 0) => 'O',
                ('0', _) => 'o',
                ('1', 0) => 'I',
                ('1', 1) => 'l',
                (other, _) => other,
            })
            .collect();
        assert_ne!(typed, code);
        assert_eq!(canonicalise(&typed), Ok(code));
    }

    #[test]
    fn every_single_wrong_symbol_is_caught() {
        let code = from_payload(&SAMPLE);
        for position in 0..SYMBOLS {
            for &replacement in ALPHABET {
                let mut bytes = code.clone().into_bytes();
                if bytes[position] == replacement {
                    continue;
                }
                bytes[position] = replacement;
                let typo = String::from_utf8(bytes).expect("ascii");
                assert_eq!(
                    canonicalise(&typo),
                    Err(CodeFormatError::BadCheckSymbol),
                    "{typo}"
                );
            }
        }
    }

    /// Deterministic payloads (no randomness needed to check a format).
    fn payloads(n: usize) -> impl Iterator<Item = [u8; PAYLOAD_SYMBOLS]> {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        (0..n).map(move |_| {
            let mut payload = [0u8; PAYLOAD_SYMBOLS];
            for value in &mut payload {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                *value = u8::try_from(state >> 59).expect("5 bits");
            }
            payload
        })
    }

    #[test]
    fn neighbour_swaps_are_mostly_caught() {
        let (mut caught, mut swaps) = (0, 0);
        for payload in payloads(500) {
            let code = from_payload(&payload).into_bytes();
            for i in 0..SYMBOLS - 1 {
                if code[i] == code[i + 1] {
                    continue;
                }
                let mut swapped = code.clone();
                swapped.swap(i, i + 1);
                swaps += 1;
                if canonicalise(std::str::from_utf8(&swapped).expect("ascii")).is_err() {
                    caught += 1;
                }
            }
        }
        assert!(caught * 100 >= swaps * 95, "caught {caught} of {swaps}");
    }

    #[test]
    fn malformed_input_is_named() {
        assert_eq!(canonicalise(""), Err(CodeFormatError::WrongLength));
        assert_eq!(canonicalise("ABCD"), Err(CodeFormatError::WrongLength));
        assert_eq!(
            canonicalise("ABCD-2345-WXYU"),
            Err(CodeFormatError::BadSymbol)
        );
        assert_eq!(
            canonicalise("ÄBCD-2345-WXYZ"),
            Err(CodeFormatError::BadSymbol)
        );
        assert_eq!(
            canonicalise(&"A".repeat(10_000)),
            Err(CodeFormatError::WrongLength)
        );
    }

    fn ours(code: &str) -> Readings {
        Readings {
            ours: Some(code.to_owned()),
            foreign: None,
        }
    }

    fn foreign(code: &str) -> Readings {
        Readings {
            ours: None,
            foreign: Some(code.to_owned()),
        }
    }

    #[test]
    fn our_codes_read_as_ours_and_where_foreign_codes_exist_also_as_text() {
        let code = from_payload(&SAMPLE);
        let typed = display(&code).to_lowercase();
        assert_eq!(read(&typed, false), Ok(ours(&code)));
        assert_eq!(
            read(&typed, true),
            Ok(Readings {
                ours: Some(code.clone()),
                foreign: Some(code),
            })
        );
    }

    #[test]
    fn foreign_codes_are_normalised_only_where_they_exist() {
        assert_eq!(read(" ab12-cd34 ", true), Ok(foreign("AB12CD34")));
        assert_eq!(read("ab12 cd34", true), read("AB12CD34", true));
        // Without imported codes, the same text is refused as ours.
        assert_eq!(read("ab12-cd34", false), Err(CodeFormatError::WrongLength));
        // A typo in one of ours is a foreign candidate only where foreign
        // codes exist.
        let code = from_payload(&SAMPLE);
        let mut typo = code.clone().into_bytes();
        typo[0] = if typo[0] == b'2' { b'3' } else { b'2' };
        let typo = String::from_utf8(typo).expect("ascii");
        assert_eq!(read(&typo, false), Err(CodeFormatError::BadCheckSymbol));
        assert_eq!(read(&typo, true), Ok(foreign(&typo)));
    }

    #[test]
    fn a_foreign_reading_never_folds_look_alikes() {
        // Our reading folds O to 0; the foreign one keeps what was typed.
        let code = from_payload(&[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
        let typed = code.replace('0', "O");
        let read = read(&typed, true).expect("read");
        assert_eq!(read.ours.as_deref(), Some(code.as_str()));
        assert_eq!(read.foreign.as_deref(), Some(typed.as_str()));
        assert_ne!(read_foreign("ABC0"), read_foreign("ABCO"));
    }

    #[test]
    fn foreign_codes_have_bounds_and_only_letters_and_digits() {
        assert_eq!(read("ABC", true), Err(CodeFormatError::ForeignWrongLength));
        assert_eq!(read("ABCD", true), Ok(foreign("ABCD")));
        let longest = "Z".repeat(64);
        assert_eq!(read(&longest, true), Ok(foreign(&longest)));
        assert_eq!(
            read(&format!("{longest}Z"), true),
            Err(CodeFormatError::ForeignWrongLength)
        );
        assert_eq!(read("AB_CD", true), Err(CodeFormatError::BadSymbol));
        assert_eq!(read("ÄBCD", true), Err(CodeFormatError::BadSymbol));
        assert_eq!(read("", true), Err(CodeFormatError::ForeignWrongLength));
        // Where only our codes are taken, our terms.
        assert_eq!(read("ABC", false), Err(CodeFormatError::WrongLength));
    }

    #[test]
    fn a_short_codes_hint_shows_less() {
        assert_eq!(hint("ABCDEFGHIJ"), "AB…IJ");
        assert_eq!(hint("ABCDEFGHI"), "A…I");
        assert_eq!(hint("ABCDEF"), "A…F");
        assert_eq!(hint("ABCDE"), "…");
        assert_eq!(hint("ABCD"), "…");
    }

    #[test]
    fn readings_debug_shows_hints_only() {
        let debug = format!("{:?}", read("shop-secret-0001", true).expect("read"));
        assert!(!debug.contains("SECRET"), "{debug}");
    }

    #[test]
    fn hint_and_display_show_only_their_part() {
        let code = from_payload(&SAMPLE);
        assert_eq!(display(&code).len(), SYMBOLS + 2);
        let hint = hint(&code);
        assert!(hint.starts_with(&code[..2]) && hint.ends_with(&code[10..]));
        assert_eq!(hint.chars().count(), 5);
    }
}
