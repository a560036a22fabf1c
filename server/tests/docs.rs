//! The maps stay true: each crate's `lib.rs` names every module it
//! declares, every path the documents and the code's comments name
//! exists, and every link between the documents leads somewhere. A map that drifted (a
//! module added and not listed, a file moved and still named) fails here,
//! not in a newcomer's afternoon.

use std::{
    fs,
    path::{Path, PathBuf},
};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned()
}

/// The crates whose `lib.rs` carries a module map.
const CRATES: [&str; 7] = [
    "app",
    "server",
    "server/engine",
    "server/service",
    "server/model",
    "server/harness",
    "server/codeformat",
];

/// The public modules a crate root declares (`pub mod x;`, with or
/// without attributes before it), in order. A private module is the
/// crate's own business: what it holds is re-exported and named as such.
fn declared_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
        .filter_map(|line| {
            let rest = line.strip_prefix("pub mod ")?;
            let name = rest.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        // Test modules are not part of the map.
        .filter(|name| name != "tests")
        .collect()
}

/// The crate's `//!` text.
fn crate_doc(lib: &str) -> String {
    lib.lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_crate_map_names_every_module_it_declares() {
    let (mut missing, mut read) = (Vec::new(), 0);
    for krate in CRATES {
        let lib = fs::read_to_string(root().join(krate).join("src/lib.rs")).expect("a lib.rs");
        let doc = crate_doc(&lib);
        let modules = declared_modules(&lib);
        read += modules.len();
        for module in modules {
            let named =
                doc.contains(&format!("[`{module}`]")) || doc.contains(&format!("`{module}`"));
            if !named {
                missing.push(format!("{krate}/src/lib.rs: `{module}`"));
            }
        }
    }
    assert!(
        read > 70,
        "only {read} modules read: is the reading broken?"
    );
    assert!(
        missing.is_empty(),
        "modules declared but not in the crate's map (its //! docs):\n{}",
        missing.join("\n")
    );
}

/// The backticked words of a Markdown text that name a file or folder of
/// the repository: they contain a `/` (or end in a known extension) and
/// start at one of its top-level entries. `a/b.rs::f` names `a/b.rs`.
fn named_paths(markdown: &str) -> Vec<String> {
    let tops = [
        "app/",
        "frontend/",
        "server/",
        "migrations/",
        "scripts/",
        "end2end/",
        "docs/",
        "style/",
        "public/",
        ".ci/",
        ".sqlx/",
    ];
    let mut paths = Vec::new();
    let mut in_code_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            let path = piece.split("::").next().unwrap_or(piece).trim();
            if tops.iter().any(|top| path.starts_with(top))
                && !path.contains(['*', '…', '{', ' ', '<'])
            {
                paths.push(path.trim_end_matches(':').to_owned());
            }
        }
    }
    paths
}

#[test]
fn every_path_the_architecture_names_exists() {
    let text = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("the map");
    let paths = named_paths(&text);
    assert!(paths.len() > 50, "the map names few paths: {paths:?}");
    let gone: Vec<&String> = paths
        .iter()
        .filter(|path| !root().join(path).exists())
        .collect();
    assert!(
        gone.is_empty(),
        "docs/ARCHITECTURE.md names what is not there: {gone:#?}"
    );
}

/// The same for every other document: a path named anywhere in the docs
/// is there.
#[test]
fn every_path_the_documents_name_exists() {
    let mut gone = Vec::new();
    for document in documents() {
        let text = fs::read_to_string(&document).expect("a document");
        for path in named_paths(&text) {
            if !root().join(&path).exists() {
                gone.push(format!("{}: {path}", document.display()));
            }
        }
    }
    assert!(
        gone.is_empty(),
        "documents name what is not there:\n{}",
        gone.join("\n")
    );
}

/// Every `.rs` file below `dir` (not `target`).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() && path.file_name().is_some_and(|n| n != "target") {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A repository path a code comment names (`//` or `//!`, in backticks)
/// is there too: the comments are maps of their own.
#[test]
fn every_path_a_code_comment_names_exists() {
    let mut files = Vec::new();
    for dir in ["app", "server", "frontend"] {
        sources(&root().join(dir), &mut files);
    }
    assert!(files.len() > 200, "few sources read: {}", files.len());
    let mut gone = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("a source");
        let comments: String = text
            .lines()
            .filter_map(|line| line.find("//").map(|at| &line[at..]))
            .collect::<Vec<_>>()
            .join("\n");
        for path in named_paths(&comments) {
            if !root().join(&path).exists() {
                gone.push(format!("{}: {path}", file.display()));
            }
        }
    }
    assert!(
        gone.is_empty(),
        "code comments name what is not there:\n{}",
        gone.join("\n")
    );
}

