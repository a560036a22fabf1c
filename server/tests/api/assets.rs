//! The site's assets (`/pkg`): served compressed from the copies `server
//! precompress` wrote, to browsers that accept them, and revalidated on
//! every use (their names are not hashed).

use std::io::Read as _;

use reqwest::header;
use sqlx::PgPool;

use crate::helpers::{redis_url, spawn_app_with, test_settings};

/// Compressible bytes, like a wasm module (but smaller).
fn module() -> Vec<u8> {
    (0..64 * 1024u32)
        .map(|i| (i % 97) as u8 ^ (i / 1024) as u8)
        .collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn assets_are_served_precompressed_and_revalidated(pool: PgPool) {
    let site = std::env::temp_dir().join(format!("admitone-site-{}", uuid::Uuid::new_v4()));
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).expect("pkg");
    let wasm = module();
    std::fs::write(pkg.join("admitone.wasm"), &wasm).expect("wasm");
    std::fs::write(pkg.join("tiny.css"), "p{}").expect("css");
    let compressed = server::assets::precompress(&pkg).expect("precompress");
    assert_eq!(
        compressed.len(),
        1,
        "the tiny file is left alone: {compressed:?}"
    );
    assert!(compressed[0].brotli < compressed[0].gzip && compressed[0].gzip < compressed[0].raw);
    assert!(!pkg.join("tiny.css.br").exists());

    let mut settings = test_settings(&redis_url());
    settings.server.site_root = site.display().to_string();
    let app = spawn_app_with(pool, settings).await;
    let client = reqwest::Client::new();
    let get = |encoding: Option<&'static str>| {
        let mut request = client.get(format!("{}/pkg/admitone.wasm", app.address));
        if let Some(encoding) = encoding {
            request = request.header(header::ACCEPT_ENCODING, encoding);
        }
        request.send()
    };

    let br = get(Some("gzip, deflate, br")).await.expect("br");
    assert_eq!(br.status(), 200);
    assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
    assert_eq!(br.headers()[header::CONTENT_TYPE], "application/wasm");
    assert_eq!(br.headers()[header::CACHE_CONTROL], "no-cache");
    assert_eq!(br.headers()[header::VARY], "accept-encoding");
    let body = br.bytes().await.expect("body");
    assert_eq!(body.len() as u64, compressed[0].brotli);
    let mut plain = Vec::new();
    brotli::Decompressor::new(&body[..], 4096)
        .read_to_end(&mut plain)
        .expect("brotli");
    assert_eq!(plain, wasm);

    let gz = get(Some("gzip")).await.expect("gzip");
    assert_eq!(gz.headers()[header::CONTENT_ENCODING], "gzip");
    let body = gz.bytes().await.expect("body");
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut plain)
        .expect("gzip");
    assert_eq!(plain, wasm);

    let raw = get(None).await.expect("raw");
    assert!(!raw.headers().contains_key(header::CONTENT_ENCODING));
    let last_modified = raw.headers()[header::LAST_MODIFIED].clone();
    assert_eq!(raw.bytes().await.expect("body"), wasm);

    // Revalidation: unchanged since, nothing sent again.
    let again = client
        .get(format!("{}/pkg/admitone.wasm", app.address))
        .header(header::IF_MODIFIED_SINCE, last_modified)
        .send()
        .await
        .expect("revalidate");
    assert_eq!(again.status(), 304);

    // The site rebuilt without precompressing: the old copies are dropped
    // when a server starts, and the new module is served as it is.
    let rebuilt: Vec<u8> = wasm.iter().rev().copied().collect();
    std::fs::write(pkg.join("admitone.wasm"), &rebuilt).expect("rebuild");
    std::fs::File::options()
        .write(true)
        .open(pkg.join("admitone.wasm"))
        .expect("open")
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(10))
        .expect("newer than its copies");
    let mut settings = test_settings(&redis_url());
    settings.server.site_root = site.display().to_string();
    let restarted = spawn_app_with(app.pool.clone(), settings).await;
    assert!(!pkg.join("admitone.wasm.br").exists());
    assert!(!pkg.join("admitone.wasm.gz").exists());
    let served = client
        .get(format!("{}/pkg/admitone.wasm", restarted.address))
        .header(header::ACCEPT_ENCODING, "gzip, br")
        .send()
        .await
        .expect("rebuilt");
    assert!(!served.headers().contains_key(header::CONTENT_ENCODING));
    assert_eq!(served.bytes().await.expect("body"), rebuilt);
    let _ = std::fs::remove_dir_all(site);
}
