//! A code as its admin sees it: unused, bound to one account, revoked, or
//! expired before anyone bound it.

use crate::text_enum::text_enum;

text_enum! {
    /// Where an access code is in its life.
    pub enum CodeState (InvalidCodeState: "a code state is unused, bound, revoked or expired") {
        /// Issued, nobody has bound it yet.
        Unused = "unused",
        /// Bound to one account for good (an audited unbind is the only way back).
        Bound = "bound",
        /// Withdrawn: refused to everyone, the learner it was bound to included.
        Revoked = "revoked",
        /// Unused past its expiry date: refused to everyone (a code bound
        /// before its date is `Bound` and keeps working).
        Expired = "expired",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_its_variant_and_nothing_else_does() {
        for &state in CodeState::ALL {
            assert_eq!(CodeState::parse(state.as_str()), Ok(state));
            assert_eq!(
                serde_json::to_value(state).expect("serialises"),
                serde_json::Value::String(state.as_str().to_owned())
            );
        }
        assert_eq!(CodeState::ALL.len(), 4);
        assert_eq!(CodeState::parse("used"), Err(InvalidCodeState));
    }
}
