//! The mutation operators, each one small change at one token, applied
//! one at a time: flip a comparison, move a bound (`>=` ↔ `>`, a literal
//! ±1), swap `AND`/`OR`, drop one conjunct, swap `IS NULL`/`IS NOT NULL`,
//! drop a `NOT`, and delete a `RETURN`/`RAISE` (SQL) or `return` (Lua).

use super::{
    Language, Mutant,
    lexer::{Kind, Token, tokens},
};

/// Every mutant of `source`, in source order.
pub fn mutants(language: Language, source: &str) -> Vec<Mutant> {
    let tokens = tokens(language, source);
    let mut out = Vec::new();
    for (at, token) in tokens.iter().enumerate() {
        let mut add = |start: usize, end: usize, replacement: &str, operator: &'static str| {
            out.push(Mutant::new(source, start, end, replacement, operator));
        };
        match token.kind {
            Kind::Symbol => {
                for (replacement, operator) in comparison(language, token.text(source)) {
                    add(token.start, token.end, replacement, operator);
                }
            }
            Kind::Number => {
                if indexes_keys_or_argv(source, &tokens, at) {
                    continue;
                }
                if let Ok(n) = token.text(source).parse::<i64>() {
                    add(token.start, token.end, &(n + 1).to_string(), "bound +1");
                    if n > 0 {
                        add(token.start, token.end, &(n - 1).to_string(), "bound -1");
                    }
                }
            }
            Kind::Word => word(language, source, &tokens, at, &mut add),
            Kind::Newline => {}
        }
    }
    out
}

fn comparison(language: Language, symbol: &str) -> Vec<(&'static str, &'static str)> {
    let (equal, not_equal) = match language {
        Language::Sql => ("=", "<>"),
        Language::Lua => ("==", "~="),
    };
    match symbol {
        "<" => vec![(">=", "flip comparison"), ("<=", "move bound")],
        "<=" => vec![(">", "flip comparison"), ("<", "move bound")],
        ">" => vec![("<=", "flip comparison"), (">=", "move bound")],
        ">=" => vec![("<", "flip comparison"), (">", "move bound")],
        s if s == equal => vec![(not_equal, "flip comparison")],
        s if s == not_equal || (language == Language::Sql && s == "!=") => {
            vec![(equal, "flip comparison")]
        }
        _ => Vec::new(),
    }
}

/// `KEYS[1]`, `ARGV[2]`: which argument a script reads, not a bound.
fn indexes_keys_or_argv(source: &str, tokens: &[Token], at: usize) -> bool {
    at >= 2
        && tokens[at - 1].is_symbol(source, "[")
        && (tokens[at - 2].is_word(source, "KEYS") || tokens[at - 2].is_word(source, "ARGV"))
}

