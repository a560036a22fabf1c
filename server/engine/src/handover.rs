//! Handing a batch's plain codes to the admin who issued it, once.
//!
//! The database never holds a plain code, so the only moment codes exist in
//! full is right after issuing. They are parked in Redis under two keys
//! (one for the result page, one for the CSV download), readable by the
//! issuing admin only and gone after [`HANDOVER_TTL`] anyway. If parking
//! fails, the caller revokes the batch: codes nobody ever saw must not stay
//! usable.
//!
//! The page copy is taken in one step (`GETDEL`): a page is small and
//! rendered whole. The CSV copy can be megabytes streamed over a slow
//! link, so it is read with [`peek`] and deleted with [`discard`] only
//! once the whole body has been handed to the connection: a download that
//! breaks midway (client gone, network cut) leaves the codes parked, and
//! the admin can download them again, in full, until [`HANDOVER_TTL`]
//! runs out. There is no second chance after a completed download.

use std::time::Duration;

use anyhow::Context as _;
use uuid::Uuid;

use crate::{accounts::AccountId, coordination::Redis};

/// How long plain codes wait for their one viewing.
pub const HANDOVER_TTL: Duration = Duration::from_secs(15 * 60);

/// Which one-time copy to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// The result page right after issuing.
    Page,
    /// The CSV download.
    Csv,
}

impl Copy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Csv => "csv",
        }
    }
}

/// Parks `codes` (display form) for one viewing of each copy.
pub async fn park(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    codes: &[String],
) -> anyhow::Result<()> {
    let body = serde_json::to_string(codes).context("encoding codes")?;
    let ttl = HANDOVER_TTL.as_secs();
    let keys = redis.keys();
    redis::pipe()
        .atomic()
        .cmd("SET")
        .arg(keys.handover(owner.0, batch, Copy::Page.as_str()))
        .arg(&body)
        .arg("EX")
        .arg(ttl)
        .ignore()
        .cmd("SET")
        .arg(keys.handover(owner.0, batch, Copy::Csv.as_str()))
        .arg(&body)
        .arg("EX")
        .arg(ttl)
        .ignore()
        .query_async::<()>(&mut redis.conn())
        .await
        .context("parking issued codes in Redis")
}

/// Takes one copy: the codes the first time, `None` ever after (or for
/// anyone but the issuing admin).
pub async fn take(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    copy: Copy,
) -> anyhow::Result<Option<Vec<String>>> {
    let body: Option<String> = redis::cmd("GETDEL")
        .arg(redis.keys().handover(owner.0, batch, copy.as_str()))
        .query_async(&mut redis.conn())
        .await
        .context("taking issued codes from Redis")?;
    body.map(|b| serde_json::from_str(&b).context("decoding parked codes"))
        .transpose()
}

/// Reads a copy without removing it (the CSV download, which removes it
/// with [`discard`] once its body is fully sent).
pub async fn peek(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    copy: Copy,
) -> anyhow::Result<Option<Vec<String>>> {
    let body: Option<String> = redis::cmd("GET")
        .arg(redis.keys().handover(owner.0, batch, copy.as_str()))
        .query_async(&mut redis.conn())
        .await
        .context("reading issued codes from Redis")?;
    body.map(|b| serde_json::from_str(&b).context("decoding parked codes"))
        .transpose()
}

/// Removes a copy for good (after a completed download).
pub async fn discard(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    copy: Copy,
) -> anyhow::Result<()> {
    redis::cmd("DEL")
        .arg(redis.keys().handover(owner.0, batch, copy.as_str()))
        .query_async::<()>(&mut redis.conn())
        .await
        .context("removing issued codes from Redis")
}
