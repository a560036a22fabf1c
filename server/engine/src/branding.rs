//! A tenant's branding: what its learners see of it on its course pages
//! and in its mails, and what they never see of any other tenant's.
//!
//! Four things, each with one rule here and the same rule in the database
//! (migration `…_branding.sql`): the tenant's name (`tenants.name`,
//! [`TenantName`]); an accent colour, always a lower-case `#rrggbb`
//! ([`Accent`]) because it is written into a `style` attribute of pages and
//! mails, so nothing else may ever reach one; a support address
//! ([`Email`]'s rule); and a logo, a PNG, JPEG or WebP of at most
//! [`MAX_LOGO_BYTES`] told by its first bytes, never by what the upload
//! claims ([`LogoType::sniff`]; no SVG, which a browser would run).
//!
//! The logo lives in PostgreSQL (`tenant_logos`): it is small, and so it
//! is replaced in the same transaction as its audit record and nothing is
//! left behind in a bucket. Every upload gets a new id, which is in the
//! logo's URL ([`logo_path`]), so that URL is cached for good and a new
//! logo is a new URL. Every change is audited with who made it.

use std::collections::HashMap;

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{
    accounts::{AccountId, Email},
    audit,
    tenants::{TenantId, TenantName},
};

/// Why a branding change was refused (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum BrandingError {
    #[error("a tenant name needs 1 to 120 visible characters")]
    InvalidName,
    #[error("an accent colour is # and six hex digits, like #2457c5")]
    InvalidAccent,
    #[error("a support address is one email address, like help@example.com")]
    InvalidSupportEmail,
    #[error("a logo is a PNG, JPEG or WebP image")]
    LogoNotAnImage,
    #[error("a logo is at most 256 KiB")]
    LogoTooLarge,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The largest logo accepted: 256 KiB (the database's CHECK too).
pub const MAX_LOGO_BYTES: usize = 256 * 1024;

/// An accent colour: `#rrggbb`, stored lower-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accent(String);

impl Accent {
    /// Reads `#rrggbb` (either case, spaces around ignored).
    pub fn parse(raw: &str) -> Result<Self, BrandingError> {
        let raw = raw.trim();
        let ok = raw.len() == 7
            && raw.starts_with('#')
            && raw[1..].bytes().all(|b| b.is_ascii_hexdigit());
        if ok {
            Ok(Self(raw.to_ascii_lowercase()))
        } else {
            Err(BrandingError::InvalidAccent)
        }
    }

    /// A stored value, checked again: anything else reads as no accent
    /// (it goes into `style` attributes).
    pub fn from_stored(stored: Option<String>) -> Option<Self> {
        stored.and_then(|s| Self::parse(&s).ok())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn channels(&self) -> [u8; 3] {
        [1, 3, 5].map(|i| u8::from_str_radix(&self.0[i..i + 2], 16).unwrap_or(0))
    }

    /// The colour of text on the accent (buttons): near-black on a light
    /// accent, white on a dark one, whichever contrasts more (WCAG's
    /// relative luminance), so a pale brand colour keeps buttons legible.
    pub fn text_colour(&self) -> &'static str {
        let l = luminance(self.channels());
        // Contrast with white against contrast with #111111 (L ≈ 0.0056).
        if contrast(1.0, l) >= contrast(l, 0.005_6) {
            "#ffffff"
        } else {
            "#111111"
        }
    }

    /// The accent as text on white (links, secondary buttons): the accent
    /// itself when it reads (contrast at least 4.5:1, WCAG AA), else the
    /// same hue darkened until it does.
    pub fn ink(&self) -> String {
        let rgb = self.channels();
        let mut scale = 1.0_f64;
        loop {
            let dark = rgb.map(|c| (f64::from(c) * scale).round() as u8);
            if contrast(1.0, luminance(dark)) >= 4.5 || scale <= 0.0 {
                return format!("#{:02x}{:02x}{:02x}", dark[0], dark[1], dark[2]);
            }
            scale = (scale - 0.05).max(0.0);
        }
    }
}

/// WCAG's relative luminance of an sRGB colour.
fn luminance(rgb: [u8; 3]) -> f64 {
    let channel = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2])
}

/// WCAG's contrast ratio of two luminances, the lighter first.
fn contrast(lighter: f64, darker: f64) -> f64 {
    (lighter + 0.05) / (darker + 0.05)
}

/// The image formats a logo may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogoType {
    Png,
    Jpeg,
    Webp,
}

impl LogoType {
    /// The format the bytes are, from their signature; `None` for
    /// anything else, whatever the upload said it was.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }

    fn from_mime(mime: &str) -> Option<Self> {
        [Self::Png, Self::Jpeg, Self::Webp]
            .into_iter()
            .find(|t| t.mime() == mime)
    }
}

