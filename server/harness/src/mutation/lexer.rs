//! Just enough of a lexer for SQL (PL/pgSQL) and Lua to find the tokens a
//! mutation operator may change, and to never touch a comment or a string:
//! a mutant that edits a comment would "survive" and mean nothing, and one
//! that edits an error message or a Redis command name measures the wrong
//! thing.

use super::Language;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or keyword (a quoted SQL identifier and a `$1`
    /// placeholder count as words too, so that neither is mutated).
    Word,
    /// An integer or decimal literal.
    Number,
    /// An operator or punctuation: `<=`, `~=`, `(`, `;`, `.` …
    Symbol,
    /// A line break (Lua only: it ends a Lua expression).
    Newline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    pub fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start..self.end]
    }

    /// A word equal to `keyword`, ignoring case (SQL keywords).
    pub fn is_word(&self, source: &str, keyword: &str) -> bool {
        self.kind == Kind::Word && self.text(source).eq_ignore_ascii_case(keyword)
    }

    pub fn is_symbol(&self, source: &str, symbol: &str) -> bool {
        self.kind == Kind::Symbol && self.text(source) == symbol
    }
}

/// The tokens of `source` outside comments and string literals.
pub fn tokens(language: Language, source: &str) -> Vec<Token> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let rest = &source[i..];
        if c == b'\n' {
            if language == Language::Lua {
                out.push(Token {
                    kind: Kind::Newline,
                    start: i,
                    end: i + 1,
                });
            }
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if rest.starts_with("--") {
            i = skip_dash_comment(language, source, i);
        } else if language == Language::Sql && rest.starts_with("/*") {
            i = rest.find("*/").map_or(bytes.len(), |end| i + end + 2);
        } else if c == b'\'' || (c == b'"' && language == Language::Lua) {
            i = skip_quoted(language, source, i, c);
        } else if c == b'"' {
            let end = skip_quoted(language, source, i, c);
            out.push(Token {
                kind: Kind::Word,
                start: i,
                end,
            });
            i = end;
        } else if language == Language::Lua && rest.starts_with("[[") {
            i = rest.find("]]").map_or(bytes.len(), |end| i + end + 2);
        } else if language == Language::Sql && c == b'$' {
            i = sql_dollar(source, i, &mut out);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = scan(bytes, i, |b| {
                b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
            });
            out.push(Token {
                kind: Kind::Word,
                start: i,
                end,
            });
            i = end;
        } else if c.is_ascii_digit() {
            let mut end = scan(bytes, i, |b| b.is_ascii_digit());
            if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
                end = scan(bytes, end + 1, |b| b.is_ascii_digit());
            }
            out.push(Token {
                kind: Kind::Number,
                start: i,
                end,
            });
            i = end;
        } else {
            let end = i + symbol_len(language, rest);
            out.push(Token {
                kind: Kind::Symbol,
                start: i,
                end,
            });
            i = end;
        }
    }
    out
}

fn scan(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut end = from;
    while end < bytes.len() && keep(bytes[end]) {
        end += 1;
    }
    end
}

fn skip_dash_comment(language: Language, source: &str, at: usize) -> usize {
    let rest = &source[at..];
    if language == Language::Lua && rest.starts_with("--[[") {
        return rest.find("]]").map_or(source.len(), |end| at + end + 2);
    }
    rest.find('\n').map_or(source.len(), |end| at + end)
}

/// The end of a quoted literal opened at `at`: SQL doubles the quote to
/// escape it, Lua escapes with a backslash.
fn skip_quoted(language: Language, source: &str, at: usize, quote: u8) -> usize {
    let bytes = source.as_bytes();
    let mut i = at + 1;
    while i < bytes.len() {
        if language == Language::Lua && bytes[i] == b'\\' {
            i += 2;
        } else if bytes[i] == quote {
            if language == Language::Sql && bytes.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// `$1` (a placeholder: a word, never a number to mutate) or a
/// dollar-quoted string `$tag$ … $tag$` (skipped).
fn sql_dollar(source: &str, at: usize, out: &mut Vec<Token>) -> usize {
    let bytes = source.as_bytes();
    let digits = scan(bytes, at + 1, |b| b.is_ascii_digit());
    if digits > at + 1 {
        out.push(Token {
            kind: Kind::Word,
            start: at,
            end: digits,
        });
        return digits;
    }
    let tag_end = scan(bytes, at + 1, |b| b.is_ascii_alphanumeric() || b == b'_');
    if bytes.get(tag_end) != Some(&b'$') {
        out.push(Token {
            kind: Kind::Symbol,
            start: at,
            end: at + 1,
        });
        return at + 1;
    }
    let tag = &source[at..=tag_end];
    let body = tag_end + 1;
    source[body..]
        .find(tag)
        .map_or(source.len(), |end| body + end + tag.len())
}

fn symbol_len(language: Language, rest: &str) -> usize {
    let two: &[&str] = match language {
        Language::Sql => &["<=", ">=", "<>", "!=", ":=", "=>", "::", "||"],
        Language::Lua => &["==", "~=", "<=", ">=", "..", "//", "::"],
    };
    if language == Language::Lua && rest.starts_with("...") {
        return 3;
    }
    if two.iter().any(|s| rest.starts_with(s)) {
        return 2;
    }
    rest.chars().next().map_or(1, char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(language: Language, source: &str) -> Vec<String> {
        tokens(language, source)
            .iter()
            .map(|t| t.text(source).to_owned())
            .collect()
    }

    #[test]
    fn sql_comments_strings_and_dollar_quotes_are_not_tokens() {
        let source =
            "IF a <= 1 -- b < 2\n THEN RAISE 'x < ''y''' /* c > 3 */; $q$ d = 4 $q$ $1 >= 2.5";
        assert_eq!(
            texts(Language::Sql, source),
            [
                "IF", "a", "<=", "1", "THEN", "RAISE", ";", "$1", ">=", "2.5"
            ]
        );
    }

    #[test]
    fn lua_comments_strings_and_newlines() {
        let source =
            "-- a < b\nif x ~= 'a == b' and y == \"c\\\"<\" then --[[ z > 1 ]] return 0 end";
        assert_eq!(
            texts(Language::Lua, source),
            [
                "\n", "if", "x", "~=", "and", "y", "==", "then", "return", "0", "end"
            ]
        );
    }

    #[test]
    fn sql_multi_character_operators_are_one_token() {
        assert_eq!(
            texts(Language::Sql, "a := b::int <> c || d => e != f"),
            [
                "a", ":=", "b", "::", "int", "<>", "c", "||", "d", "=>", "e", "!=", "f"
            ]
        );
    }
}
