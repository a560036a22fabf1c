//! The site's built assets (`/pkg`: the wasm, its JS glue, the CSS):
//! compressed once when the site is built, served compressed.
//!
//! Why: the wasm is most of a first page load, and a learner on a phone
//! pays for every byte. `server precompress` (run after `cargo leptos
//! build` by `make run` and the release steps) writes
//! `<file>.br` (Brotli, quality 11) and `<file>.gz` (gzip, level 9) beside
//! each asset; [`service`] serves whichever the browser accepts, or the file
//! itself when there is no copy (a development build). Compressing once at
//! the highest levels beats compressing each response at fast ones, and
//! costs the server nothing per request.
//!
//! Every build hashes the names (cargo-leptos `hash-files`):
//! `admitone.<md5>.wasm`, listed in the `hash.txt` it writes beside the
//! server binary ([`Hashes`]). A page names the exact files of the build
//! that rendered it, so a deploy never pairs new HTML with a cached old
//! wasm. A name is cached for a year (`immutable`) only when the hash in it
//! is the hash of the bytes behind it, checked when the server starts:
//! cargo-leptos writes the split loader's final name into the main JS and
//! wasm after hashing them, so those two names do not pin their bytes, and
//! two builds can give one such name different bytes. They, and any name
//! without a hash, are revalidated before every use (`no-cache`, a cheap
//! 304 when nothing changed).

use std::{
    fs,
    io::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use axum::{
    extract::Request,
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::Response,
};
use tower_http::{services::ServeDir, set_header::SetResponseHeaderLayer};

/// What is worth compressing: text and the wasm (images are compressed).
const COMPRESSIBLE: &[&str] = &["wasm", "js", "css", "svg", "json", "html", "txt"];

/// Files smaller than this are sent as they are.
const MIN_BYTES: u64 = 512;

/// One asset and its compressed sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressed {
    pub path: PathBuf,
    pub raw: u64,
    pub gzip: u64,
    pub brotli: u64,
}

/// Writes `.br` and `.gz` copies beside every compressible file under `dir`
/// (each only when smaller than the file; a stale copy is replaced, written
/// to a temporary name first so that a server never serves half of one).
pub fn precompress(dir: &Path) -> anyhow::Result<Vec<Compressed>> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    let mut done = Vec::new();
    for path in files {
        let data = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let gz = {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(&data).context("gzip")?;
            encoder.finish().context("gzip")?
        };
        let br = {
            let mut out = Vec::new();
            let params = brotli::enc::BrotliEncoderParams {
                quality: 11,
                lgwin: 24,
                ..Default::default()
            };
            brotli::BrotliCompress(&mut &data[..], &mut out, &params).context("brotli")?;
            out
        };
        write_beside(&path, "gz", &gz, data.len())?;
        write_beside(&path, "br", &br, data.len())?;
        done.push(Compressed {
            path,
            raw: data.len() as u64,
            gzip: gz.len() as u64,
            brotli: br.len() as u64,
        });
    }
    Ok(done)
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.context("reading a directory entry")?;
        let path = entry.path();
        let meta = entry.metadata().context("reading a file's metadata")?;
        if meta.is_dir() {
            collect(&path, files)?;
        } else if meta.len() >= MIN_BYTES
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| COMPRESSIBLE.contains(&e))
        {
            files.push(path);
        }
    }
    Ok(())
}

/// `<path>.<ext>` with `data`, when it is smaller than the original
/// (otherwise any old copy goes: it would be stale).
fn write_beside(path: &Path, ext: &str, data: &[u8], original: usize) -> anyhow::Result<()> {
    let mut target = path.as_os_str().to_owned();
    target.push(format!(".{ext}"));
    let target = PathBuf::from(target);
    if data.len() >= original {
        return match fs::remove_file(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", target.display()))
            }
            _ => Ok(()),
        };
    }
    let mut temporary = target.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    fs::write(&temporary, data).with_context(|| format!("writing {}", temporary.display()))?;
    fs::rename(&temporary, &target).with_context(|| format!("writing {}", target.display()))
}

