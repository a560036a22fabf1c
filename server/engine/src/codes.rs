//! Access codes: what a learner types, and what the database keeps of it.
//!
//! A code is 11 random symbols (55 bits from a CSPRNG) and one check
//! symbol; its shape (alphabet, forgiving parsing, Luhn mod 32 check) lives
//! in the `codeformat` crate so the browser checks typos with the very same
//! code. This module adds what only the server may do: draw codes, and keep
//! them out of logs and the database.
//!
//! The database never sees a plain code: it stores the HMAC-SHA256 digest
//! under a versioned server key ([`Keyring`]). Rotation adds a new current
//! version; look-ups try every version still in the keyring.
//!
//! Codes imported from another system ([`crate::imports`]) are stored the
//! same way; [`TypedCode`] is a code as typed or imported, ours or foreign,
//! read by `codeformat::read` so storing and looking up agree.

pub use codeformat::{CodeFormatError, SYMBOLS};

use crate::tenants::TenantId;
use hmac::{Hmac, Mac as _};
use rand::Rng as _;
use secrecy::{ExposeSecret as _, SecretBox, SecretString};
use sha2::Sha256;

/// A well-formed code (normalised, check symbol verified). Its `Debug` is
/// masked: plain codes must not reach logs.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainCode(String);

impl std::fmt::Debug for PlainCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainCode({})", self.hint())
    }
}

impl PlainCode {
    /// Draws a new code from the thread's CSPRNG (ChaCha12, seeded and
    /// periodically reseeded from the OS): as unpredictable as the OS
    /// source, without a system call per symbol, so 100,000 codes take
    /// milliseconds and never hold up the other requests on the thread.
    pub fn generate() -> Self {
        let mut rng = rand::thread_rng();
        let mut payload = [0u8; codeformat::PAYLOAD_SYMBOLS];
        for value in &mut payload {
            *value = rng.gen_range(0..32u8);
        }
        Self(codeformat::from_payload(&payload))
    }

    /// Parses what a person typed.
    pub fn parse(raw: &str) -> Result<Self, CodeFormatError> {
        codeformat::canonicalise(raw).map(Self)
    }

    /// The canonical 12 symbols, no separators (what is hashed).
    pub fn canonical(&self) -> &str {
        &self.0
    }

    /// Grouped for people: `ABCD-2345-WXYZ`.
    pub fn display(&self) -> String {
        codeformat::display(&self.0)
    }

    /// What stays visible after the code was shown once: first two and last
    /// two symbols.
    pub fn hint(&self) -> String {
        codeformat::hint(&self.0)
    }
}

/// A code as a person typed it: one of ours, or (where imported codes
/// exist) a foreign one, or text that reads both ways
/// (`codeformat::Readings`). Its `Debug` shows hints only.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TypedCode(codeformat::Readings);

impl TypedCode {
    /// Reads typed text: our format always; with `foreign` (the share has
    /// imported codes, or an admin is searching) any 4 to 64 letters and
    /// digits too. See `codeformat::read`.
    pub fn read(raw: &str, foreign: bool) -> Result<Self, CodeFormatError> {
        codeformat::read(raw, foreign).map(Self)
    }

    /// The texts to look it up by in `tenant`: each reading, hashed where
    /// its kind is stored ([`HashedText`]).
    pub fn hashed_texts(&self, tenant: TenantId) -> Vec<HashedText> {
        let ours = self.0.ours.as_deref().map(HashedText::ours);
        let foreign = self
            .0
            .foreign
            .as_deref()
            .map(|text| HashedText::foreign(tenant, text));
        ours.into_iter().chain(foreign).collect()
    }
}

impl From<PlainCode> for TypedCode {
    fn from(code: PlainCode) -> Self {
        Self(codeformat::Readings {
            ours: Some(code.0),
            foreign: None,
        })
    }
}

/// The text a code's digest is taken of. Ours are hashed as their
/// canonical symbols, so they are unique across the platform; a foreign
/// (imported) code is hashed together with its tenant, so tenants'
/// imports never meet: nobody can learn from an import whether another
/// tenant has a code, or take a code another shop sold first. `:` never
/// occurs in a code, so the two kinds never collide either.
#[derive(Clone, PartialEq, Eq)]
pub struct HashedText(String);

