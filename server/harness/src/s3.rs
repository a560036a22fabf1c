//! A real S3 server for the tests: `moto_server` (moto, from PyPI,
//! installed by `scripts/ensure-tools.sh` into its own virtualenv), started
//! on a free port of loopback for one test and stopped when dropped. The
//! server under test talks to it with `object_store`'s S3 client exactly
//! as it would to AWS, MinIO or R2: multipart uploads, ranged reads,
//! deletes, over HTTP. Nothing of the client is mocked. (moto checks that
//! a request names credentials, not its signature: signing itself is
//! `object_store`'s, tested by that crate and by any real store.)
//!
//! A test looks at the bucket from outside (lists its objects and
//! unfinished multipart uploads, reads an object) without going through the
//! code under test: moto checks that a request names credentials, not its
//! signature, so these requests carry an `Authorization` header with the
//! test credentials and no real signature ([`LOOKING`]). (Anonymous
//! requests are refused like anonymous requests to a private bucket.)

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context as _;

/// Where `moto_server` is: `$MOTO_SERVER`, else the virtualenv
/// `ensure-tools.sh` makes, else the `PATH`.
fn program() -> String {
    if let Ok(path) = std::env::var("MOTO_SERVER") {
        return path;
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let venv = format!("{home}/.cache/admitone/moto/bin/moto_server");
    if std::path::Path::new(&venv).exists() {
        return venv;
    }
    "moto_server".to_owned()
}

/// The credentials the tests give the server (moto takes any).
pub const ACCESS_KEY_ID: &str = "testing";
pub const SECRET_ACCESS_KEY: &str = "testing";

/// What a looking request sends: credentials, no real signature.
const LOOKING: &str = "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, \
                       SignedHeaders=host, Signature=0";

/// A running `moto_server` with one bucket.
pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    pub bucket: String,
}

impl S3Server {
    /// Starts `moto_server` and creates `bucket` in it; fails (with what to
    /// install) when moto is missing: a test that needs it never skips.
    pub async fn start(bucket: &str) -> anyhow::Result<Self> {
        // Port 0: the server picks a free port and prints it, so tests
        // starting servers at once never race for one.
        let mut child = Command::new(program())
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context(
                "starting moto_server (run scripts/ensure-tools.sh, or set MOTO_SERVER to its path)",
            )?;
        let stderr = child.stderr.take().context("moto_server's stderr")?;
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        // Reads the address, then keeps draining stderr (request logs) so
        // the server never blocks on a full pipe.
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            let mut sent = false;
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent
                    && let Some(port) = line
                        .split("http://127.0.0.1:")
                        .nth(1)
                        .and_then(|rest| rest.trim().parse::<u16>().ok())
                {
                    let _ = port_tx.send(port);
                    sent = true;
                }
            }
        });
        let port = match port_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().ok();
                anyhow::bail!("moto_server did not start in 60 s (exit: {status:?})");
            }
        };
        let server = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: bucket.to_owned(),
        };
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            match client
                .put(format!("{}/{bucket}", server.endpoint))
                .send()
                .await
            {
                Ok(response) if response.status().is_success() => break,
                Ok(response) => anyhow::bail!("creating the bucket: {}", response.status()),
                Err(_) if started.elapsed() < Duration::from_secs(30) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => return Err(error).context("moto_server did not answer in 30 s"),
            }
        }
        Ok(server)
    }

    /// The keys in the bucket (unsigned `ListObjectsV2`).
    pub async fn keys(&self) -> anyhow::Result<Vec<String>> {
        let xml = self
            .get_text(&format!("{}/{}?list-type=2", self.endpoint, self.bucket))
            .await?;
        Ok(elements(&xml, "Key"))
    }

    /// The keys of multipart uploads begun and neither completed nor
    /// aborted (unsigned `ListMultipartUploads`).
    pub async fn unfinished_uploads(&self) -> anyhow::Result<Vec<String>> {
        let xml = self
            .get_text(&format!("{}/{}?uploads", self.endpoint, self.bucket))
            .await?;
        Ok(elements(&xml, "Key"))
    }

    /// An object's bytes, or `None` when it does not exist.
    pub async fn object(&self, key: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let response = reqwest::Client::new()
            .get(format!("{}/{}/{key}", self.endpoint, self.bucket))
            .header(reqwest::header::AUTHORIZATION, LOOKING)
            .send()
            .await
            .context("reading an object")?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        anyhow::ensure!(
            response.status().is_success(),
            "reading an object: {}",
            response.status()
        );
        Ok(Some(
            response
                .bytes()
                .await
                .context("reading an object's bytes")?
                .to_vec(),
        ))
    }

    async fn get_text(&self, url: &str) -> anyhow::Result<String> {
        let response = reqwest::Client::new()
            .get(url)
            .header(reqwest::header::AUTHORIZATION, LOOKING)
            .send()
            .await
            .with_context(|| format!("GET {url}"))?;
        anyhow::ensure!(
            response.status().is_success(),
            "GET {url}: {}",
            response.status()
        );
        response.text().await.context("reading a listing")
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of every `<name>…</name>` in `xml` (the listings are flat).
fn elements(xml: &str, name: &str) -> Vec<String> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    xml.split(&open)
        .skip(1)
        .filter_map(|rest| rest.split_once(&close).map(|(text, _)| text.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn listings_are_read_element_by_element() {
        let xml = "<R><Contents><Key>a/b</Key></Contents><Contents><Key>c</Key></Contents></R>";
        assert_eq!(super::elements(xml, "Key"), ["a/b", "c"]);
        assert!(super::elements("<R/>", "Key").is_empty());
    }
}