/// Checks a logo's bytes: its size, then its format.
pub fn check_logo(bytes: &[u8]) -> Result<LogoType, BrandingError> {
    if bytes.len() > MAX_LOGO_BYTES {
        return Err(BrandingError::LogoTooLarge);
    }
    LogoType::sniff(bytes).ok_or(BrandingError::LogoNotAnImage)
}

/// Where a logo is served (the id changes with every upload). The URL
/// names the logo only, not its tenant: tenant ids stay off public pages.
pub fn logo_path(logo: Uuid) -> String {
    format!("/brand/logo/{logo}")
}

/// A tenant's branding as its learners see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branding {
    pub tenant: TenantId,
    pub name: String,
    pub accent: Option<Accent>,
    pub support_email: Option<String>,
    /// The current logo's id (its URL is [`logo_path`]).
    pub logo: Option<Uuid>,
}

impl Branding {
    /// The logo's URL path, if there is a logo.
    pub fn logo_path(&self) -> Option<String> {
        self.logo.map(logo_path)
    }
}

/// A tenant's branding (`None`: no such tenant).
pub async fn of(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Option<Branding>> {
    let row = sqlx::query!(
        r#"SELECT t.name, t.brand_accent, t.support_email, l.id AS "logo?"
           FROM tenants t LEFT JOIN tenant_logos l ON l.tenant_id = t.id
           WHERE t.id = $1"#,
        tenant.0
    )
    .fetch_optional(pool)
    .await
    .context("reading a tenant's branding")?;
    Ok(row.map(|r| Branding {
        tenant,
        name: r.name,
        accent: Accent::from_stored(r.brand_accent),
        support_email: r.support_email,
        logo: r.logo,
    }))
}

/// The branding of each of `tenants` that exists, in one read (the mail
/// relay brands a whole round's mails with it, on its lease's time).
pub async fn of_each(
    pool: &PgPool,
    tenants: &[TenantId],
) -> anyhow::Result<HashMap<TenantId, Branding>> {
    let ids: Vec<Uuid> = tenants.iter().map(|tenant| tenant.0).collect();
    let rows = sqlx::query!(
        r#"SELECT t.id, t.name, t.brand_accent, t.support_email, l.id AS "logo?"
           FROM tenants t LEFT JOIN tenant_logos l ON l.tenant_id = t.id
           WHERE t.id = ANY($1)"#,
        &ids
    )
    .fetch_all(pool)
    .await
    .context("reading tenants' branding")?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let tenant = TenantId(r.id);
            let branding = Branding {
                tenant,
                name: r.name,
                accent: Accent::from_stored(r.brand_accent),
                support_email: r.support_email,
                logo: r.logo,
            };
            (tenant, branding)
        })
        .collect())
}

/// What an owner sets (the logo has its own calls).
#[derive(Debug, Clone)]
pub struct BrandingChange {
    pub name: TenantName,
    pub accent: Option<Accent>,
    pub support_email: Option<Email>,
}

/// Reads a change from what was typed: an empty accent or support address
/// is none. Every field is checked before anything is written.
impl BrandingChange {
    pub fn parse(name: &str, accent: &str, support_email: &str) -> Result<Self, BrandingError> {
        let name = TenantName::parse(name).map_err(|_| BrandingError::InvalidName)?;
        let accent = match accent.trim() {
            "" => None,
            typed => Some(Accent::parse(typed)?),
        };
        let support_email = match support_email.trim() {
            "" => None,
            // It becomes a `mailto:` link: none of the characters that
            // would start or carry a header there (`?cc=…`).
            typed if typed.contains(['?', '&', '=', '#', '%']) => {
                return Err(BrandingError::InvalidSupportEmail);
            }
            typed => Some(Email::parse(typed).map_err(|_| BrandingError::InvalidSupportEmail)?),
        };
        Ok(Self {
            name,
            accent,
            support_email,
        })
    }
}

/// Changes the name, accent and support address (audited with what
/// changed, `tenant.branding_changed`; nothing written if nothing did).
pub async fn update(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    change: &BrandingChange,
) -> Result<(), BrandingError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let before = sqlx::query!(
        "SELECT name, brand_accent, support_email FROM tenants WHERE id = $1 FOR NO KEY UPDATE",
        tenant.0
    )
    .fetch_one(&mut *tx)
    .await
    .context("reading a tenant's branding")?;
    let accent = change.accent.as_ref().map(Accent::as_str);
    let support = change.support_email.as_ref().map(Email::as_str);
    if before.name == change.name.as_str()
        && before.brand_accent.as_deref() == accent
        && before.support_email.as_deref() == support
    {
        return Ok(());
    }
    sqlx::query!(
        "UPDATE tenants SET name = $2, brand_accent = $3, support_email = $4 WHERE id = $1",
        tenant.0,
        change.name.as_str(),
        accent,
        support,
    )
    .execute(&mut *tx)
    .await
    .context("storing a tenant's branding")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "tenant.branding_changed",
        ("tenant", tenant.0),
        serde_json::json!({
            "name": change.name.as_str(),
            "accent": accent,
            "support_email": support,
        }),
    )
    .await?;
    tx.commit()
        .await
        .context("committing a tenant's branding")?;
    Ok(())
}