impl HashedText {
    pub fn ours(canonical: &str) -> Self {
        Self(canonical.to_owned())
    }

    pub fn foreign(tenant: TenantId, text: &str) -> Self {
        Self(format!("{}:{text}", tenant.0))
    }
}

impl std::fmt::Debug for HashedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashedText(…)")
    }
}

/// The text of a code that is hashed.
pub trait CodeText {
    fn canonical(&self) -> &str;
}

impl CodeText for PlainCode {
    fn canonical(&self) -> &str {
        &self.0
    }
}

impl CodeText for HashedText {
    fn canonical(&self) -> &str {
        &self.0
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

    fn digest_with(key: &SecretBox<[u8]>, code: &(impl CodeText + ?Sized)) -> Vec<u8> {
        let mut mac = <Hmac<Sha256>>::new_from_slice(key.expose_secret())
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(code.canonical().as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// The digest to store for a new code, with its key version.
    pub fn digest(&self, code: &(impl CodeText + ?Sized)) -> (u16, Vec<u8>) {
        let key = self
            .keys
            .iter()
            .find(|(v, _)| *v == self.current)
            .map(|(_, k)| k)
            .unwrap_or_else(|| unreachable!("checked in Keyring::new"));
        (self.current, Self::digest_with(key, code))
    }

    /// The digests to look a typed code up with in `tenant`: each of its
    /// readings under each key version.
    pub fn lookup(&self, code: &TypedCode, tenant: TenantId) -> Vec<Vec<u8>> {
        code.hashed_texts(tenant)
            .iter()
            .flat_map(|text| self.candidates(text))
            .collect()
    }

    /// A keyed fingerprint of a request that carries plain codes (an
    /// import's, compared across retries of one idempotency key): stored
    /// in PostgreSQL, so it must not be reversible by guessing short codes.
    pub fn fingerprint(&self, request: &[u8]) -> Vec<u8> {
        let key = self
            .keys
            .iter()
            .find(|(v, _)| *v == self.current)
            .map(|(_, k)| k)
            .unwrap_or_else(|| unreachable!("checked in Keyring::new"));
        let mut mac = <Hmac<Sha256>>::new_from_slice(key.expose_secret())
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(b"request-fingerprint:");
        mac.update(request);
        mac.finalize().into_bytes().to_vec()
    }

    /// A code derived from its own id and a salt of its own (an order's
    /// codes, a mailable batch's, which a mail carries): the HMAC, under
    /// the current key, of a label, the tenant, the id and 16 random bytes
    /// stored with the code, read as the 11 symbols of a code (5 bits of a
    /// byte each: 256 is a multiple of 32, so each symbol is uniform). The
    /// mail row names the id only and the relay derives the text again
    /// from the code's row ([`Self::rederive`]), so no row holds a usable
    /// code; and it takes both the key and the database to compute one
    /// (ids travel in webhooks and URLs; the salt never leaves the row).
    /// Returns the key version, the code and its salt.
    pub fn derive(&self, tenant: TenantId, id: uuid::Uuid) -> (u16, PlainCode, [u8; 16]) {
        let mut salt = [0u8; 16];
        rand::thread_rng().fill(&mut salt);
        let code = self
            .derived_with(self.current, tenant, id, &salt)
            .unwrap_or_else(|| unreachable!("checked in Keyring::new"));
        (self.current, code, salt)
    }

    /// The code [`Self::derive`] made for `id` with `salt` under key
    /// `version`, if that version is still in the keyring.
    pub fn rederive(
        &self,
        version: u16,
        tenant: TenantId,
        id: uuid::Uuid,
        salt: &[u8],
    ) -> Option<PlainCode> {
        self.derived_with(version, tenant, id, salt)
    }

    fn derived_with(
        &self,
        version: u16,
        tenant: TenantId,
        id: uuid::Uuid,
        salt: &[u8],
    ) -> Option<PlainCode> {
        let (_, key) = self.keys.iter().find(|(v, _)| *v == version)?;
        let mut mac = <Hmac<Sha256>>::new_from_slice(key.expose_secret())
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(b"admitone/derived-code/v1:");
        mac.update(tenant.0.as_bytes());
        mac.update(id.as_bytes());
        mac.update(salt);
        let bytes = mac.finalize().into_bytes();
        let mut payload = [0u8; codeformat::PAYLOAD_SYMBOLS];
        for (value, byte) in payload.iter_mut().zip(bytes.iter()) {
            *value = byte & 31;
        }
        Some(PlainCode(codeformat::from_payload(&payload)))
    }

    /// The digests to look a typed code up with: one per key version.
    pub fn candidates(&self, code: &(impl CodeText + ?Sized)) -> Vec<Vec<u8>> {
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
    fn a_derived_code_depends_on_the_key_the_tenant_the_id_and_the_salt() {
        let ring = |secret: &str| {
            Keyring::new(1, vec![(1, SecretString::from(secret.to_owned()))]).expect("keyring")
        };
        let (a, b) = (ring("first key"), ring("second key"));
        let (t1, t2) = (
            TenantId(uuid::Uuid::now_v7()),
            TenantId(uuid::Uuid::now_v7()),
        );
        let (id1, id2) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
        let (version, code, salt) = a.derive(t1, id1);
        assert_eq!(version, 1);
        // A well-formed code: its check symbol holds.
        assert_eq!(PlainCode::parse(&code.display()).expect("parses"), code);
        assert_eq!(
            a.rederive(1, t1, id1, &salt),
            Some(code.clone()),
            "the same again"
        );
        assert_eq!(a.rederive(2, t1, id1, &salt), None, "no such key version");
        assert_ne!(
            a.rederive(1, t1, id2, &salt),
            Some(code.clone()),
            "another id"
        );
        assert_ne!(
            a.rederive(1, t2, id1, &salt),
            Some(code.clone()),
            "another tenant"
        );
        assert_ne!(
            b.rederive(1, t1, id1, &salt),
            Some(code.clone()),
            "another key"
        );
        assert_ne!(
            a.rederive(1, t1, id1, &[0; 16]),
            Some(code.clone()),
            "another salt"
        );
        let (_, again, other_salt) = a.derive(t1, id1);
        assert_ne!(salt, other_salt, "a fresh salt each time");
        assert_ne!(again, code);
        // Every symbol is drawn on: 200 codes use the whole alphabet.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let code = a.derive(t1, uuid::Uuid::now_v7()).1;
            seen.extend(code.canonical()[..codeformat::PAYLOAD_SYMBOLS].chars());
        }
        assert_eq!(seen.len(), 32);
    }

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
    fn one_of_ours_has_one_digest_in_every_tenant_a_foreign_one_per_tenant() {
        let ring = keyring(1, &[(1, "first-secret-of-16+")]);
        let (ann, bob) = (
            TenantId(uuid::Uuid::now_v7()),
            TenantId(uuid::Uuid::now_v7()),
        );
        let code = PlainCode::generate();
        let typed = TypedCode::read(&code.display().to_lowercase(), false).expect("ours");
        assert_eq!(ring.lookup(&typed, ann), vec![ring.digest(&code).1]);
        assert_eq!(ring.lookup(&typed, ann), ring.lookup(&typed, bob));
        assert_eq!(TypedCode::from(code.clone()), typed);
        let foreign = TypedCode::read("shop-0001", true).expect("foreign");
        let stored = ring.digest(&HashedText::foreign(ann, "SHOP0001")).1;
        assert_eq!(ring.lookup(&foreign, ann), vec![stored.clone()]);
        assert_ne!(ring.lookup(&foreign, bob), vec![stored]);
        assert_eq!(
            format!("{:?}", HashedText::foreign(ann, "SHOP0001")),
            "HashedText(…)"
        );
        assert!(!format!("{foreign:?}").contains("SHOP0001"));
    }

    #[test]
    fn debug_and_hint_mask_the_code() {
        let code = PlainCode::generate();
        let debug = format!("{code:?}");
        assert!(!debug.contains(code.canonical()), "{debug}");
        assert_eq!(
            debug,
            format!("PlainCode({})", code.hint()),
            "the hint only"
        );
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
    fn a_keyrings_debug_shows_versions_never_secrets() {
        let ring = keyring(
            2,
            &[(1, "first-secret-of-16+"), (2, "second-secret-of-16+")],
        );
        let debug = format!("{ring:?}");
        assert_eq!(debug, "Keyring { current: 2, versions: [1, 2] }");
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
