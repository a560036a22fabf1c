//! Mutants of the SQL and Lua where AdmitOne's decisions live: the
//! settlement's PL/pgSQL (`settle_access` and what it calls) and the Redis
//! scripts. cargo-mutants changes only Rust, so the bind's compare-and-set,
//! the quota-slot debit, the learner's limit, the session check and the
//! reservation scripts would otherwise be under no mutation at all.
//!
//! This module only makes mutants ([`mutants`]); the `mutate` binary
//! (`make mutants`) applies each one to the live definition and runs the
//! engine's tests against it.

mod lexer;
mod operators;

pub use operators::mutants;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// PL/pgSQL or SQL (a function's body).
    Sql,
    /// A Redis Lua script.
    Lua,
}

/// One small change to a source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// Which operator made it ("flip comparison", "drop conjunct" …).
    pub operator: &'static str,
    /// The line (1-based) of the source where the change starts.
    pub line: usize,
    /// What was there and what replaces it, for the report.
    pub original: String,
    pub replacement: String,
    /// The whole source with the change made.
    pub text: String,
}

impl Mutant {
    fn new(
        source: &str,
        start: usize,
        end: usize,
        replacement: &str,
        operator: &'static str,
    ) -> Self {
        let mut text = String::with_capacity(source.len() + replacement.len());
        text.push_str(&source[..start]);
        text.push_str(replacement);
        text.push_str(&source[end..]);
        Self {
            operator,
            line: source[..start].matches('\n').count() + 1,
            original: squeeze(&source[start..end]),
            replacement: replacement.to_owned(),
            text,
        }
    }

    /// One line for the report: `line 12: "a < b" -> ">=" (flip comparison)`.
    pub fn describe(&self) -> String {
        format!(
            "line {}: `{}` -> `{}` ({})",
            self.line, self.original, self.replacement, self.operator
        )
    }
}

/// Whitespace runs as one space, and long spans cut, for a one-line report.
fn squeeze(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        let cut: String = one_line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutant_says_where_and_what() {
        let source = "SELECT 1\nWHERE a < b;";
        let flip = mutants(Language::Sql, source)
            .into_iter()
            .find(|m| m.operator == "flip comparison")
            .expect("a comparison to flip");
        assert_eq!(flip.text, "SELECT 1\nWHERE a >= b;");
        assert_eq!(flip.describe(), "line 2: `<` -> `>=` (flip comparison)");
    }
}
