//! Driving a running server through its public JSON API the way admins and
//! learners do, shared by the `loadgen` (bench), `faults` and `soak`
//! binaries: signing in, creating a share with a resource, issuing codes,
//! and many learners (inserted straight into the database with one real
//! argon2 hash, so that the drivers measure settlement, not account
//! creation).
//!
//! Test and measurement tooling, never deployed. Its one SQL statement,
//! the learners' bulk insert, is harness-only load data: the engine creates
//! accounts one at a time, each with its own argon2 hash, which is what
//! these drivers must not measure.

use anyhow::Context as _;
use futures::{StreamExt as _, stream};
use serde_json::{Value, json};
use uuid::Uuid;

pub const PASSWORD: &str = "bench password 1234";

/// A client that keeps its cookies (one browser) and never follows
/// redirects.
pub fn client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(4)
        .timeout(std::time::Duration::from_secs(30))
        .build()?)
}

/// POSTs JSON; anything but a 2xx is an error.
pub async fn post(client: &reqwest::Client, url: String, body: Value) -> anyhow::Result<Value> {
    // Setting up is a client like any other: a `503` with `Retry-After` is
    // the API's documented "come back in a moment" (Redis or PostgreSQL
    // briefly unable to answer, as on a machine busy with the previous
    // fault), so it waits and asks again, a few times, before giving up.
    for attempt in 1.. {
        let response = client
            .post(&url)
            .json(&body)
            .send()
            .await
            .with_context(|| format!("POST {url}"))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        match retry_after {
            Some(secs) if status == reqwest::StatusCode::SERVICE_UNAVAILABLE && attempt < 5 => {
                tokio::time::sleep(std::time::Duration::from_secs(secs.clamp(1, 5))).await;
            }
            _ => {
                anyhow::ensure!(status.is_success(), "POST {url}: {status} {answer}");
                return Ok(answer);
            }
        }
    }
    unreachable!("the loop returns")
}

/// An admin client signed in at `base`.
pub async fn admin(base: &str, email: &str, password: &str) -> anyhow::Result<reqwest::Client> {
    signed_in(base, email, password).await
}

/// A new client (a session of its own) signed in at `base`.
pub async fn signed_in(base: &str, email: &str, password: &str) -> anyhow::Result<reqwest::Client> {
    let session = client()?;
    post(
        &session,
        format!("{base}/api/v1/auth/login"),
        json!({ "email": email, "password": password }),
    )
    .await?;
    Ok(session)
}

pub struct Share {
    pub slug: String,
    pub resource: Uuid,
    pub id: Uuid,
}

impl Share {
    /// Where a learner opens the resource (`POST`, phase 3): the one
    /// request that binds and counts.
    pub fn open_url(&self, base: &str) -> String {
        format!(
            "{base}/api/v1/s/{}/resources/{}/open",
            self.slug, self.resource
        )
    }

    /// Where the resource's bytes are (`GET`, under a live grant).
    pub fn content_url(&self, base: &str) -> String {
        format!(
            "{base}/api/v1/s/{}/resources/{}/content",
            self.slug, self.resource
        )
    }
}

/// An active share with one small video.
pub async fn new_share(
    admin: &reqwest::Client,
    base: &str,
    tenant: Uuid,
    title: &str,
) -> anyhow::Result<Share> {
    new_share_with(admin, base, tenant, title, json!({})).await
}

/// An active share with one small video and `settings` (the share API's
/// fields, such as `quota`).
pub async fn new_share_with(
    admin: &reqwest::Client,
    base: &str,
    tenant: Uuid,
    title: &str,
    settings: Value,
) -> anyhow::Result<Share> {
    let mut body = json!({ "title": title, "status": "active" });
    if let (Some(body), Some(settings)) = (body.as_object_mut(), settings.as_object()) {
        body.extend(settings.clone());
    }
    let share = post(
        admin,
        format!("{base}/api/v1/tenants/{tenant}/shares"),
        body,
    )
    .await?;
    let id: Uuid = share["id"].as_str().context("share id")?.parse()?;
    let part = reqwest::multipart::Part::bytes(vec![7u8; 4096])
        .file_name("lesson.mp4")
        .mime_str("video/mp4")?;
    let form = reqwest::multipart::Form::new()
        .text("title", "Lesson")
        .part("file", part);
    let resource: Value = admin
        .post(format!("{base}/api/v1/shares/{id}/resources"))
        .multipart(form)
        .send()
        .await?
        .json()
        .await?;
    Ok(Share {
        slug: share["slug"].as_str().context("slug")?.to_owned(),
        resource: resource["id"].as_str().context("resource id")?.parse()?,
        id,
    })
}

/// Issues `count` codes; the plain codes.
pub async fn issue(
    admin: &reqwest::Client,
    base: &str,
    share: Uuid,
    count: usize,
) -> anyhow::Result<Vec<String>> {
    let body = post(
        admin,
        format!("{base}/api/v1/shares/{share}/codes"),
        json!({ "count": count }),
    )
    .await?;
    Ok(body["codes"]
        .as_array()
        .context("codes")?
        .iter()
        .filter_map(|c| c["code"].as_str().map(str::to_owned))
        .collect())
}

/// The address of the learner [`learners`] made with `id`.
pub fn learner_email(id: Uuid) -> String {
    format!("learner-{id}@example.com")
}

/// `n` learners (their addresses verified, as a code binds only to a
/// verified account), each signed in with its own client (`bases[i % len]`
/// signs learner `i` in: sessions are shared by every instance).
pub async fn learners(
    bases: &[String],
    pool: &sqlx::PgPool,
    n: usize,
) -> anyhow::Result<Vec<(Uuid, reqwest::Client)>> {
    use engine::accounts::{Password, hash_password};
    let hash = hash_password(&Password::parse(secrecy::SecretString::from(PASSWORD))?).await?;
    let ids: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
    let emails: Vec<String> = ids.iter().map(|id| learner_email(*id)).collect();
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
         SELECT id, email, 'Learner', $3, now() FROM UNNEST($1::uuid[], $2::text[]) AS l(id, email)",
    )
    .bind(&ids)
    .bind(&emails)
    .bind(&hash)
    .execute(pool)
    .await?;
    stream::iter(ids.into_iter().zip(emails).enumerate())
        .map(|(i, (id, email))| {
            let base = bases[i % bases.len()].clone();
            async move {
                let c = client()?;
                post(
                    &c,
                    format!("{base}/api/v1/auth/login"),
                    json!({ "email": email, "password": PASSWORD }),
                )
                .await?;
                anyhow::Ok((id, c))
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}