/// Removes every `.br`/`.gz` copy under `dir` older than its file: a site
/// rebuilt without `server precompress` (a debug build after a release one)
/// must never be served the old module's bytes. Run when the server starts;
/// a copy it cannot remove is logged, and the server starts anyway.
pub fn drop_stale(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut dropped = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            dropped += drop_stale(&path);
            continue;
        }
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            continue;
        };
        if ext != "br" && ext != "gz" {
            continue;
        }
        let original = path.with_extension("");
        let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
        let stale = match (modified(&path), modified(&original)) {
            (Some(copy), Some(file)) => copy < file,
            // The file is gone: so must its copy.
            (_, None) => true,
            (None, Some(_)) => false,
        };
        if stale {
            match fs::remove_file(&path) {
                Ok(()) => dropped += 1,
                // Another server starting on the same site got to it.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => tracing::warn!(
                    path = %path.display(),
                    error = %error,
                    "a stale precompressed asset could not be removed; run `server precompress`"
                ),
            }
        }
    }
    dropped
}

/// The hash file cargo-leptos writes beside the server binary it builds.
pub const HASH_FILE: &str = "hash.txt";

/// A hashed build's names: the content hash cargo-leptos put in the name
/// of the bundle's JS, wasm and CSS, as its `hash.txt` lists them
/// (`js: <hash>` lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hashes {
    /// The file they were read from (Leptos reads it again itself).
    pub file: PathBuf,
    pub js: String,
    pub wasm: String,
    pub css: String,
    /// The split loader's (`cargo leptos build --split`).
    pub split: Option<String>,
}

impl Hashes {
    /// The build's names: from `configured` (`server.asset_hashes`), else
    /// from `hash.txt` beside the running binary when there is one; `None`
    /// for a build without hashed names.
    pub fn locate(configured: Option<&str>) -> anyhow::Result<Option<Self>> {
        let path = match configured {
            // Absolute: Leptos reads it again relative to the binary.
            Some(path) => std::path::absolute(path)
                .with_context(|| format!("resolving server.asset_hashes {path}"))?,
            None => {
                let beside = std::env::current_exe()
                    .ok()
                    .and_then(|exe| exe.parent().map(|dir| dir.join(HASH_FILE)));
                match beside {
                    Some(path) if path.is_file() => path,
                    _ => return Ok(None),
                }
            }
        };
        Self::read(&path).map(Some)
    }

    /// Parses a hash file; each of `js`, `wasm` and `css` must be there.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = fs::read_to_string(path)
            .with_context(|| format!("reading the asset hashes in {}", path.display()))?;
        let hash = |kind: &str| {
            text.lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.trim() == kind)
                .map(|(_, hash)| hash.trim().to_owned())
                .filter(|hash| is_hash(hash))
                .with_context(|| format!("{} names no `{kind}` hash", path.display()))
        };
        Ok(Self {
            file: path.to_path_buf(),
            js: hash("js")?,
            wasm: hash("wasm")?,
            css: hash("css")?,
            split: hash("split").ok(),
        })
    }

    /// The stylesheet's name in `/<pkg_dir>`.
    pub fn stylesheet(&self, bundle: &str) -> String {
        format!("{bundle}.{}.css", self.css)
    }

    /// Fails unless every file the hashes name is in `pkg`, the split
    /// loader included: a binary started beside a site from another build
    /// (or one built without `--split`) would serve pages that never
    /// hydrate.
    pub fn check(&self, pkg: &Path, bundle: &str) -> anyhow::Result<()> {
        let split = self.split.as_deref().with_context(|| {
            format!(
                "{} names no split loader: build the site with `cargo leptos build --split`",
                self.file.display()
            )
        })?;
        let names = [
            format!("{bundle}.{}.js", self.js),
            format!("{bundle}.{}.wasm", self.wasm),
            format!("{bundle}.{}.css", self.css),
            format!("__wasm_split.{split}.js"),
        ];
        for name in names {
            let name = pkg.join(name);
            anyhow::ensure!(
                name.is_file(),
                "{} names {}, which is not there: deploy the site built with this binary",
                self.file.display(),
                name.display()
            );
        }
        Ok(())
    }
}

/// Fails unless a site without hashed names has its bundle under the plain
/// names: every build hashes them, so a server that found no `hash.txt`
/// beside it was most likely deployed without it.
pub fn check_unhashed(pkg: &Path, bundle: &str) -> anyhow::Result<()> {
    for ext in ["js", "wasm", "css"] {
        let name = pkg.join(format!("{bundle}.{ext}"));
        anyhow::ensure!(
            name.is_file(),
            "{} is not there and no hash file names the bundle: copy target/release/{HASH_FILE} \
             beside the server binary (or set server.asset_hashes)",
            name.display()
        );
    }
    Ok(())
}

