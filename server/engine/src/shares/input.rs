//! What an admin may set on a share, parsed: its status, its link name
//! (slug), and the create/update input with its limits and validity
//! window. No I/O: parsing decides what reaches the database, and refuses
//! everything else with a [`ShareError`] naming the field.

use time::OffsetDateTime;
use uuid::Uuid;

use super::ShareError;

pub use model::ShareStatus;

impl From<model::InvalidShareStatus> for ShareError {
    fn from(_: model::InvalidShareStatus) -> Self {
        Self::InvalidStatus
    }
}

/// The public link name of a share (`/s/<slug>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSlug(String);

impl ShareSlug {
    pub fn parse(raw: &str) -> Result<Self, ShareError> {
        let slug = raw.trim();
        let ok = (1..=64).contains(&slug.len())
            && slug
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !slug.starts_with('-')
            && !slug.ends_with('-');
        ok.then(|| Self(slug.to_owned()))
            .ok_or(ShareError::InvalidSlug)
    }

    /// A slug made from a title, with a random suffix against collisions.
    pub fn from_title(title: &str) -> Self {
        let mut base: String = title
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        while base.contains("--") {
            base = base.replace("--", "-");
        }
        let base = base.trim_matches('-');
        let base: String = base.chars().take(48).collect();
        let base = base.trim_matches('-');
        let suffix = &Uuid::new_v4().simple().to_string()[..6];
        if base.is_empty() {
            Self(format!("course-{suffix}"))
        } else {
            Self(format!("{base}-{suffix}"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What an admin sends to create a share (all optional but the title).
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct ShareInput {
    pub title: String,
    pub slug: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub per_learner_limit: Option<i64>,
    pub quota: Option<i64>,
    /// Days of access from each learner's first access, 1 to 36,500;
    /// `null`: for good. Absent: for good on a new share, unchanged on an
    /// update (an older client must not clear a period it never knew).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>)]
    pub access_days: Option<Option<i64>>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub valid_from: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub valid_until: Option<OffsetDateTime>,
}

/// A parsed, valid new share.
#[derive(Debug, Clone)]
pub struct NewShare {
    pub title: String,
    pub slug: ShareSlug,
    pub description: String,
    pub status: ShareStatus,
    pub per_learner_limit: Option<i32>,
    pub quota: Option<i32>,
    pub access_days: Option<i32>,
    pub valid_from: Option<OffsetDateTime>,
    pub valid_until: Option<OffsetDateTime>,
}

/// A field that was sent (`null` included): `Some`; absent: `None` (by
/// `#[serde(default)]`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<i64>>, D::Error> {
    <Option<i64> as serde::Deserialize>::deserialize(d).map(Some)
}

fn parse_limit(raw: Option<i64>) -> Result<Option<i32>, ShareError> {
    match raw {
        None => Ok(None),
        Some(n) if (1..=1_000_000_000).contains(&n) => Ok(Some(
            i32::try_from(n).map_err(|_| ShareError::InvalidLimit)?,
        )),
        Some(_) => Err(ShareError::InvalidLimit),
    }
}

impl NewShare {
    pub fn parse(input: ShareInput) -> Result<Self, ShareError> {
        let title = input.title.trim().to_owned();
        if !(1..=200).contains(&title.chars().count()) || title.chars().any(char::is_control) {
            return Err(ShareError::InvalidTitle);
        }
        let slug = match input.slug.as_deref().map(str::trim) {
            Some(slug) if !slug.is_empty() => ShareSlug::parse(slug)?,
            _ => ShareSlug::from_title(&title),
        };
        let description = input.description.unwrap_or_default();
        if description.chars().count() > 10_000 {
            return Err(ShareError::InvalidDescription);
        }
        let status = match input.status.as_deref() {
            Some(s) => ShareStatus::parse(s)?,
            None => ShareStatus::Draft,
        };
        if let (Some(from), Some(until)) = (input.valid_from, input.valid_until)
            && from >= until
        {
            return Err(ShareError::InvalidWindow);
        }
        Ok(Self {
            title,
            slug,
            description,
            status,
            per_learner_limit: parse_limit(input.per_learner_limit)?,
            quota: parse_limit(input.quota)?,
            access_days: match input.access_days.flatten() {
                None => None,
                Some(days) => Some(
                    i32::try_from(days)
                        .ok()
                        .filter(|d| (1..=36_500).contains(d))
                        .ok_or(ShareError::InvalidAccessDays)?,
                ),
            },
            valid_from: input.valid_from,
            valid_until: input.valid_until,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_from_titles_are_valid() {
        for title in [
            "Rust for Beginners",
            "  ",
            "中文课程",
            "---",
            "A".repeat(300).as_str(),
        ] {
            let slug = ShareSlug::from_title(title);
            assert!(
                ShareSlug::parse(slug.as_str()).is_ok(),
                "{title:?} -> {slug:?}"
            );
        }
    }

    #[test]
    fn share_input_is_parsed_strictly() {
        let ok = |f: &dyn Fn(&mut ShareInput)| {
            let mut input = ShareInput {
                title: "Course".into(),
                ..Default::default()
            };
            f(&mut input);
            NewShare::parse(input)
        };
        assert!(ok(&|_| {}).is_ok());
        assert!(matches!(
            ok(&|i| i.title = "  ".into()),
            Err(ShareError::InvalidTitle)
        ));
        assert!(matches!(
            ok(&|i| i.title = "<b>x</b>\u{0}".into()),
            Err(ShareError::InvalidTitle)
        ));
        assert!(matches!(
            ok(&|i| i.slug = Some("Bad Slug".into())),
            Err(ShareError::InvalidSlug)
        ));
        assert!(matches!(
            ok(&|i| i.status = Some("live".into())),
            Err(ShareError::InvalidStatus)
        ));
        assert!(matches!(
            ok(&|i| i.quota = Some(0)),
            Err(ShareError::InvalidLimit)
        ));
        assert!(matches!(
            ok(&|i| i.per_learner_limit = Some(-3)),
            Err(ShareError::InvalidLimit)
        ));
        for days in [0, -1, 36_501, i64::from(i32::MAX) + 1] {
            assert!(
                matches!(
                    ok(&|i| i.access_days = Some(Some(days))),
                    Err(ShareError::InvalidAccessDays)
                ),
                "{days}"
            );
        }
        for days in [1, 365, 36_500] {
            assert_eq!(
                ok(&|i| i.access_days = Some(Some(days)))
                    .expect("valid")
                    .access_days,
                Some(i32::try_from(days).expect("small"))
            );
        }
        assert!(matches!(
            ok(&|i| {
                i.valid_from = Some(OffsetDateTime::now_utc());
                i.valid_until = Some(OffsetDateTime::now_utc() - time::Duration::hours(1));
            }),
            Err(ShareError::InvalidWindow)
        ));
    }
}