/// Replaces the tenant's logo with `bytes` (checked first: nothing is
/// written for a refused file). Returns the new logo's id. Audited
/// (`tenant.logo_changed`).
pub async fn set_logo(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    bytes: &[u8],
) -> Result<Uuid, BrandingError> {
    let kind = check_logo(bytes)?;
    let id = Uuid::now_v7();
    let mut tx = pool.begin().await.context("starting a transaction")?;
    sqlx::query!(
        "INSERT INTO tenant_logos (tenant_id, id, content_type, bytes) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id) DO UPDATE
           SET id = EXCLUDED.id, content_type = EXCLUDED.content_type,
               bytes = EXCLUDED.bytes, uploaded_at = now()",
        tenant.0,
        id,
        kind.mime(),
        bytes,
    )
    .execute(&mut *tx)
    .await
    .context("storing a tenant's logo")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "tenant.logo_changed",
        ("tenant", tenant.0),
        serde_json::json!({ "logo": id, "type": kind.mime(), "bytes": bytes.len() }),
    )
    .await?;
    tx.commit().await.context("committing a tenant's logo")?;
    Ok(id)
}

/// Removes the tenant's logo. Returns whether there was one (audited,
/// `tenant.logo_removed`, only then).
pub async fn remove_logo(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
) -> Result<bool, BrandingError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let removed = sqlx::query_scalar!(
        "DELETE FROM tenant_logos WHERE tenant_id = $1 RETURNING id",
        tenant.0
    )
    .fetch_optional(&mut *tx)
    .await
    .context("removing a tenant's logo")?;
    if let Some(id) = removed {
        audit::admin_action(
            &mut tx,
            tenant,
            actor,
            "tenant.logo_removed",
            ("tenant", tenant.0),
            serde_json::json!({ "logo": id }),
        )
        .await?;
    }
    tx.commit().await.context("committing a logo's removal")?;
    Ok(removed.is_some())
}

