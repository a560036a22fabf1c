//! A code as its admin sees it: unused, bound to one account, or revoked.

use crate::text_enum::text_enum;

text_enum! {
    /// Where an access code is in its life.
    pub enum CodeState (InvalidCodeState: "a code state is unused, bound or revoked") {
        /// Issued, nobody has bound it yet.
        Unused = "unused",
        /// Bound to one account for good (an audited unbind is the only way back).
        Bound = "bound",
        /// Withdrawn: refused to everyone, the learner it was bound to included.
        Revoked = "revoked",
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
        assert_eq!(CodeState::ALL.len(), 3);
        assert_eq!(CodeState::parse("used"), Err(InvalidCodeState));
    }
}