fn word(
    language: Language,
    source: &str,
    tokens: &[Token],
    at: usize,
    add: &mut impl FnMut(usize, usize, &str, &'static str),
) {
    let token = tokens[at];
    let (and, or, truth) = match language {
        Language::Sql => ("AND", "OR", "TRUE"),
        Language::Lua => ("and", "or", "true"),
    };
    let is = |keyword: &str| match language {
        Language::Sql => token.is_word(source, keyword),
        Language::Lua => token.kind == Kind::Word && token.text(source) == keyword,
    };
    let next_is = |offset: usize, keyword: &str| {
        tokens
            .get(at + offset)
            .is_some_and(|t| t.is_word(source, keyword))
    };
    if is(and) {
        add(token.start, token.end, or, "AND -> OR");
        if let Some((start, end)) = operand(language, source, tokens, at + 1) {
            add(start, end, truth, "drop conjunct");
        }
    } else if is(or) {
        add(token.start, token.end, and, "OR -> AND");
    } else if is("not") && !(at > 0 && tokens[at - 1].is_word(source, "IS")) {
        let next = tokens.get(at + 1).map_or(token.end, |t| t.start);
        add(token.start, next, "", "drop NOT");
    } else if language == Language::Sql && is("IS") {
        if next_is(1, "NOT") && (next_is(2, "NULL") || next_is(2, "DISTINCT")) {
            add(token.end, tokens[at + 1].end, "", "IS NOT -> IS");
        } else if next_is(1, "NULL") || next_is(1, "DISTINCT") {
            add(token.end, token.end, " NOT", "IS -> IS NOT");
        }
    } else if language == Language::Sql
        && (is("WHERE") || is("ON") || is("IF") || is("ELSIF") || is("WHEN"))
    {
        // The first conjunct; a WHERE or a JOIN … ON with one condition
        // loses it, an IF only when another conjunct stays (else it is an
        // unconditional branch, which deleting a RETURN or RAISE tries).
        if let Some((start, end)) = operand(language, source, tokens, at + 1) {
            let more = tokens
                .iter()
                .find(|t| t.start >= end)
                .is_some_and(|t| t.is_word(source, and));
            if is("WHERE") || is("ON") || more {
                add(start, end, truth, "drop conjunct");
            }
        }
    } else if language == Language::Sql && (is("greatest") || is("least")) {
        let other = if is("greatest") { "least" } else { "greatest" };
        add(token.start, token.end, other, "greatest <-> least");
    } else if language == Language::Sql && (is("RETURN") || is("RAISE")) {
        if let Some(end) = tokens[at..]
            .iter()
            .find(|t| t.is_symbol(source, ";"))
            .map(|t| t.start)
        {
            add(token.start, end, "NULL", "delete statement");
        }
    } else if language == Language::Lua && is("return") {
        let end = tokens[at + 1..]
            .iter()
            .find(|t| t.kind == Kind::Newline || t.is_word(source, "end"))
            .map_or(source.len(), |t| t.start);
        add(token.start, end, "", "delete return");
    }
}

/// The span of the operand (a conjunct) starting at token `from`: up to
/// the next `AND`/`OR` or clause keyword at the same parenthesis depth.
fn operand(
    language: Language,
    source: &str,
    tokens: &[Token],
    from: usize,
) -> Option<(usize, usize)> {
    let stop_words: &[&str] = match language {
        Language::Sql => &[
            "AND",
            "OR",
            "THEN",
            "LOOP",
            "RETURNING",
            "ORDER",
            "GROUP",
            "LIMIT",
            "FOR",
            "INTO",
            "WHEN",
            "ELSE",
            "END",
            "UNION",
            "HAVING",
            "OFFSET",
            "WHERE",
            "FROM",
            "JOIN",
            "LEFT",
            "ON",
            "SET",
            "USING",
        ],
        Language::Lua => &["and", "or", "then", "do", "end", "else", "elseif"],
    };
    let start = tokens.get(from)?;
    let mut depth = 0_i32;
    let mut last = None;
    for token in &tokens[from..] {
        match token.kind {
            Kind::Newline if depth == 0 => break,
            Kind::Word if depth == 0 && stop_words.iter().any(|w| token.is_word(source, w)) => {
                break;
            }
            Kind::Symbol => {
                let text = token.text(source);
                if text == "(" || text == "[" {
                    depth += 1;
                } else if text == ")" || text == "]" {
                    depth -= 1;
                    if depth < 0 {
                        break;
                    }
                } else if depth == 0 && (text == ";" || text == ",") {
                    break;
                }
            }
            _ => {}
        }
        last = Some(token.end);
    }
    last.map(|end| (start.start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(language: Language, source: &str) -> Vec<String> {
        mutants(language, source)
            .into_iter()
            .map(|m| format!("{}: {}", m.operator, m.text.trim()))
            .collect()
    }

    #[test]
    fn a_where_clause_gets_every_operator_and_nothing_else() {
        let source =
            "UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c < 5) LIMIT 1;";
        let got = changes(Language::Sql, source);
        let expected = [
            "flip comparison: UPDATE t SET used <> used + 1 WHERE a.x = p_x AND (b IS NULL OR c < 5) LIMIT 1;",
            "bound +1: UPDATE t SET used = used + 2 WHERE a.x = p_x AND (b IS NULL OR c < 5) LIMIT 1;",
            "bound -1: UPDATE t SET used = used + 0 WHERE a.x = p_x AND (b IS NULL OR c < 5) LIMIT 1;",
            "drop conjunct: UPDATE t SET used = used + 1 WHERE TRUE AND (b IS NULL OR c < 5) LIMIT 1;",
            "flip comparison: UPDATE t SET used = used + 1 WHERE a.x <> p_x AND (b IS NULL OR c < 5) LIMIT 1;",
            "AND -> OR: UPDATE t SET used = used + 1 WHERE a.x = p_x OR (b IS NULL OR c < 5) LIMIT 1;",
            "drop conjunct: UPDATE t SET used = used + 1 WHERE a.x = p_x AND TRUE LIMIT 1;",
            "IS -> IS NOT: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NOT NULL OR c < 5) LIMIT 1;",
            "OR -> AND: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL AND c < 5) LIMIT 1;",
            "flip comparison: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c >= 5) LIMIT 1;",
            "move bound: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c <= 5) LIMIT 1;",
            "bound +1: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c < 6) LIMIT 1;",
            "bound -1: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c < 4) LIMIT 1;",
            "bound +1: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c < 5) LIMIT 2;",
            "bound -1: UPDATE t SET used = used + 1 WHERE a.x = p_x AND (b IS NULL OR c < 5) LIMIT 0;",
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn plpgsql_statements_branches_and_negations() {
        let source = "IF NOT FOUND THEN RETURN QUERY SELECT 'x; y'; RETURN; END IF; \
                      IF a IS NOT NULL AND b >= c THEN RAISE EXCEPTION 'z' USING ERRCODE = 'AOREF'; END IF;";
        let got = changes(Language::Sql, source);
        assert!(got.contains(&"drop NOT: IF FOUND THEN RETURN QUERY SELECT 'x; y'; RETURN; END IF; IF a IS NOT NULL AND b >= c THEN RAISE EXCEPTION 'z' USING ERRCODE = 'AOREF'; END IF;".to_owned()), "{got:#?}");
        assert!(got.contains(&"delete statement: IF NOT FOUND THEN NULL; RETURN; END IF; IF a IS NOT NULL AND b >= c THEN RAISE EXCEPTION 'z' USING ERRCODE = 'AOREF'; END IF;".to_owned()), "{got:#?}");
        assert!(got.contains(&"delete statement: IF NOT FOUND THEN RETURN QUERY SELECT 'x; y'; NULL; END IF; IF a IS NOT NULL AND b >= c THEN RAISE EXCEPTION 'z' USING ERRCODE = 'AOREF'; END IF;".to_owned()), "{got:#?}");
        assert!(got.contains(&"IS NOT -> IS: IF NOT FOUND THEN RETURN QUERY SELECT 'x; y'; RETURN; END IF; IF a IS NULL AND b >= c THEN RAISE EXCEPTION 'z' USING ERRCODE = 'AOREF'; END IF;".to_owned()), "{got:#?}");
        assert!(got.contains(&"drop conjunct: IF NOT FOUND THEN RETURN QUERY SELECT 'x; y'; RETURN; END IF; IF TRUE AND b >= c THEN RAISE EXCEPTION 'z' USING ERRCODE = 'AOREF'; END IF;".to_owned()), "{got:#?}");
        assert!(got.contains(&"delete statement: IF NOT FOUND THEN RETURN QUERY SELECT 'x; y'; RETURN; END IF; IF a IS NOT NULL AND b >= c THEN NULL; END IF;".to_owned()), "{got:#?}");
        // The IS NOT of `IS NOT NULL` is not a separate NOT to drop, and
        // an IF with one condition is not emptied.
        assert_eq!(
            got.iter().filter(|g| g.starts_with("drop NOT")).count(),
            1,
            "{got:#?}"
        );
        assert!(!got.iter().any(|g| g.contains("IF TRUE THEN")), "{got:#?}");
        // Nothing inside a string literal changes (but a deleted statement
        // takes its literal with it).
        assert!(
            got.iter()
                .filter(|g| !g.starts_with("delete statement"))
                .all(|g| g.contains("'x; y'") && g.contains("'z'")),
            "{got:#?}"
        );
    }

    #[test]
    fn lua_scripts_keep_their_key_and_argument_indexes() {
        let source = "local a = redis.call('GET', KEYS[1])\nif a and a ~= ARGV[1] then\n  return 2\nend\nreturn 0\n";
        let got = changes(Language::Lua, source);
        let expected = [
            "AND -> OR: local a = redis.call('GET', KEYS[1])\nif a or a ~= ARGV[1] then\n  return 2\nend\nreturn 0",
            "drop conjunct: local a = redis.call('GET', KEYS[1])\nif a and true then\n  return 2\nend\nreturn 0",
            "flip comparison: local a = redis.call('GET', KEYS[1])\nif a and a == ARGV[1] then\n  return 2\nend\nreturn 0",
            "delete return: local a = redis.call('GET', KEYS[1])\nif a and a ~= ARGV[1] then\n  \nend\nreturn 0",
            "bound +1: local a = redis.call('GET', KEYS[1])\nif a and a ~= ARGV[1] then\n  return 3\nend\nreturn 0",
            "bound -1: local a = redis.call('GET', KEYS[1])\nif a and a ~= ARGV[1] then\n  return 1\nend\nreturn 0",
            "delete return: local a = redis.call('GET', KEYS[1])\nif a and a ~= ARGV[1] then\n  return 2\nend",
            "bound +1: local a = redis.call('GET', KEYS[1])\nif a and a ~= ARGV[1] then\n  return 2\nend\nreturn 1",
        ];
        assert_eq!(got, expected);
    }
}
