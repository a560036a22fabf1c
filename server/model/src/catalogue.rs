//! The translation catalogues, compiled (see `build.rs`): every text a
//! person reads, pages and mails, is a message of `locales/<tag>/messages.ftl`
//! ([`Msg`]), written in Fluent; the domain errors' messages in the
//! languages other than English are in `errors.ftl` ([`ErrorMsg`]; an
//! error's English is its `Display`), except the few the browser shows by
//! itself, in `browser-errors.ftl` ([`BrowserErrorMsg`]).
//!
//! Code names a message by its id and never holds its words, so a language
//! is added by adding a catalogue, and the build refuses a catalogue that
//! lacks a message or gives one different variables. [`Lang::text`] reads a
//! plain message, [`Lang::format`] fills in variables and chooses among a
//! message's plural forms by the language's plural rules
//! ([`plural_category`]: English has `one` and `other`, Chinese only
//! `other`), or among exact values (`[0]`) first, as Fluent does.

use std::fmt::{Display, Write as _};

use crate::Lang;

include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));

/// One part of a compiled message.
#[derive(Debug)]
pub enum Part {
    Text(&'static str),
    /// `{ $name }`.
    Var(&'static str),
    /// `{ $var -> [key] … *[other] … }`.
    Select {
        var: &'static str,
        variants: &'static [(&'static str, &'static [Part])],
        default: usize,
    },
}

/// A message's variables: (name, value).
pub type Args<'a> = &'a [(&'a str, &'a (dyn Display + Sync))];

/// The CLDR plural category of the integer `n` in `lang`.
pub fn plural_category(lang: Lang, n: i64) -> &'static str {
    match lang {
        Lang::En if n == 1 => "one",
        Lang::En | Lang::ZhCn | Lang::ZhTw => "other",
    }
}

impl Msg {
    fn parts(self, lang: Lang) -> &'static [Part] {
        let table: &[&[Part]] = match lang {
            Lang::En => &MSG_EN,
            Lang::ZhCn => &MSG_ZH_CN,
            Lang::ZhTw => &MSG_ZH_TW,
        };
        table[self as usize]
    }
}

impl ErrorMsg {
    /// `None` in English, whose error messages are the errors' `Display`.
    fn parts(self, lang: Lang) -> Option<&'static [Part]> {
        let table: &[&[Part]] = match lang {
            Lang::En => return None,
            Lang::ZhCn => &ERRORMSG_ZH_CN,
            Lang::ZhTw => &ERRORMSG_ZH_TW,
        };
        Some(table[self as usize])
    }
}

impl BrowserErrorMsg {
    /// `None` in English, whose messages are the errors' `Display` (or the
    /// API's own message).
    fn parts(self, lang: Lang) -> Option<&'static [Part]> {
        let table: &[&[Part]] = match lang {
            Lang::En => return None,
            Lang::ZhCn => &BROWSERERRORMSG_ZH_CN,
            Lang::ZhTw => &BROWSERERRORMSG_ZH_TW,
        };
        Some(table[self as usize])
    }
}

impl Lang {
    /// A message without variables. (A message with variables comes back
    /// as its id, and a debug build stops: use [`Lang::format`] for those.)
    pub fn text(self, msg: Msg) -> &'static str {
        match msg.parts(self) {
            [Part::Text(text)] => text,
            [] => "",
            _ => {
                debug_assert!(false, "{} has variables: use format", msg.id());
                msg.id()
            }
        }
    }

    /// A message with its variables filled in.
    pub fn format(self, msg: Msg, args: Args<'_>) -> String {
        let mut out = String::new();
        write_parts(self, msg.parts(self), args, &mut out);
        out
    }

    /// A domain error's message in this language, `None` in English (use
    /// the error's `Display`).
    pub fn error(self, msg: ErrorMsg, args: Args<'_>) -> Option<String> {
        let parts = msg.parts(self)?;
        let mut out = String::new();
        write_parts(self, parts, args, &mut out);
        Some(out)
    }

    /// An error the browser shows by itself, in this language; `None` in
    /// English. (Its own catalogue, so the wasm does not link every domain
    /// error's: see `browser-errors.ftl`.)
    pub fn browser_error(self, msg: BrowserErrorMsg, args: Args<'_>) -> Option<String> {
        let parts = msg.parts(self)?;
        let mut out = String::new();
        write_parts(self, parts, args, &mut out);
        Some(out)
    }
}

