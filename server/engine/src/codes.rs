//! Access codes: what a learner types, and what the database keeps of it.
//!
//! A code is 11 random symbols (55 bits from the OS CSPRNG) and one check
//! symbol, in Crockford's base32 alphabet (no I, L, O, U), shown as
//! `XXXX-XXXX-XXXX`. People retype codes from paper and screenshots, so
//! [`PlainCode::parse`] forgives case, spaces, dashes and the look-alikes
//! O→0 and I/L→1, and the check symbol (Luhn mod 32) catches every single
//! wrong symbol and most swaps before anything is looked up or counted.
//!
//! The database never sees a plain code: it stores the HMAC-SHA256 digest
//! under a versioned server key ([`Keyring`]). Rotation adds a new current
//! version; look-ups try every version still in the keyring.

use hmac::{Hmac, Mac as _};
use rand::Rng as _;
use secrecy::{ExposeSecret as _, SecretBox, SecretString};
use sha2::Sha256;

/// Crockford's base32 alphabet: digits, then letters without I, L, O, U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Random symbols per code.
pub const RANDOM_SYMBOLS: usize = 11;
/// Symbols per code including the check symbol.
pub const SYMBOLS: usize = RANDOM_SYMBOLS + 1;

/// Why typed text is not a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeFormatError {
    #[error("a code has 12 letters and digits, like ABCD-2345-WXYZ")]
    WrongLength,
    #[error("a code uses only letters and digits")]
    BadSymbol,
    #[error("this code has a typo: check it and try again")]
    BadCheckSymbol,
}

/// A well-formed code (normalised, check symbol verified). Its `Debug` is
/// masked: plain codes must not reach logs.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainCode(String);

impl std::fmt::Debug for PlainCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainCode({})", self.hint())
    }
}

fn value_of(symbol: u8) -> Option<u8> {
    let upper = symbol.to_ascii_uppercase();
    let upper = match upper {
        b'O' => b'0',
        b'I' | b'L' => b'1',
        other => other,
    };
    ALPHABET
        .iter()
        .position(|&c| c == upper)
        .and_then(|p| u8::try_from(p).ok())
}

/// Luhn mod 32 over symbol values: the value that makes the whole sum valid.
fn check_value(values: &[u8]) -> u8 {
    let mut sum = 0u32;
    // Double every second value counting from the right of the payload.
    for (i, &v) in values.iter().rev().enumerate() {
        let mut addend = u32::from(v);
        if i % 2 == 0 {
            addend *= 2;
            addend = addend / 32 + addend % 32;
        }
        sum += addend;
    }
    u8::try_from((32 - sum % 32) % 32).unwrap_or(0)
}

impl PlainCode {
    /// Draws a new code from the OS CSPRNG.
    pub fn generate() -> Self {
        let mut rng = rand::rngs::OsRng;
        let values: Vec<u8> = (0..RANDOM_SYMBOLS)
            .map(|_| rng.gen_range(0..32u8))
            .collect();
        Self::from_values(&values)
    }

    fn from_values(payload: &[u8]) -> Self {
        let check = check_value(payload);
        let text = payload
            .iter()
            .chain(std::iter::once(&check))
            .map(|&v| ALPHABET[usize::from(v)] as char)
            .collect();
        Self(text)
    }

    /// Parses what a person typed.
    pub fn parse(raw: &str) -> Result<Self, CodeFormatError> {
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
        if !raw.is_ascii() {
            return Err(CodeFormatError::BadSymbol);
        }
        if values.len() != SYMBOLS {
            return Err(CodeFormatError::WrongLength);
        }
        let (payload, check) = values.split_at(RANDOM_SYMBOLS);
        if check_value(payload) != check[0] {
            return Err(CodeFormatError::BadCheckSymbol);
        }
        Ok(Self::from_values(payload))
    }

    /// The canonical 12 symbols, no separators (what is hashed).
    pub fn canonical(&self) -> &str {
        &self.0
    }

    /// Grouped for people: `ABCD-2345-WXYZ`.
    pub fn display(&self) -> String {
        format!("{}-{}-{}", &self.0[..4], &self.0[4..8], &self.0[8..])
    }

    /// What stays visible after the code was shown once: first two and last
    /// two symbols.
    pub fn hint(&self) -> String {
        format!("{}…{}", &self.0[..2], &self.0[SYMBOLS - 2..])
    }
}

/// The server's code keys by version.
pub struct Keyring {
    current: u16,
    keys: Vec<(u16, SecretBox<[u8]>)>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let versions: Vec<u16> = self.keys.iter().map(|(v, _)| *v).collect();
        f.debug_struct("Keyring")
            .field("current", &self.current)
            .field("versions", &versions)
            .finish()
    }
}

impl Keyring {
    /// `keys` must contain `current` (the configuration checks this).
    pub fn new(current: u16, keys: Vec<(u16, SecretString)>) -> anyhow::Result<Self> {
        anyhow::ensure!(
            keys.iter().any(|(v, _)| *v == current),
            "the current code key version {current} is not in the keyring"
        );
        Ok(Self {
            current,
            keys: keys
                .into_iter()
                .map(|(v, s)| (v, SecretBox::new(s.expose_secret().as_bytes().into())))
                .collect(),
        })
    }

    pub fn current_version(&self) -> u16 {
        self.current
    }