/// The Markdown files of the repository's documentation.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).expect("a folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![
        root().join("README.md"),
        root().join("migrations/README.md"),
    ];
    walk(&root().join("docs"), &mut out);
    out
}

/// Every relative link of every document leads to a file that exists,
/// and an anchor to a heading of it.
#[test]
fn every_link_between_the_documents_leads_somewhere() {
    let mut broken = Vec::new();
    for document in documents() {
        let text = fs::read_to_string(&document).expect("a document");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else {
                break;
            };
            let target = &rest[..end];
            if target.starts_with("http") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let linked = if file.is_empty() {
                document.clone()
            } else {
                document.parent().expect("a folder").join(file)
            };
            if !linked.exists() {
                broken.push(format!("{}: {target}", document.display()));
                continue;
            }
            if !anchor.is_empty() && linked.extension().is_some_and(|e| e == "md") {
                let headings = fs::read_to_string(&linked).expect("a document");
                let found = headings
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .map(|h| slug(h.trim_start_matches('#').trim()))
                    .any(|s| s == anchor);
                if !found {
                    broken.push(format!(
                        "{}: {target} (no such heading)",
                        document.display()
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

/// A heading's anchor as GitHub makes it: lower case, spaces to dashes,
/// punctuation but dashes and underscores dropped.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The checks can fail: a module missing from a map, a path that does not
/// exist, a heading's anchor.
#[test]
fn the_checks_read_what_they_claim() {
    let lib =
        "//! * [`a`]: the first.\n\npub mod a;\npub mod b;\nmod c;\n#[cfg(test)]\nmod tests;\n";
    assert_eq!(declared_modules(lib), ["a", "b"]);
    assert!(!crate_doc(lib).contains("`b`"));
    assert_eq!(
        named_paths("see `server/src/x.rs::f` and `cargo test`\n```\n`app/y.rs`\n```"),
        ["server/src/x.rs"]
    );
    assert!(!root().join("server/src/x.rs").exists());
    assert_eq!(slug("JSON API (`/api/v1`)"), "json-api-apiv1");
}

/// The tenancy document's allowlist is the code's: every unique key that
/// `engine::db::tenant_keys::ALLOWED` lets off the tenant-led rule is
/// named in the table under "The rule", and nothing else is.
#[test]
fn the_tenancy_allowlist_is_the_one_the_check_uses() {
    let doc = fs::read_to_string(root().join("docs/design/tenancy.md")).expect("tenancy.md");
    let section = doc
        .split("## The rule")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a section \"The rule\"");
    let table: Vec<&str> = section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .collect();
    let mut named: Vec<String> = table
        .iter()
        .filter_map(|row| row.split('|').nth(1))
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_owned))
        .collect();
    named.sort();
    let mut allowed: Vec<String> = engine::db::tenant_keys::ALLOWED
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect();
    allowed.sort();
    assert_eq!(named, allowed);
}

/// What `systemd-analyze verify` says of a unit file, placed in a scratch
/// directory as `name` (a template's instance: `pg_autoctl@node1.service`):
/// every line except the executables this machine does not have (the
/// deployed binary's path).
fn unit_findings(unit: &str, name: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("admitone-units-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join(name);
    fs::write(&path, unit).expect("the unit");
    let output = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian's systemd package; scripts/ensure-tools.sh installs it)");
    let _ = fs::remove_file(&path);
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .chain(String::from_utf8_lossy(&output.stdout).lines())
        .filter(|line| !line.trim().is_empty())
        .filter(|line| {
            !(line.contains("is not executable: No such file or directory")
                && (line.contains("/opt/admitone/server") || line.contains("/usr/bin/pg_autoctl")))
        })
        .map(str::to_owned)
        .collect()
}

/// The units `server/deploy/` ships parse as systemd reads them: no
/// unknown key, no value it would ignore. The check can fail: a
/// misspelt key and a bad value are each found.
#[test]
fn the_deployed_units_are_ones_systemd_accepts() {
    let deploy = root().join("server/deploy");
    for (file, name) in [
        ("admitone.service", "admitone.service"),
        ("ha/pg_autoctl@.service", "pg_autoctl@node1.service"),
    ] {
        let unit = fs::read_to_string(deploy.join(file)).expect("a unit");
        assert_eq!(unit_findings(&unit, name), Vec::<String>::new(), "{file}");
    }
    let broken = "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\nRestartt=always\nRestart=sometimes\n";
    let findings = unit_findings(broken, "broken.service");
    assert!(
        findings.iter().any(|f| f.contains("Restartt"))
            && findings.iter().any(|f| f.contains("sometimes")),
        "{findings:?}"
    );
}
