//! The server crate's modules depend on each other in one direction only.
//!
//! The adapters (`routes/api`, the JSON API; `routes/console`, the
//! console's plain-HTTP routes) share what both need through modules of
//! their own (`problem`, `caller`, `content`, `exports`, `uploads`,
//! `state`), never through each other; nothing below the router depends
//! on the router. This reads every `use` and every `crate::`/`super::`
//! path in `server/src`, resolves it to the module it names, and fails on
//! any circle between the crate's top-level modules (`routes` counted by
//! its children), printing the files that close it. A check of text, not
//! of the compiler's resolution: a path it cannot see (a macro building
//! one) is not counted.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// The crate's source root.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The module path of a source file: `routes/api/console/codes.rs` is
/// `routes::api::console::codes`; `mod.rs`, `lib.rs` and `main.rs` name
/// their folder.
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src()).expect("inside src");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The unit a module path belongs to: its top-level module, but the
/// router's children each count as one (`routes::api`, `routes::console`).
fn unit_of(module: &[String]) -> Option<String> {
    match module {
        [] => None,
        [first, second, ..] if first == "routes" => Some(format!("routes::{second}")),
        [first, ..] => Some(first.clone()),
    }
}

/// The code without comments (line comments and doc comments), so that a
/// path named in prose is not counted.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // `//` inside a string (a URL) is rare here; a literal "http://"
            // keeps its line.
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a `use` tree names, its braces expanded:
/// `super::{a, b::{c, d}}` is `super::a`, `super::b::c`, `super::b::d`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).trim().to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').expect("a closing brace")];
    let (mut depth, mut start, mut parts) = (0, 0, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| {
            if p == "self" {
                prefix.trim_end_matches("::").to_owned()
            } else {
                format!("{prefix}{p}")
            }
        })
        .collect()
}

/// Every path of this crate a file names: its `use` trees and the
/// `crate::…` / `super::…` paths in its code.
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    // A `use` statement starts a line (after `pub`, `pub(crate)`…) and
    // runs to its `;`.
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let after_pub = match trimmed.strip_prefix("pub") {
            Some(rest) if rest.starts_with(' ') => rest.trim_start(),
            Some(rest) if rest.starts_with('(') => {
                rest[rest.find(')').map_or(0, |at| at + 1)..].trim_start()
            }
            _ => trimmed,
        };
        if let Some(tree) = after_pub.strip_prefix("use ") {
            let start = offset + (line.len() - tree.len());
            if let Some(end) = code[start..].find(';') {
                paths.extend(expand(&code[start..start + end]));
            }
        }
        offset += line.len();
    }
    let mut token = String::new();
    for c in code.chars().chain([' ']) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            token.push(c);
        } else {
            if token.contains("::") {
                paths.push(token.trim_end_matches(':').to_owned());
            }
            token.clear();
        }
    }
    paths
}

/// The names a file's `use` statements bring into scope from this crate,
/// with the module path each stands for (`use crate::{routes, state};`
/// makes `routes` stand for `routes`).
fn aliases(module: &[String], code: &str) -> BTreeMap<String, Vec<String>> {
    paths_in(code)
        .into_iter()
        .filter(|path| {
            path.starts_with("crate::") || path.starts_with("super::") || path.starts_with("self::")
        })
        .filter_map(|path| {
            let name = path
                .rsplit("::")
                .next()?
                .split(" as ")
                .last()?
                .trim()
                .to_owned();
            Some((name, resolve(module, &path)?))
        })
        .collect()
}

/// The module a path names, from the file's module `from`: `crate::a::b`
/// is `a::b`, `super::b` is the parent's `b`; other crates' paths are not
/// this crate's (`None`).
fn resolve(from: &[String], path: &str) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match segments.first() {
        Some(&"crate") => {
            segments.remove(0);
            Vec::new()
        }
        Some(&"super") => {
            // A file `a/b.rs` is module `a::b` and a folder module
            // `a/b/mod.rs` is `a::b` too: `super` is `a` for both.
            let mut base = from.to_vec();
            while segments.first() == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
            base
        }
        Some(&"self") => {
            segments.remove(0);
            from.to_vec()
        }
        _ => return None,
    };
    base.extend(segments.into_iter().map(str::to_owned));
    Some(base)
}

