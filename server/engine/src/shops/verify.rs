//! Whether a delivery came from the shop: each shop's documented scheme,
//! checked against the integration's secrets (the current one, and the
//! one before a rotation while it is still accepted).
//!
//! - Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=…]`, the
//!   hex HMAC-SHA256 of `"{t}.{body}"`; `t` within [`STRIPE_TOLERANCE`]
//!   of now, so a captured delivery cannot be replayed later.
//! - Lemon Squeezy: `X-Signature: <hex>`, HMAC-SHA256 of the body.
//! - Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the body.
//! - Gumroad signs nothing: its docs have the seller put a secret in the
//!   ping's URL (`?secret=…`), compared here in constant time.
//!
//! Pure: no I/O, the clock passed in. Every comparison of a digest or a
//! secret is constant-time (`Mac::verify_slice`).

use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use super::Provider;

/// How far a Stripe signature's timestamp may be from now, either way
/// (Stripe's libraries' default).
pub const STRIPE_TOLERANCE_SECONDS: i64 = 300;

/// The most `v1` signatures a Stripe header may list (Stripe sends one
/// per active secret: two during a rotation).
const MAX_STRIPE_SIGNATURES: usize = 8;

/// What a delivery carries that proves where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Proof<'a> {
    /// The provider's signature header, as received.
    pub signature: Option<&'a str>,
    /// Gumroad's `secret` URL parameter.
    pub url_secret: Option<&'a str>,
    pub body: &'a [u8],
}

/// Why a delivery is not believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unverified {
    #[error("the signature is missing")]
    Missing,
    #[error("the signature is not in the shop's format")]
    Malformed,
    #[error("the signature does not match this shop's secret")]
    Mismatch,
    #[error(
        "the signature's timestamp is more than 5 minutes from now (a replay, or a clock far off)"
    )]
    OutsideWindow,
}

/// Checks `proof` against each of `secrets`; `now` in unix seconds.
pub fn verify(
    provider: Provider,
    secrets: &[&str],
    proof: &Proof<'_>,
    now: i64,
) -> Result<(), Unverified> {
    match provider {
        Provider::Stripe => stripe(secrets, proof, now),
        Provider::LemonSqueezy => {
            let signature = proof.signature.ok_or(Unverified::Missing)?;
            let digest = hex(signature.trim()).ok_or(Unverified::Malformed)?;
            body_signed_by_any(secrets, &[proof.body], &digest)
        }
        Provider::Shopify => {
            let signature = proof.signature.ok_or(Unverified::Missing)?;
            let digest = base64::engine::general_purpose::STANDARD
                .decode(signature.trim())
                .map_err(|_| Unverified::Malformed)?;
            body_signed_by_any(secrets, &[proof.body], &digest)
        }
        Provider::Gumroad => {
            let given = proof.url_secret.ok_or(Unverified::Missing)?;
            // Compared as MACs of one message under each key: equal
            // lengths, constant time, so the time taken says nothing of
            // how much of the secret matched.
            let given = mac_bytes(given.as_bytes(), GUMROAD_PROBE);
            secrets
                .iter()
                .any(|secret| {
                    mac(secret.as_bytes(), &[GUMROAD_PROBE])
                        .verify_slice(&given)
                        .is_ok()
                })
                .then_some(())
                .ok_or(Unverified::Mismatch)
        }
    }
}

const GUMROAD_PROBE: &[u8] = b"admitone gumroad secret";

