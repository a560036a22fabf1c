//! A share (a course) as learners meet it: whether its provider has it open
//! ([`ShareStatus`]), what each piece of it is ([`ResourceKind`]), and why
//! nobody new may get in right now ([`Unavailability`]).

use serde::{Deserialize, Serialize};

use crate::text_enum::text_enum;

text_enum! {
    /// Where a share is in its life, as its admin set it.
    pub enum ShareStatus (InvalidShareStatus: "a status is draft, active, paused or archived") {
        /// Being prepared: hidden from learners.
        Draft = "draft",
        /// Open to learners (within its window and limits).
        Active = "active",
        /// Stopped for a while: learners see it, nobody can open it.
        Paused = "paused",
        /// Retired: gone for learners.
        Archived = "archived",
    }
}

impl ShareStatus {
    /// Whether learners may see the share's page at all (a paused course
    /// is visible and says so; a draft or an archived one does not exist
    /// for them).
    pub fn visible_to_learners(self) -> bool {
        match self {
            Self::Active | Self::Paused => true,
            Self::Draft | Self::Archived => false,
        }
    }
}

text_enum! {
    /// What a resource is, from the content type it was uploaded with: how
    /// its page shows it.
    pub enum ResourceKind (InvalidResourceKind: "a resource kind is file, video or page") {
        /// Anything to download.
        File = "file",
        /// Played in the page, with Range requests.
        Video = "video",
        /// HTML or Markdown, shown in a sandboxed frame.
        Page = "page",
    }
}

impl ResourceKind {
    /// The kind a content type makes.
    pub fn of_content_type(content_type: &str) -> Self {
        if content_type.starts_with("video/") {
            Self::Video
        } else if content_type.starts_with("text/html") || content_type.starts_with("text/markdown")
        {
            Self::Page
        } else {
            Self::File
        }
    }
}

/// Why nobody new can get into a course right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "utoipa", schema(rename_all = "snake_case"))]
pub enum Unavailability {
    /// Its provider paused it.
    Paused,
    /// A draft, archived, or gone: not a course learners can use.
    NotAvailable,
    /// Its validity window has not started.
    NotOpenYet,
    /// Its validity window has ended.
    Closed,
    /// Its total access limit is used up.
    LimitReached,
}

/// English, for logs and the JSON API (pages translate the variant).
impl std::fmt::Display for Unavailability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Paused => "this course is paused by its provider",
            Self::NotAvailable => "this course is not available",
            Self::NotOpenYet => "this course is not open yet",
            Self::Closed => "this course has closed",
            Self::LimitReached => "this course has reached its access limit",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_its_variant_and_nothing_else_does() {
        for &status in ShareStatus::ALL {
            assert_eq!(ShareStatus::parse(status.as_str()), Ok(status));
            assert_eq!(ShareStatus::parse(&format!(" {status} ")), Ok(status));
        }
        for &kind in ResourceKind::ALL {
            assert_eq!(ResourceKind::parse(kind.as_str()), Ok(kind));
        }
        assert_eq!(ShareStatus::parse("Active"), Err(InvalidShareStatus));
        assert_eq!(ShareStatus::parse(""), Err(InvalidShareStatus));
        assert_eq!(ResourceKind::parse("audio"), Err(InvalidResourceKind));
        assert_eq!(ShareStatus::ALL.len(), 4);
        assert_eq!(ResourceKind::ALL.len(), 3);
    }

    #[test]
    fn the_wire_spells_the_same_word_as_the_database() {
        for &status in ShareStatus::ALL {
            let json = serde_json_word(&status);
            assert_eq!(json, status.as_str());
        }
        for &kind in ResourceKind::ALL {
            assert_eq!(serde_json_word(&kind), kind.as_str());
        }
    }

    #[test]
    fn only_active_and_paused_courses_are_visible() {
        let visible: Vec<_> = ShareStatus::ALL
            .iter()
            .filter(|s| s.visible_to_learners())
            .collect();
        assert_eq!(visible, [&ShareStatus::Active, &ShareStatus::Paused]);
    }

    #[test]
    fn a_content_type_makes_its_kind() {
        assert_eq!(
            ResourceKind::of_content_type("video/mp4"),
            ResourceKind::Video
        );
        assert_eq!(
            ResourceKind::of_content_type("text/html; charset=utf-8"),
            ResourceKind::Page
        );
        assert_eq!(
            ResourceKind::of_content_type("text/markdown"),
            ResourceKind::Page
        );
        assert_eq!(
            ResourceKind::of_content_type("text/plain"),
            ResourceKind::File
        );
        assert_eq!(
            ResourceKind::of_content_type("application/pdf"),
            ResourceKind::File
        );
    }

    /// The JSON string serde writes for a value.
    fn serde_json_word<T: Serialize>(value: &T) -> String {
        match serde_json::to_value(value).expect("a unit variant serialises") {
            serde_json::Value::String(word) => word,
            other => panic!("not a word: {other}"),
        }
    }
}
