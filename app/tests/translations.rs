//! Every string a person reads comes from the translation catalogues.
//!
//! Pages name their words by message id, `t(Msg::SignIn)`, and the words
//! live in `server/model/locales/<tag>/messages.ftl`, every language of
//! which the build checks for every message. This test reads the
//! view code of every page and component and fails on the shapes an
//! untranslated string takes in a `view!`: a bare text node (`<h2>"Codes"`,
//! or a literal alone on the line after a tag) and a bare literal in a
//! label-like attribute (`label="Email"`, `aria-label="Menu"`).

use std::{
    fs,
    path::{Path, PathBuf},
};

/// Literals that are the same in every language.
const SAME_IN_EVERY_LANGUAGE: &[&str] = &["AdmitOne", "A1", "JSON API", "ABCD-2345-WXYZ"];

const ATTRIBUTES: &[&str] = &[
    "label=\"",
    "hint=\"",
    "placeholder=\"",
    "aria-label=\"",
    "title=\"",
    "text=\"",
    "alt=\"",
];

fn words(literal: &str) -> bool {
    let letters = literal
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_alphabetic() && w[1].is_ascii_alphabetic());
    letters && !SAME_IN_EVERY_LANGUAGE.contains(&literal)
}

/// The literal starting at `start` (right after an opening quote), if it
/// closes on the same line.
fn literal_at(line: &str, start: usize) -> Option<&str> {
    let rest = &line[start..];
    rest.find('"').map(|end| &rest[..end])
}

fn untranslated(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut previous = "";
    for (number, line) in source.lines().enumerate() {
        let trimmed = line.trim();
        // `>"Text"` on one line.
        for (i, _) in line.match_indices(">\"") {
            // A `>"` inside a literal (`"<token>"`) is not a tag's end.
            let inside_literal = line[..i].matches('"').count() % 2 == 1;
            if !inside_literal
                && let Some(text) = literal_at(line, i + 2)
                && words(text)
            {
                found.push(format!("{}: {text:?}", number + 1));
            }
        }
        // A literal alone on the line after an opening tag.
        if previous.ends_with('>')
            && !previous.ends_with("=>")
            && !previous.ends_with("->")
            && trimmed.starts_with('"')
            && let Some(text) = literal_at(trimmed, 1)
            && words(text)
        {
            found.push(format!("{}: {text:?}", number + 1));
        }
        for attribute in ATTRIBUTES {
            for (i, _) in line.match_indices(attribute) {
                let before = line[..i].chars().last();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                    continue; // `data-label="…"`, `my_title="…"`
                }
                if let Some(text) = literal_at(line, i + attribute.len())
                    && words(text)
                {
                    found.push(format!("{}: {attribute}{text}\"", number + 1));
                }
            }
        }
        if !trimmed.is_empty() {
            previous = trimmed;
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("source dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_page_or_component_shows_an_untranslated_string() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root.join("pages"), &mut files);
    rust_files(&root.join("components"), &mut files);
    assert!(files.len() > 20, "found only {files:?}");
    let mut problems = Vec::new();
    for file in files {
        let source = fs::read_to_string(&file).expect("read");
        for problem in untranslated(&source) {
            problems.push(format!("{}:{problem}", file.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "put these in server/model/locales/*/messages.ftl and show them with t(Msg::…):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_finds_each_untranslated_shape() {
    let view = r#"
        <h2>"Codes"</h2>
        <p>
            "Nothing here yet."
        </p>
        <Field name="email" label="Email" error/>
        <button aria-label="Close">"×"</button>
        <h2>{t(Msg::Filter)}</h2>
        <span data-label="raw">" · "</span>
        <a>"AdmitOne"</a>
    "#;
    let found = untranslated(view);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("Codes"));
    assert!(found[1].contains("Nothing here yet."));
    assert!(found[2].contains("label=\"Email\""));
    assert!(found[3].contains("aria-label=\"Close\""));
}
