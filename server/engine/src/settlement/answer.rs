//! What `settle_access` answers, as a type: the word in its `outcome`
//! column (or the message of a refusal it raised after a write) read as
//! an [`Answer`], and each refusal as the [`SettlementError`] it names.
//! The words are spelled once, in the list below; the tests hold the list
//! and `settle_access.sql` to each other, both ways.

use super::SettlementError;

/// Spells each [`Answer`] once: the enum, its word and the reading of a
/// word all come from one list.
macro_rules! answers {
    ($( $(#[$doc:meta])* $variant:ident = $word:literal, )+) => {
        /// What `settle_access` answers: the word in its `outcome` column
        /// (or the message of a refusal it raised), read as a type. A word
        /// not here is a bug (the row does not decode), never a refusal.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum Answer {
            $( $(#[$doc])* $variant, )+
        }

        impl Answer {
            /// Every outcome, in the order of the list.
            #[cfg(test)]
            const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word `settle_access` answers.
            #[cfg(test)]
            fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $word, )+
                }
            }

            /// The outcome a word names.
            pub(super) fn parse(word: &str) -> Option<Self> {
                match word {
                    $( $word => Some(Self::$variant), )+
                    _ => None,
                }
            }
        }
    };
}

answers! {
    /// Access granted (and maybe bound, and counted).
    Granted = "granted",
    /// The access period is over; `expires_at` says when it ended.
    AccessEnded = "access_ended",
    RequestIdReused = "request_id_reused",
    CodeRevoked = "code_revoked",
    /// Raised by the trigger `auth_codes_refuse_expired`, from the bind.
    CodeExpired = "code_expired",
    /// Raised by the trigger `auth_codes_refuse_other_addressee`, from the
    /// bind: the code is addressed to another account's address.
    CodeAddressedElsewhere = "code_addressed_elsewhere",
    CodeRequired = "code_required",
    CodeBound = "code_bound",
    WrongShare = "wrong_share",
    NotAvailable = "not_available",
    Paused = "paused",
    NotOpenYet = "not_open_yet",
    Closed = "closed",
    ResourceNotFound = "resource_not_found",
    AccountDisabled = "account_disabled",
    SessionEnded = "session_ended",
    LearnerSuspended = "learner_suspended",
    OpenFromCoursePage = "open_from_course_page",
    EmailNotVerified = "email_not_verified",
    LearnerLimitReached = "learner_limit_reached",
    QuotaExhausted = "quota_exhausted",
}

impl sqlx::Type<sqlx::Postgres> for Answer {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <&str as sqlx::Type<sqlx::Postgres>>::type_info()
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Postgres> for Answer {
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let word = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
        Self::parse(word)
            .ok_or_else(|| format!("settle_access answered an unknown outcome {word:?}").into())
    }
}