fn stripe(secrets: &[&str], proof: &Proof<'_>, now: i64) -> Result<(), Unverified> {
    let header = proof.signature.ok_or(Unverified::Missing)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        let Some((key, value)) = item.trim().split_once('=') else {
            return Err(Unverified::Malformed);
        };
        match key {
            "t" => timestamp = Some(value.parse::<i64>().map_err(|_| Unverified::Malformed)?),
            // Stripe sends a v1 per active secret; other schemes (v0, a
            // test-mode one) are not HMAC-SHA256 and are skipped.
            "v1" => signatures.push(hex(value).ok_or(Unverified::Malformed)?),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(Unverified::Malformed)?;
    if signatures.is_empty() {
        return Err(Unverified::Malformed);
    }
    if signatures.len() > MAX_STRIPE_SIGNATURES {
        return Err(Unverified::Malformed);
    }
    // One MAC per secret over the body, compared with every listed
    // signature: the work does not grow with what the header lists.
    let stamp = timestamp.to_string();
    let signed = [stamp.as_bytes(), b".", proof.body];
    secrets
        .iter()
        .any(|secret| {
            let expected = mac(secret.as_bytes(), &signed);
            signatures
                .iter()
                .any(|digest| expected.clone().verify_slice(digest).is_ok())
        })
        .then_some(())
        .ok_or(Unverified::Mismatch)?;
    // Checked after the signature, so a forger learns nothing of the
    // window, and a genuine delivery replayed late is told why.
    if (now - timestamp).abs() > STRIPE_TOLERANCE_SECONDS {
        return Err(Unverified::OutsideWindow);
    }
    Ok(())
}

fn body_signed_by_any(secrets: &[&str], parts: &[&[u8]], digest: &[u8]) -> Result<(), Unverified> {
    secrets
        .iter()
        .any(|secret| mac(secret.as_bytes(), parts).verify_slice(digest).is_ok())
        .then_some(())
        .ok_or(Unverified::Mismatch)
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256>>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    for part in parts {
        mac.update(part);
    }
    mac
}

fn mac_bytes(key: &[u8], data: &[u8]) -> Vec<u8> {
    mac(key, &[data]).finalize().into_bytes().to_vec()
}

/// Lower- or upper-case hex, an even number of digits.
fn hex(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() || !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// The hex HMAC-SHA256 of `parts` under `secret`: how a shop signs (and
/// how the tests sign as one).
pub fn hex_mac(secret: &str, parts: &[&[u8]]) -> String {
    mac(secret.as_bytes(), parts)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    //! The vectors were computed outside this code (Python's `hmac`), so
    //! a mistake shared by signing and checking here cannot pass.

    use super::*;

    const BODY: &[u8] = br#"{"id":"evt_1","type":"checkout.session.completed"}"#;
    const STRIPE_SECRET: &str = "whsec_test_secret_0123456789";
    const STRIPE_T: i64 = 1_700_000_000;
    const STRIPE_V1: &str = "8148423589a812fdc91e48207e03f4da7292dd1e03eb1c297a8caf63643af5f6";
    const LEMON_SECRET: &str = "ls_signing_secret_0123";
    const LEMON_HEX: &str = "86447a28c9076430e33a312b6cd4993e73dd38ba0ce0cafa4682eee227bad579";
    const SHOPIFY_SECRET: &str = "shpss_app_secret_0123";
    const SHOPIFY_B64: &str = "6xrUgBpMDDMkmfpVt7gdlMczSrS8m5yLzbyP9F4lvZ4=";

    fn proof(signature: Option<&str>) -> Proof<'_> {
        Proof {
            signature,
            url_secret: None,
            body: BODY,
        }
    }

    fn stripe_header(t: i64, v1: &str) -> String {
        format!("t={t},v1={v1}")
    }

    #[test]
    fn stripe_accepts_its_documented_signature_within_five_minutes_either_way() {
        let header = stripe_header(STRIPE_T, STRIPE_V1);
        for now in [STRIPE_T, STRIPE_T + 300, STRIPE_T - 300] {
            assert_eq!(
                verify(
                    Provider::Stripe,
                    &[STRIPE_SECRET],
                    &proof(Some(&header)),
                    now
                ),
                Ok(()),
                "now = {now}"
            );
        }
        // Stripe lists one v1 per secret during its own rotation, and
        // may add schemes this code does not know.
        let several = format!("t={STRIPE_T},v1={},v0=abc,v1={STRIPE_V1}", "00".repeat(32));
        assert_eq!(
            verify(
                Provider::Stripe,
                &[STRIPE_SECRET],
                &proof(Some(&several)),
                STRIPE_T
            ),
            Ok(())
        );
        assert_eq!(hex_mac(STRIPE_SECRET, &[b"1700000000.", BODY]), STRIPE_V1);
    }

    #[test]
    fn stripe_refuses_a_replay_outside_the_window_but_only_once_the_signature_holds() {
        let header = stripe_header(STRIPE_T, STRIPE_V1);
        for now in [STRIPE_T + 301, STRIPE_T - 301] {
            assert_eq!(
                verify(
                    Provider::Stripe,
                    &[STRIPE_SECRET],
                    &proof(Some(&header)),
                    now
                ),
                Err(Unverified::OutsideWindow)
            );
        }
        let forged = stripe_header(STRIPE_T, &"ab".repeat(32));
        assert_eq!(
            verify(
                Provider::Stripe,
                &[STRIPE_SECRET],
                &proof(Some(&forged)),
                STRIPE_T + 1000
            ),
            Err(Unverified::Mismatch)
        );
    }

    #[test]
    fn stripe_refuses_another_secret_another_body_or_another_timestamp() {
        let header = stripe_header(STRIPE_T, STRIPE_V1);
        assert_eq!(
            verify(
                Provider::Stripe,
                &["whsec_other_secret_0123456"],
                &proof(Some(&header)),
                STRIPE_T
            ),
            Err(Unverified::Mismatch)
        );
        let tampered = Proof {
            body: br#"{"id":"evt_2","type":"checkout.session.completed"}"#,
            ..proof(Some(&header))
        };
        assert_eq!(
            verify(Provider::Stripe, &[STRIPE_SECRET], &tampered, STRIPE_T),
            Err(Unverified::Mismatch)
        );
        // The timestamp is signed: moving it into the window breaks it.
        let moved = stripe_header(STRIPE_T + 1, STRIPE_V1);
        assert_eq!(
            verify(
                Provider::Stripe,
                &[STRIPE_SECRET],
                &proof(Some(&moved)),
                STRIPE_T
            ),
            Err(Unverified::Mismatch)
        );
    }

    #[test]
    fn stripe_headers_out_of_format_are_malformed_and_none_is_missing() {
        for header in [
            "",
            "t=abc,v1=00",
            &format!("v1={STRIPE_V1}"),
            &format!("t={STRIPE_T}"),
            &format!("t={STRIPE_T},v1=xyz"),
            &format!("t={STRIPE_T},v1={}", &STRIPE_V1[1..]),
            &format!("t={STRIPE_T};v1={STRIPE_V1}"),
        ] {
            assert_eq!(
                verify(
                    Provider::Stripe,
                    &[STRIPE_SECRET],
                    &proof(Some(header)),
                    STRIPE_T
                ),
                Err(Unverified::Malformed),
                "{header:?}"
            );
        }
        assert_eq!(
            verify(Provider::Stripe, &[STRIPE_SECRET], &proof(None), STRIPE_T),
            Err(Unverified::Missing)
        );
    }

    /// A header listing thousands of signatures is refused before any
    /// MAC is computed (one per secret is, whatever the header lists; a
    /// cap keeps even the comparisons few).
    #[test]
    fn a_stripe_header_listing_too_many_signatures_is_malformed() {
        let mut header = format!("t={STRIPE_T},v1={STRIPE_V1}");
        for _ in 0..MAX_STRIPE_SIGNATURES {
            header.push_str(",v1=00");
        }
        assert_eq!(
            verify(
                Provider::Stripe,
                &[STRIPE_SECRET],
                &proof(Some(&header)),
                STRIPE_T
            ),
            Err(Unverified::Malformed)
        );
        let mut allowed = format!("t={STRIPE_T},v1={STRIPE_V1}");
        for _ in 1..MAX_STRIPE_SIGNATURES {
            allowed.push_str(",v1=00");
        }
        assert_eq!(
            verify(
                Provider::Stripe,
                &[STRIPE_SECRET],
                &proof(Some(&allowed)),
                STRIPE_T
            ),
            Ok(())
        );
    }

    #[test]
    fn lemon_squeezy_checks_the_hex_mac_of_the_body() {
        assert_eq!(
            verify(
                Provider::LemonSqueezy,
                &[LEMON_SECRET],
                &proof(Some(LEMON_HEX)),
                0
            ),
            Ok(())
        );
        assert_eq!(
            verify(
                Provider::LemonSqueezy,
                &[LEMON_SECRET],
                &proof(Some(&LEMON_HEX.to_uppercase())),
                0
            ),
            Ok(())
        );
        let mut wrong = LEMON_HEX.to_owned();
        wrong.replace_range(0..2, "00");
        assert_eq!(
            verify(
                Provider::LemonSqueezy,
                &[LEMON_SECRET],
                &proof(Some(&wrong)),
                0
            ),
            Err(Unverified::Mismatch)
        );
        assert_eq!(
            verify(
                Provider::LemonSqueezy,
                &[LEMON_SECRET],
                &proof(Some("not hex")),
                0
            ),
            Err(Unverified::Malformed)
        );
        assert_eq!(
            verify(Provider::LemonSqueezy, &[LEMON_SECRET], &proof(None), 0),
            Err(Unverified::Missing)
        );
    }

    #[test]
    fn shopify_checks_the_base64_mac_of_the_body() {
        assert_eq!(
            verify(
                Provider::Shopify,
                &[SHOPIFY_SECRET],
                &proof(Some(SHOPIFY_B64)),
                0
            ),
            Ok(())
        );
        // Lemon Squeezy's scheme with Shopify's secret is not Shopify's
        // (hex digits are base64 too: it decodes, to other bytes).
        let as_hex = hex_mac(SHOPIFY_SECRET, &[BODY]);
        assert_eq!(
            verify(
                Provider::Shopify,
                &[SHOPIFY_SECRET],
                &proof(Some(&as_hex)),
                0
            ),
            Err(Unverified::Mismatch)
        );
        assert_eq!(
            verify(
                Provider::Shopify,
                &[SHOPIFY_SECRET],
                &proof(Some("not base64!")),
                0
            ),
            Err(Unverified::Malformed)
        );
        assert_eq!(
            verify(
                Provider::Shopify,
                &[LEMON_SECRET],
                &proof(Some(SHOPIFY_B64)),
                0
            ),
            Err(Unverified::Mismatch)
        );
    }

    #[test]
    fn a_rotated_secret_verifies_beside_the_current_one() {
        let secrets = ["ls_new_signing_secret_99", LEMON_SECRET];
        assert_eq!(
            verify(Provider::LemonSqueezy, &secrets, &proof(Some(LEMON_HEX)), 0),
            Ok(())
        );
        assert_eq!(
            verify(
                Provider::LemonSqueezy,
                &secrets[..1],
                &proof(Some(LEMON_HEX)),
                0
            ),
            Err(Unverified::Mismatch)
        );
    }

    #[test]
    fn gumroad_compares_the_url_secret() {
        let secret = "0123456789abcdef0123456789abcdef";
        let with = |given| Proof {
            signature: None,
            url_secret: given,
            body: b"sale_id=1",
        };
        assert_eq!(
            verify(Provider::Gumroad, &[secret], &with(Some(secret)), 0),
            Ok(())
        );
        for wrong in ["0123456789abcdef0123456789abcdee", "0123456789abcdef", ""] {
            assert_eq!(
                verify(Provider::Gumroad, &[secret], &with(Some(wrong)), 0),
                Err(Unverified::Mismatch),
                "{wrong:?}"
            );
        }
        assert_eq!(
            verify(Provider::Gumroad, &[secret], &with(None), 0),
            Err(Unverified::Missing)
        );
    }
}