/// A logo's bytes and format, if `logo` is some tenant's current one.
pub async fn logo(pool: &PgPool, logo: Uuid) -> anyhow::Result<Option<(LogoType, Vec<u8>)>> {
    let row = sqlx::query!(
        "SELECT l.content_type, l.bytes
         FROM directory.logos d JOIN tenant_logos l ON l.tenant_id = d.tenant_id AND l.id = d.id
         WHERE d.id = $1",
        logo,
    )
    .fetch_optional(pool)
    .await
    .context("reading a tenant's logo")?;
    Ok(row.and_then(|r| LogoType::from_mime(&r.content_type).map(|t| (t, r.bytes))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One read gives each existing tenant its own branding (its accent,
    /// its logo), and nothing for an id that is no tenant's.
    #[sqlx::test(migrations = "../../migrations")]
    async fn each_tenant_gets_its_own_branding_in_one_read(pool: PgPool) {
        let (acme, plain, nobody) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let logo = Uuid::now_v7();
        for (id, slug, name) in [(acme, "acme", "Acme"), (plain, "plain", "Plain")] {
            sqlx::query("INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3)")
                .bind(id)
                .bind(slug)
                .bind(name)
                .execute(&pool)
                .await
                .expect("tenant");
        }
        sqlx::query("UPDATE tenants SET brand_accent = '#2e7d32', support_email = 'help@acme.test' WHERE id = $1")
            .bind(acme)
            .execute(&pool)
            .await
            .expect("accent");
        sqlx::query(
            "INSERT INTO tenant_logos (tenant_id, id, content_type, bytes) VALUES ($1, $2, 'image/png', $3)",
        )
        .bind(acme)
        .bind(logo)
        .bind(b"\x89PNG\r\n\x1a\n".to_vec())
        .execute(&pool)
        .await
        .expect("logo");

        let each = of_each(&pool, &[TenantId(acme), TenantId(plain), TenantId(nobody)])
            .await
            .expect("read");
        assert_eq!(each.len(), 2, "{each:?}");
        assert_eq!(
            each[&TenantId(acme)],
            Branding {
                tenant: TenantId(acme),
                name: "Acme".into(),
                accent: Accent::parse("#2e7d32").ok(),
                support_email: Some("help@acme.test".into()),
                logo: Some(logo),
            }
        );
        assert_eq!(
            each[&TenantId(plain)],
            Branding {
                tenant: TenantId(plain),
                name: "Plain".into(),
                accent: None,
                support_email: None,
                logo: None,
            }
        );
        for (tenant, branding) in &each {
            assert_eq!(
                of(&pool, *tenant).await.expect("one").as_ref(),
                Some(branding)
            );
        }
        assert!(of_each(&pool, &[]).await.expect("none").is_empty());
    }

    #[test]
    fn an_accent_is_six_hex_digits_after_a_hash_stored_lower_case() {
        assert_eq!(
            Accent::parse(" #2457C5 ").expect("valid").as_str(),
            "#2457c5"
        );
        for bad in [
            "",
            "2457c5",
            "#2457c",
            "#2457c55",
            "#24g7c5",
            "red",
            "#fff",
            "#2457c5;background:url(x)",
            "#２４５７ｃ５",
        ] {
            assert!(Accent::parse(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(Accent::from_stored(Some("url(x)".into())), None);
        assert_eq!(
            Accent::from_stored(Some("#abcdef".into())).map(|a| a.0),
            Some("#abcdef".to_owned())
        );
    }

    #[test]
    fn text_on_the_accent_is_whichever_of_white_and_black_reads_better() {
        let text = |hex: &str| Accent::parse(hex).expect("valid").text_colour();
        assert_eq!(text("#1f5fbf"), "#ffffff");
        assert_eq!(text("#000000"), "#ffffff");
        assert_eq!(text("#ffffff"), "#111111");
        assert_eq!(text("#ffd400"), "#111111", "a yellow takes dark text");
        assert_eq!(text("#2e7d32"), "#ffffff", "a dark green takes white text");
    }

    #[test]
    fn the_accent_as_text_is_darkened_until_it_reads_on_white() {
        let ink = |hex: &str| Accent::parse(hex).expect("valid").ink();
        assert_eq!(ink("#1f5fbf"), "#1f5fbf", "dark enough already");
        assert_eq!(ink("#000000"), "#000000");
        for pale in ["#ffd400", "#ffffff", "#7fdbff", "#2ecc40"] {
            let dark = ink(pale);
            assert_ne!(dark, pale);
            let rgb = Accent::parse(&dark).expect("a colour").channels();
            assert!(
                contrast(1.0, luminance(rgb)) >= 4.5,
                "{pale} → {dark} reads on white"
            );
        }
    }

    #[test]
    fn a_logo_is_told_by_its_bytes_and_its_size() {
        let png = b"\x89PNG\r\n\x1a\n rest";
        let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0];
        let webp = b"RIFF\x10\0\0\0WEBPVP8 ";
        assert_eq!(check_logo(png).ok(), Some(LogoType::Png));
        assert_eq!(check_logo(&jpeg).ok(), Some(LogoType::Jpeg));
        assert_eq!(check_logo(webp).ok(), Some(LogoType::Webp));
        for bad in [
            &b"<svg xmlns='http://www.w3.org/2000/svg'/>"[..],
            b"GIF89a",
            b"RIFF\x10\0\0\0WAVE",
            b"",
            b"\x89PNG",
        ] {
            assert!(
                matches!(check_logo(bad), Err(BrandingError::LogoNotAnImage)),
                "{bad:?} should be refused"
            );
        }
        let mut big = png.to_vec();
        big.resize(MAX_LOGO_BYTES, 0);
        assert!(check_logo(&big).is_ok(), "exactly the limit is accepted");
        big.push(0);
        assert!(matches!(check_logo(&big), Err(BrandingError::LogoTooLarge)));
    }

    #[test]
    fn a_change_checks_every_field_and_reads_empty_as_none() {
        let change = BrandingChange::parse(" Acme ", "", " ").expect("valid");
        assert_eq!(change.name.as_str(), "Acme");
        assert!(change.accent.is_none() && change.support_email.is_none());
        let change = BrandingChange::parse("Acme", "#AABBCC", "Help@Acme.test").expect("valid");
        assert_eq!(change.accent.map(|a| a.0).as_deref(), Some("#aabbcc"));
        assert_eq!(
            change.support_email.as_ref().map(Email::as_str),
            Some("help@acme.test")
        );
        assert!(matches!(
            BrandingChange::parse("", "#aabbcc", ""),
            Err(BrandingError::InvalidName)
        ));
        assert!(matches!(
            BrandingChange::parse("Acme", "blue", ""),
            Err(BrandingError::InvalidAccent)
        ));
        for bad in [
            "not an address",
            "help?cc=boss@acme.test",
            "a&b@acme.test",
            "h%40@acme.test",
        ] {
            assert!(
                matches!(
                    BrandingChange::parse("Acme", "", bad),
                    Err(BrandingError::InvalidSupportEmail)
                ),
                "{bad:?}"
            );
        }
    }
}
