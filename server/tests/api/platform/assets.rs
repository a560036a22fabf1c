//! The site's assets (`/pkg`): served compressed from the copies `server
//! precompress` wrote, to browsers that accept them; a hashed build's names
//! named by its pages and cached for a year, other names revalidated on
//! every use; pages link the icon, and `/favicon.ico` is sent to it.

use std::io::Read as _;

use reqwest::header;
use server::assets::content_hash;
use sqlx::PgPool;

use crate::support::app::{redis_url, spawn_app, spawn_app_with, test_settings};

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
    // An unhashed name: asked again before every use.
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

#[sqlx::test(migrations = "../migrations")]
async fn a_hashed_build_is_named_by_its_pages_and_cached_for_a_year(pool: PgPool) {
    let site = std::env::temp_dir().join(format!("admitone-site-{}", uuid::Uuid::new_v4()));
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).expect("pkg");
    // As cargo-leptos writes them: the main JS rewritten after it was
    // hashed (its name does not pin its bytes), the rest pinned.
    let wasm_bytes = module();
    let (js, wasm, css) = (
        content_hash(b"export default 0;"),
        content_hash(&wasm_bytes),
        content_hash(b"p{}"),
    );
    std::fs::write(pkg.join(format!("admitone.{js}.js")), "export default 1;").expect("js");
    std::fs::write(pkg.join(format!("admitone.{wasm}.wasm")), &wasm_bytes).expect("wasm");
    std::fs::write(pkg.join(format!("admitone.{css}.css")), "p{}").expect("css");
    std::fs::write(pkg.join("unhashed.js"), "1").expect("unhashed");
    let split = content_hash(b"loader");
    std::fs::write(pkg.join(format!("__wasm_split.{split}.js")), "loader").expect("loader");
    let hashes = site.join("hash.txt");
    std::fs::write(
        &hashes,
        format!("js: {js}\nwasm: {wasm}\ncss: {css}\nsplit: {split}\n"),
    )
    .expect("hashes");

    let mut settings = test_settings(&redis_url());
    settings.server.site_root = site.display().to_string();
    settings.server.asset_hashes = Some(hashes.display().to_string());
    let app = spawn_app_with(pool, settings).await;

    // The page names this build's files, and no unhashed one.
    let html = app.get("/").await.text().await.expect("page");
    assert!(html.contains(&format!("/pkg/admitone.{js}.js")), "{html}");
    assert!(
        html.contains(&format!("/pkg/admitone.{wasm}.wasm")),
        "{html}"
    );
    assert!(
        html.contains(&format!(r#"href="/pkg/admitone.{css}.css""#)),
        "{html}"
    );
    assert!(!html.contains("/pkg/admitone.js"), "{html}");
    assert!(!html.contains("/pkg/admitone.css"), "{html}");

    // A name holding its bytes' hash never changes them: a year. Anything
    // else (a name whose file was rewritten after hashing, no hash, a
    // refusal) is asked again.
    let cache_control = |path: String| {
        let app = &app;
        async move {
            let response = app.get(&path).await;
            let value = response.headers()[header::CACHE_CONTROL]
                .to_str()
                .expect("ascii")
                .to_owned();
            (response.status().as_u16(), value)
        }
    };
    let year = "public, max-age=31536000, immutable".to_owned();
    assert_eq!(
        cache_control(format!("/pkg/admitone.{wasm}.wasm")).await,
        (200, year.clone())
    );
    assert_eq!(
        cache_control(format!("/pkg/admitone.{css}.css")).await,
        (200, year)
    );
    assert_eq!(
        cache_control(format!("/pkg/admitone.{js}.js")).await,
        (200, "no-cache".to_owned())
    );
    assert_eq!(
        cache_control("/pkg/unhashed.js".into()).await,
        (200, "no-cache".to_owned())
    );
    assert_eq!(
        cache_control("/pkg/admitone.Zz9Yy8Xx7Ww6Vv5Uu4Tt3S.wasm".into()).await,
        (404, "no-cache".to_owned())
    );

    let _ = std::fs::remove_dir_all(site);
}

#[sqlx::test(migrations = "../migrations")]
async fn pages_link_the_icon_and_favicon_ico_is_sent_to_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    let ico = app.get("/favicon.ico").await;
    assert_eq!(ico.status(), 301);
    assert_eq!(ico.headers()["location"], "/favicon.svg");
    let home = app
        .client
        .get(format!("{}/", app.address))
        .header("accept", "text/html")
        .send()
        .await
        .expect("home");
    let html = home.text().await.expect("body");
    assert!(
        html.contains(r#"<link rel="icon" href="/favicon.svg" type="image/svg+xml">"#),
        "{html}"
    );
}