/// A content hash as cargo-leptos writes one: 22 characters of unpadded
/// URL-safe base64 (an MD5). The split loader's placeholder (all `_`) is
/// not one.
fn is_hash(text: &str) -> bool {
    text.len() == 22
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && text.bytes().any(|b| b.is_ascii_alphanumeric())
}

/// The hash in a file name (`<stem>.<hash>.<ext>`), if it has one.
fn name_hash(name: &str) -> Option<&str> {
    let mut parts: Vec<&str> = name.split('.').collect();
    if parts.len() < 3 {
        return None;
    }
    parts.pop();
    parts.remove(0);
    parts.into_iter().find(|part| is_hash(part))
}

/// cargo-leptos's hash of some bytes: MD5, unpadded URL-safe base64.
pub fn content_hash(data: &[u8]) -> String {
    use base64::Engine as _;
    use md5::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(md5::Md5::digest(data))
}

/// The addresses (`/<pkg_dir>/<path>`) under `dir` whose name holds the
/// hash of their own bytes: the ones that may be cached for good.
pub fn pinned_names(dir: &Path, prefix: &str) -> std::collections::HashSet<String> {
    let mut pinned = std::collections::HashSet::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return pinned;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            pinned.extend(pinned_names(&path, &format!("{prefix}/{name}")));
            continue;
        }
        let Some(hash) = name_hash(&name) else {
            continue;
        };
        if fs::read(&path).is_ok_and(|data| content_hash(&data) == hash) {
            pinned.insert(format!("{prefix}/{name}"));
        }
    }
    pinned
}

/// A year for a name pinned to its bytes, a revalidation for anything
/// else. Only on answers a cache may keep.
async fn cache_control(
    axum::extract::State(pinned): axum::extract::State<
        std::sync::Arc<std::collections::HashSet<String>>,
    >,
    request: Request,
    next: Next,
) -> Response {
    let hashed = pinned.contains(request.uri().path());
    let mut response = next.run(request).await;
    let cacheable = response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED;
    let value = if hashed && cacheable {
        HeaderValue::from_static("public, max-age=31536000, immutable")
    } else {
        HeaderValue::from_static("no-cache")
    };
    response.headers_mut().insert(header::CACHE_CONTROL, value);
    response
}

/// `router` with `/<pkg_dir>` of the site at `site_root` mounted: the
/// precompressed copy the browser accepts, else the file; hashed names
/// cached for good, others revalidated (see the module doc).
pub fn mount<S: Clone + Send + Sync + 'static>(
    router: axum::Router<S>,
    site_root: &str,
    pkg_dir: &str,
) -> axum::Router<S> {
    let dir = Path::new(site_root).join(pkg_dir);
    let dropped = drop_stale(&dir);
    if dropped > 0 {
        tracing::info!(
            dropped,
            "removed precompressed assets older than their files"
        );
    }
    // Paths as the nested service sees them (the prefix stripped).
    let pinned = std::sync::Arc::new(pinned_names(&dir, ""));
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    router.nest_service(
        &format!("/{pkg_dir}"),
        tower::ServiceBuilder::new()
            .layer(axum::middleware::from_fn_with_state(pinned, cache_control))
            // The same address answers br, gzip or plain bytes: a shared
            // cache must keep them apart.
            .layer(SetResponseHeaderLayer::appending(
                header::VARY,
                HeaderValue::from_static("accept-encoding"),
            ))
            .service(files),
    )
}

#[cfg(test)]
mod tests {
    use super::{Hashes, content_hash, is_hash, name_hash, pinned_names};