/// The edges between units: (from, to) → the files that make it.
fn edges() -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src()) {
        let module = module_of(&file);
        let Some(from) = unit_of(&module) else {
            continue;
        };
        let code = without_comments(&fs::read_to_string(&file).expect("a source file"));
        let aliases = aliases(&module, &code);
        for path in paths_in(&code) {
            let first = path.split("::").next().unwrap_or_default();
            let target = match aliases.get(first) {
                Some(base) if !matches!(first, "crate" | "super" | "self") => {
                    let mut target = base.clone();
                    target.extend(path.split("::").skip(1).map(str::to_owned));
                    target
                }
                _ => match resolve(&module, &path) {
                    Some(target) => target,
                    None => continue,
                },
            };
            let Some(to) = unit_of(&target) else {
                continue;
            };
            if to != from {
                let name = file
                    .strip_prefix(src())
                    .expect("inside src")
                    .display()
                    .to_string();
                edges.entry((from.clone(), to)).or_default().insert(name);
            }
        }
    }
    edges
}

/// A circle in `edges`, if there is one: the units around it.
fn a_circle(edges: &BTreeMap<(String, String), BTreeSet<String>>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    fn visit<'a>(
        unit: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|u| *u == unit) {
            return Some(path[at..].iter().map(|u| (*u).to_owned()).collect());
        }
        if !done.insert(unit) {
            return None;
        }
        path.push(unit);
        for to in next.get(unit).into_iter().flatten() {
            if let Some(circle) = visit(to, next, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for unit in next.keys() {
        if let Some(circle) = visit(unit, &next, &mut Vec::new(), &mut done) {
            return Some(circle);
        }
    }
    None
}

#[test]
fn the_servers_modules_depend_on_each_other_in_one_direction() {
    let edges = edges();
    // The reading works: the router depends on the routes it mounts, and
    // the routes on the state they extract.
    assert!(edges.contains_key(&("startup".to_owned(), "routes::api".to_owned())));
    assert!(edges.contains_key(&("routes::console".to_owned(), "state".to_owned())));
    if let Some(circle) = a_circle(&edges) {
        let mut closing = String::new();
        for (i, from) in circle.iter().enumerate() {
            let to = &circle[(i + 1) % circle.len()];
            let files = &edges[&(from.clone(), to.clone())];
            closing.push_str(&format!("\n  {from} -> {to}: {files:?}"));
        }
        panic!("a circle between server modules:{closing}");
    }
}

#[test]
fn the_two_route_trees_share_nothing_but_what_lives_below_them() {
    let edges = edges();
    for (from, to) in [
        ("routes::console", "routes::api"),
        ("routes::api", "routes::console"),
    ] {
        assert!(
            !edges.contains_key(&(from.to_owned(), to.to_owned())),
            "{from} uses {to}: {:?}",
            edges[&(from.to_owned(), to.to_owned())]
        );
    }
}

/// The console's routes are adapters like the view crate's server
/// functions: they may use its session helpers and wording, never its
/// pages.
#[test]
fn no_route_uses_the_view_crates_pages() {
    for file in rust_files(&src().join("routes")) {
        let code = without_comments(&fs::read_to_string(&file).expect("a source file"));
        let pages = paths_in(&code)
            .into_iter()
            .chain(code.split_whitespace().map(str::to_owned))
            .any(|path| path.contains("app::pages") || path.starts_with("pages::"));
        assert!(!pages, "{} uses app::pages", file.display());
    }
}

/// The reading itself: braces expand, `super` climbs, other crates are
/// not resolved.
#[test]
fn paths_are_read_as_the_compiler_reads_them() {
    assert_eq!(
        expand("super::{a, b::{c, self}}"),
        ["super::a", "super::b::c", "super::b"]
    );
    let module: Vec<String> = ["routes", "api", "console", "codes"]
        .map(str::to_owned)
        .to_vec();
    assert_eq!(
        resolve(&module, "super::Caller"),
        Some(vec![
            "routes".into(),
            "api".into(),
            "console".into(),
            "Caller".into()
        ])
    );
    assert_eq!(
        resolve(&module, "crate::problem::ApiError"),
        Some(vec!["problem".into(), "ApiError".into()])
    );
    assert_eq!(resolve(&module, "engine::shares::Share"), None);
    let circle = a_circle(&BTreeMap::from([
        (("a".into(), "b".into()), BTreeSet::new()),
        (("b".into(), "a".into()), BTreeSet::new()),
    ]));
    assert_eq!(circle, Some(vec!["a".to_owned(), "b".to_owned()]));
}
