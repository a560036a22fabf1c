//! The site's built assets (`/pkg`: the wasm, its JS glue, the CSS):
//! compressed once when the site is built, served compressed.
//!
//! Why: the wasm is most of a first page load, and a learner on a phone
//! pays for every byte. `server precompress` (run after `cargo leptos
//! build` by `make run`, the release steps and the Dockerfile) writes
//! `<file>.br` (Brotli, quality 11) and `<file>.gz` (gzip, level 9) beside
//! each asset; [`service`] serves whichever the browser accepts, or the file
//! itself when there is no copy (a development build). Compressing once at
//! the highest levels beats compressing each response at fast ones, and
//! costs the server nothing per request.
//!
//! The names are not hashed, so a browser must not keep an asset past a
//! deploy: `Cache-Control: no-cache` makes it revalidate (a cheap 304 via
//! `Last-Modified`) before every use.

use std::{
    fs,
    io::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use axum::http::{HeaderValue, header};
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

/// `router` with `/<pkg_dir>` of the site at `site_root` mounted: the
/// precompressed copy the browser accepts, else the file, always
/// revalidated (see the module doc).
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
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    router.nest_service(
        &format!("/{pkg_dir}"),
        tower::ServiceBuilder::new()
            .layer(SetResponseHeaderLayer::overriding(
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-cache"),
            ))
            // The same address answers br, gzip or plain bytes: a shared
            // cache must keep them apart.
            .layer(SetResponseHeaderLayer::appending(
                header::VARY,
                HeaderValue::from_static("accept-encoding"),
            ))
            .service(files),
    )
}