    #[test]
    fn a_hash_file_is_read_and_checked_against_the_site() {
        let dir = std::env::temp_dir().join(format!("admitone-hashes-{}", uuid::Uuid::new_v4()));
        let pkg = dir.join("pkg");
        std::fs::create_dir_all(&pkg).expect("pkg");
        let file = dir.join("hash.txt");
        let (js, wasm, css) = (
            "Aa1-_Bb2Cc3Dd4Ee5Ff6Gg",
            "Hh7Ii8Jj9Kk0Ll1Mm2Nn3O",
            "Pp4Qq5Rr6Ss7Tt8Uu9Vv0W",
        );
        std::fs::write(
            &file,
            format!("js: {js}\nwasm: {wasm}\ncss: {css}\nmanifest: {js}\nsplit: {css}\n"),
        )
        .expect("write");
        let hashes = Hashes::read(&file).expect("read");
        assert_eq!((hashes.js.as_str(), hashes.wasm.as_str()), (js, wasm));
        assert_eq!(hashes.stylesheet("admitone"), format!("admitone.{css}.css"));
        for (hash, ext) in [(js, "js"), (wasm, "wasm")] {
            std::fs::write(pkg.join(format!("admitone.{hash}.{ext}")), "x").expect("file");
        }
        std::fs::write(pkg.join(format!("__wasm_split.{css}.js")), "x").expect("loader");
        let missing = hashes.check(&pkg, "admitone").expect_err("no stylesheet");
        assert!(
            format!("{missing:#}").contains(&format!("admitone.{css}.css")),
            "{missing:#}"
        );
        std::fs::write(pkg.join(format!("admitone.{css}.css")), "x").expect("css");
        hashes.check(&pkg, "admitone").expect("complete");
        let unsplit = Hashes {
            split: None,
            ..hashes
        };
        let refused = unsplit.check(&pkg, "admitone").expect_err("no loader");
        assert!(format!("{refused:#}").contains("--split"), "{refused:#}");
        assert!(
            super::check_unhashed(&pkg, "admitone").is_err(),
            "only hashed names"
        );

        std::fs::write(&file, format!("js: {js}\nwasm: {wasm}\n")).expect("write");
        assert!(Hashes::read(&file).is_err(), "no css line");
        std::fs::write(&file, format!("js: {js}\nwasm: short\ncss: {css}\n")).expect("write");
        assert!(Hashes::read(&file).is_err(), "not a hash");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn only_cargo_leptos_hashes_are_hashed_names() {
        assert!(is_hash("Xk3-_q9ZbT0aL5mNcVw2Yg"));
        assert!(!is_hash("______________________"), "the split placeholder");
        assert!(!is_hash("Xk3-_q9ZbT0aL5mNcVw2Y"), "21 characters");
        assert!(!is_hash("Xk3-_q9ZbT0aL5mNcVw2Y="), "padding");
        let hash = Some("Xk3-_q9ZbT0aL5mNcVw2Yg");
        assert_eq!(name_hash("admitone.Xk3-_q9ZbT0aL5mNcVw2Yg.wasm"), hash);
        assert_eq!(name_hash("__wasm_split.Xk3-_q9ZbT0aL5mNcVw2Yg.js"), hash);
        assert_eq!(name_hash("admitone.wasm"), None);
        assert_eq!(name_hash("Xk3-_q9ZbT0aL5mNcVw2Yg.wasm"), None, "no stem");
        assert_eq!(name_hash("__wasm_split.______________________.js"), None);
    }

    #[test]
    fn only_names_holding_their_own_bytes_hash_are_pinned() {
        // cargo-leptos's hash of b"hello" (MD5 5d41402abc4b2a76b9719d911017c592).
        assert_eq!(content_hash(b"hello"), "XUFAKrxLKna5cZ2REBfFkg");
        let dir = std::env::temp_dir().join(format!("admitone-pinned-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("snippets")).expect("dir");
        let good = format!("admitone.{}.wasm", content_hash(b"module"));
        std::fs::write(dir.join(&good), b"module").expect("good");
        // Rewritten after hashing: the name no longer pins the bytes.
        let stale = format!("admitone.{}.js", content_hash(b"before"));
        std::fs::write(dir.join(&stale), b"after").expect("stale");
        let nested = format!("chunk_1.{}.wasm", content_hash(b"chunk"));
        std::fs::write(dir.join("snippets").join(&nested), b"chunk").expect("nested");
        std::fs::write(dir.join("admitone.css"), b"p{}").expect("plain");
        let pinned = pinned_names(&dir, "");
        let mut pinned: Vec<_> = pinned.into_iter().collect();
        pinned.sort();
        assert_eq!(
            pinned,
            vec![format!("/{good}"), format!("/snippets/{nested}")]
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
