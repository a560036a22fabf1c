//! The parked copies of a batch's plain codes: [`park`] puts one in Redis
//! for each viewing (the result page, the CSV download), and [`take`]
//! hands one over, once. The download reads its copy without taking it
//! ([`peek`]): the copy goes only once the whole file has been handed over.

use anyhow::Context as _;
use uuid::Uuid;

use super::{Copy, HANDOVER_TTL};
use crate::{accounts::AccountId, coordination::Redis};

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

/// Reads a copy without removing it.
pub(super) async fn peek(
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