/// A refused [`Answer`] as the [`SettlementError`] it names (`at`: the
/// row's `expires_at`, which says when an access period ended).
pub(super) fn refusal(outcome: Answer, at: Option<time::OffsetDateTime>) -> SettlementError {
    use crate::shares::Unavailability as U;
    match outcome {
        Answer::Granted => SettlementError::Unexpected(anyhow::anyhow!(
            "settle_access raised a grant as a refusal"
        )),
        Answer::AccessEnded => match at {
            Some(ended_at) => SettlementError::AccessEnded { ended_at },
            None => SettlementError::Unexpected(anyhow::anyhow!(
                "settle_access answered access_ended without its date"
            )),
        },
        Answer::RequestIdReused => SettlementError::RequestIdReused,
        Answer::CodeRevoked => SettlementError::CodeRevoked,
        Answer::CodeExpired => SettlementError::CodeExpired,
        Answer::CodeAddressedElsewhere => SettlementError::CodeAddressedElsewhere,
        Answer::CodeRequired => SettlementError::CodeRequired,
        Answer::CodeBound => SettlementError::CodeBound,
        Answer::WrongShare => SettlementError::WrongShare,
        Answer::NotAvailable => SettlementError::ShareUnavailable(U::NotAvailable),
        Answer::Paused => SettlementError::ShareUnavailable(U::Paused),
        Answer::NotOpenYet => SettlementError::ShareUnavailable(U::NotOpenYet),
        Answer::Closed => SettlementError::ShareUnavailable(U::Closed),
        Answer::ResourceNotFound => SettlementError::ResourceNotFound,
        Answer::AccountDisabled => SettlementError::AccountDisabled,
        Answer::SessionEnded => SettlementError::SessionEnded,
        Answer::LearnerSuspended => SettlementError::LearnerSuspended,
        Answer::OpenFromCoursePage => SettlementError::OpenFromCoursePage,
        Answer::EmailNotVerified => SettlementError::EmailNotVerified,
        Answer::LearnerLimitReached => SettlementError::LearnerLimitReached,
        Answer::QuotaExhausted => SettlementError::QuotaExhausted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a PL/pgSQL text answers (`RETURN QUERY SELECT '…'`) or
    /// raises (`RAISE EXCEPTION '…'`), but a fault a test injects.
    fn words_of(sql: &str) -> Vec<&str> {
        let mut words: Vec<&str> = sql
            .split("RETURN QUERY SELECT '")
            .skip(1)
            .chain(sql.split("RAISE EXCEPTION '").skip(1))
            .filter_map(|rest| rest.split('\'').next())
            .filter(|word| !word.starts_with("injected fault"))
            .collect();
        words.sort_unstable();
        words.dedup();
        words
    }

    /// The function's own body: the file's other statements raise nothing.
    fn body_of_settle_access() -> &'static str {
        let file = include_str!("settle_access.sql");
        let start = file
            .find("CREATE FUNCTION settle_access(")
            .expect("settle_access");
        let body = &file[start..];
        &body[..body.find("\n$$;").expect("the end of settle_access")]
    }

    /// The triggers on a binding whose refusals reach the caller through
    /// `settle_access`'s bind.
    const BINDING_TRIGGERS: [&str; 2] = [
        "auth_codes_refuse_expired",
        "auth_codes_refuse_other_addressee",
    ];

    /// The body of a binding's trigger `name` as the newest migration
    /// that defines it has it (the definition in force).
    fn trigger_in_force(name: &str) -> String {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
        let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .expect("the migrations")
            .map(|entry| entry.expect("a migration").path())
            .filter(|path| path.extension().is_some_and(|e| e == "sql"))
            .collect();
        names.sort();
        let definition = format!("FUNCTION {name}()");
        let text = names
            .iter()
            .rev()
            .map(|path| std::fs::read_to_string(path).expect("a migration"))
            .find(|text| text.contains(&definition))
            .expect("a migration defines the trigger");
        let body = &text[text.find(&definition).expect("the definition")..];
        body[..body.find("\n$$;").expect("the end of the trigger")].to_owned()
    }

    /// What the binding's triggers raise, together.
    fn triggers_in_force() -> String {
        BINDING_TRIGGERS.map(trigger_in_force).join("\n")
    }

    /// Every word the function and the binding's trigger answer is an
    /// [`Answer`], and every `Answer` is one of them: a word added to
    /// the SQL alone, or a variant left behind, fails here.
    #[test]
    fn the_answers_are_exactly_the_words_settle_access_answers() {
        let trigger = triggers_in_force();
        let mut answered = words_of(body_of_settle_access());
        answered.extend(words_of(&trigger));
        answered.sort_unstable();
        answered.dedup();
        let mut known: Vec<&str> = Answer::ALL.iter().map(|o| o.as_str()).collect();
        known.sort_unstable();
        assert_eq!(answered, known);
        for word in answered {
            assert_eq!(Answer::parse(word).map(Answer::as_str), Some(word));
        }
    }

    /// Every refusal maps to its error; only a bug is `Unexpected`.
    #[test]
    fn every_refusal_is_a_known_error() {
        for &outcome in Answer::ALL {
            let mapped = refusal(outcome, Some(time::OffsetDateTime::now_utc()));
            assert_eq!(
                matches!(mapped, SettlementError::Unexpected(_)),
                outcome == Answer::Granted,
                "{outcome:?} maps to {mapped:?}"
            );
        }
        assert_eq!(Answer::parse("nonsense"), None);
        // An ended access says when it ended, or it is a bug.
        assert!(matches!(
            refusal(Answer::AccessEnded, None),
            SettlementError::Unexpected(_)
        ));
    }

    /// The refusals the triggers on a binding raise (SQLSTATE AOREF) map
    /// too: they reach the caller through `settle_access`'s bind.
    #[test]
    fn every_refusal_a_binding_trigger_raises_is_known() {
        assert_eq!(
            words_of(&trigger_in_force("auth_codes_refuse_expired")),
            ["code_expired"]
        );
        assert_eq!(
            words_of(&trigger_in_force("auth_codes_refuse_other_addressee")),
            ["code_addressed_elsewhere", "email_not_verified"]
        );
        for (word, error) in [
            ("code_expired", "CodeExpired"),
            ("code_addressed_elsewhere", "CodeAddressedElsewhere"),
            ("email_not_verified", "EmailNotVerified"),
        ] {
            let mapped = Answer::parse(word).map(|o| refusal(o, None));
            assert!(
                format!("{mapped:?}").starts_with(&format!("Some({error}")),
                "{word} maps to {mapped:?}"
            );
        }
    }
}