fn write_parts(lang: Lang, parts: &[Part], args: Args<'_>, out: &mut String) {
    for part in parts {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Var(name) => match args.iter().find(|(n, _)| n == name) {
                Some((_, value)) => {
                    let _ = write!(out, "{value}");
                }
                None => {
                    debug_assert!(false, "no value for ${name}");
                    let _ = write!(out, "{{${name}}}");
                }
            },
            Part::Select {
                var,
                variants,
                default,
            } => {
                let value = args
                    .iter()
                    .find(|(n, _)| n == var)
                    .map(|(_, v)| v.to_string());
                debug_assert!(value.is_some(), "no value for ${var}");
                let chosen = value
                    .as_deref()
                    .and_then(|value| select(lang, variants, value))
                    .unwrap_or(*default);
                write_parts(lang, variants[chosen].1, args, out);
            }
        }
    }
}

/// The variant for `value`: an exact match first (`[0]`, `[owner]`), then
/// the plural category of a number.
fn select(lang: Lang, variants: &[(&str, &[Part])], value: &str) -> Option<usize> {
    if let Some(i) = variants.iter().position(|(key, _)| *key == value) {
        return Some(i);
    }
    let n: i64 = value.replace(',', "").parse().ok()?;
    let category = plural_category(lang, n);
    variants.iter().position(|(key, _)| *key == category)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message of every language, filled with a value for each of
    /// its variables, leaves no variable unfilled and no text empty; the
    /// plain ones read with `text`.
    #[test]
    fn every_message_reads_in_every_language() {
        let seven = 7;
        for lang in Lang::ALL {
            for msg in Msg::ALL {
                let args: Vec<(&str, &(dyn Display + Sync))> =
                    msg.variables().iter().map(|v| (*v, &seven as _)).collect();
                let text = lang.format(msg, &args);
                assert!(!text.trim().is_empty(), "{lang} {} is empty", msg.id());
                assert!(!text.contains("{$"), "{lang} {}: {text}", msg.id());
                if msg.variables().is_empty() {
                    assert_eq!(lang.text(msg), text, "{lang} {}", msg.id());
                }
            }
            for msg in ErrorMsg::ALL {
                let args: Vec<(&str, &(dyn Display + Sync))> =
                    msg.variables().iter().map(|v| (*v, &seven as _)).collect();
                match lang.error(msg, &args) {
                    None => assert_eq!(lang, Lang::En, "{}", msg.id()),
                    Some(text) => {
                        assert!(!text.trim().is_empty(), "{lang} {}", msg.id());
                        assert!(!text.contains("{$"), "{lang} {}: {text}", msg.id());
                    }
                }
            }
            for msg in BrowserErrorMsg::ALL {
                let args: Vec<(&str, &(dyn Display + Sync))> =
                    msg.variables().iter().map(|v| (*v, &seven as _)).collect();
                match lang.browser_error(msg, &args) {
                    None => assert_eq!(lang, Lang::En, "{}", msg.id()),
                    Some(text) => {
                        assert!(!text.trim().is_empty(), "{lang} {}", msg.id());
                        assert!(!text.contains("{$"), "{lang} {}: {text}", msg.id());
                    }
                }
            }
        }
    }

    /// The zh-TW catalogues are in Traditional characters: none of the
    /// Simplified-only characters the zh-CN catalogues use (listed by
    /// OpenCC's s2t when zh-TW was made) appears in them.
    #[test]
    fn traditional_chinese_has_no_simplified_characters() {
        const SIMPLIFIED_ONLY: &str = "与丢两个为习于产仅从仪们会传体兑关内册写准凭则刚创删别务动区单卖占却参发变号后启员响团坏处备复头学实审对导将尝属并应废开张归当录态总扫择损换据数断无时昵显暂机权条来构标栏样档检横欢没状电盘码确离称筛签简级线组经绑结给络绝统继续维编网联脑脚节荐获营虑补见视览计订认让记设访证识试话该详语误请读课谁调败账资转载输过运还这进远连适选递邮里钟钥铺链销错长门问间阅队页须领频题验";
        let seven = 7;
        let mut found = Vec::new();
        for msg in Msg::ALL {
            let args: Vec<(&str, &(dyn Display + Sync))> =
                msg.variables().iter().map(|v| (*v, &seven as _)).collect();
            let text = Lang::ZhTw.format(msg, &args);
            if text.chars().any(|c| SIMPLIFIED_ONLY.contains(c)) {
                found.push(format!("{}: {text}", msg.id()));
            }
        }
        for msg in ErrorMsg::ALL {
            let args: Vec<(&str, &(dyn Display + Sync))> =
                msg.variables().iter().map(|v| (*v, &seven as _)).collect();
            let text = Lang::ZhTw.error(msg, &args).unwrap_or_default();
            if text.chars().any(|c| SIMPLIFIED_ONLY.contains(c)) {
                found.push(format!("{}: {text}", msg.id()));
            }
        }
        for msg in BrowserErrorMsg::ALL {
            let text = Lang::ZhTw.browser_error(msg, &[]).unwrap_or_default();
            if text.chars().any(|c| SIMPLIFIED_ONLY.contains(c)) {
                found.push(format!("{}: {text}", msg.id()));
            }
        }
        assert!(
            found.is_empty(),
            "Simplified characters in zh-TW:\n{}",
            found.join("\n")
        );
        // And the check bites: the zh-CN catalogue is full of them.
        assert!(
            Lang::ZhCn
                .text(Msg::AccessCode)
                .chars()
                .any(|c| SIMPLIFIED_ONLY.contains(c))
        );
    }

    #[test]
    fn catalogue_plurals_choose_by_count() {
        let bytes = |lang: Lang, n: i64| lang.format(Msg::Bytes, &[("bytes", &n)]);
        assert_eq!(bytes(Lang::En, 1), "1 byte");
        assert_eq!(bytes(Lang::En, 2), "2 bytes");
        assert_eq!(bytes(Lang::En, 0), "0 bytes");
        assert_eq!(bytes(Lang::ZhCn, 1), "1 字节");
        assert_eq!(bytes(Lang::ZhTw, 2), "2 位元組");
        let counted = |n: i64| Lang::En.format(Msg::AccessesCountedSoFar, &[("quota_used", &n)]);
        assert_eq!(
            counted(0),
            "No accesses counted so far.",
            "an exact value first"
        );
        assert_eq!(counted(1), "1 access counted so far.");
        assert_eq!(counted(1_000), "1000 accesses counted so far.");
        assert_eq!(
            Lang::En.format(Msg::CodesFor, &[("total", &"1,000")]),
            "1,000 codes for ",
            "a number with separators is still a number"
        );
    }

    #[test]
    fn plurals_follow_each_languages_rules() {
        assert_eq!(plural_category(Lang::En, 1), "one");
        assert_eq!(plural_category(Lang::En, 0), "other");
        assert_eq!(plural_category(Lang::En, 2), "other");
        assert_eq!(plural_category(Lang::ZhCn, 1), "other");
        assert_eq!(plural_category(Lang::ZhTw, 1), "other");
        let variants: &[(&str, &[Part])] = &[
            ("0", &[Part::Text("none")]),
            ("one", &[Part::Text("one")]),
            ("other", &[Part::Text("many")]),
        ];
        let pick = |lang, v: &str| select(lang, variants, v).map(|i| variants[i].0);
        assert_eq!(pick(Lang::En, "0"), Some("0"), "exact values first");
        assert_eq!(pick(Lang::En, "1"), Some("one"));
        assert_eq!(pick(Lang::En, "1,000"), Some("other"));
        assert_eq!(pick(Lang::ZhTw, "1"), Some("other"));
        assert_eq!(pick(Lang::En, "x"), None, "not a number: the default");
    }
}