    fn digest_with(key: &SecretBox<[u8]>, code: &PlainCode) -> Vec<u8> {
        let mut mac = <Hmac<Sha256>>::new_from_slice(key.expose_secret())
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(code.canonical().as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// The digest to store for a new code, with its key version.
    pub fn digest(&self, code: &PlainCode) -> (u16, Vec<u8>) {
        let key = self
            .keys
            .iter()
            .find(|(v, _)| *v == self.current)
            .map(|(_, k)| k)
            .unwrap_or_else(|| unreachable!("checked in Keyring::new"));
        (self.current, Self::digest_with(key, code))
    }

    /// The digests to look a typed code up with: one per key version.
    pub fn candidates(&self, code: &PlainCode) -> Vec<Vec<u8>> {
        self.keys
            .iter()
            .map(|(_, k)| Self::digest_with(k, code))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_codes_parse_back_and_look_right() {
        for _ in 0..1_000 {
            let code = PlainCode::generate();
            let shown = code.display();
            assert_eq!(shown.len(), 14);
            assert_eq!(PlainCode::parse(&shown).expect("valid"), code);
            assert!(!shown.contains(['I', 'L', 'O', 'U']), "{shown}");
        }
    }

    #[test]
    fn typing_is_forgiven() {
        let code = PlainCode::from_values(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let shown = code.display();
        let sloppy = format!(
            "  {} ",
            shown
                .to_lowercase()
                .replace('-', " ")
                .replace('0', "o")
                .replace('1', "l")
        );
        assert_eq!(PlainCode::parse(&sloppy).expect("forgiven"), code);
        assert_eq!(
            PlainCode::parse(&shown.replace('1', "I")).expect("forgiven"),
            code
        );
    }

    #[test]
    fn every_single_symbol_typo_is_caught() {
        let code = PlainCode::generate();
        let canonical = code.canonical().as_bytes().to_vec();
        for position in 0..SYMBOLS {
            for &replacement in ALPHABET {
                if replacement == canonical[position] {
                    continue;
                }
                let mut typo = canonical.clone();
                typo[position] = replacement;
                let typo = String::from_utf8(typo).expect("ascii");
                assert_eq!(
                    PlainCode::parse(&typo),
                    Err(CodeFormatError::BadCheckSymbol),
                    "{typo} should fail its check"
                );
            }
        }
    }

    #[test]
    fn adjacent_swaps_are_mostly_caught() {
        let mut caught = 0;
        let mut swaps = 0;
        for _ in 0..200 {
            let canonical = PlainCode::generate().canonical().as_bytes().to_vec();
            for i in 0..SYMBOLS - 1 {
                if canonical[i] == canonical[i + 1] {
                    continue;
                }
                let mut swapped = canonical.clone();
                swapped.swap(i, i + 1);
                swaps += 1;
                if PlainCode::parse(std::str::from_utf8(&swapped).expect("ascii")).is_err() {
                    caught += 1;
                }
            }
        }
        assert!(
            caught * 100 >= swaps * 95,
            "caught {caught} of {swaps} swaps"
        );
    }

    #[test]
    fn malformed_input_is_refused_with_a_reason() {
        assert_eq!(PlainCode::parse(""), Err(CodeFormatError::WrongLength));
        assert_eq!(
            PlainCode::parse("ABCD-2345"),
            Err(CodeFormatError::WrongLength)
        );
        assert_eq!(
            PlainCode::parse("ABCD-2345-WXYZ-1"),
            Err(CodeFormatError::WrongLength)
        );
        assert_eq!(
            PlainCode::parse("ABCD-2345-WXY!"),
            Err(CodeFormatError::BadSymbol)
        );
        assert_eq!(
            PlainCode::parse("ABCD-2345-WXYU"),
            Err(CodeFormatError::BadSymbol)
        );
        assert_eq!(
            PlainCode::parse("ÄBCD-2345-WXYZ"),
            Err(CodeFormatError::BadSymbol)
        );
        assert_eq!(
            PlainCode::parse(&"A".repeat(10_000)),
            Err(CodeFormatError::WrongLength)
        );
    }

    #[test]
    fn debug_and_hint_mask_the_code() {
        let code = PlainCode::generate();
        let debug = format!("{code:?}");
        assert!(!debug.contains(code.canonical()), "{debug}");
        let hint = code.hint();
        assert!(
            hint.starts_with(&code.canonical()[..2]) && hint.ends_with(&code.canonical()[10..])
        );
    }

    fn keyring(current: u16, versions: &[(u16, &str)]) -> Keyring {
        Keyring::new(
            current,
            versions
                .iter()
                .map(|(v, s)| (*v, SecretString::from((*s).to_owned())))
                .collect(),
        )
        .expect("keyring")
    }

    #[test]
    fn rotation_keeps_old_codes_findable_and_signs_new_ones_with_the_new_key() {
        let old = keyring(1, &[(1, "first-secret-of-16+")]);
        let code = PlainCode::generate();
        let (v1, stored) = old.digest(&code);
        assert_eq!(v1, 1);

        let rotated = keyring(
            2,
            &[(2, "second-secret-of-16+"), (1, "first-secret-of-16+")],
        );
        assert!(
            rotated.candidates(&code).contains(&stored),
            "old code still found"
        );
        let (v2, fresh) = rotated.digest(&code);
        assert_eq!(v2, 2);
        assert_ne!(fresh, stored, "new codes use the new key");

        let retired = keyring(2, &[(2, "second-secret-of-16+")]);
        assert!(
            !retired.candidates(&code).contains(&stored),
            "a retired key finds nothing"
        );
        assert!(Keyring::new(3, vec![(1, SecretString::from("x".repeat(16)))]).is_err());
    }
}
