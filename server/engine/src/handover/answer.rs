//! An API client's whole answer to "issue codes", held for the retries of
//! its request: a client that lost the answer and retries with the same
//! `Idempotency-Key` gets the same codes again instead of nothing.

use anyhow::Context as _;
use uuid::Uuid;

use super::{Copy, HANDOVER_TTL};
use crate::{accounts::AccountId, coordination::Redis};

/// Holds an API client's answer to "issue codes" (its plain codes
/// included) for [`HANDOVER_TTL`], so that a retry with the same
/// `Idempotency-Key` (the client lost the answer) gets the same answer
/// instead of nothing.
pub async fn hold_answer(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    answer: &str,
) -> anyhow::Result<()> {
    redis::cmd("SET")
        .arg(
            redis
                .keys()
                .handover(owner.0, batch, Copy::ApiAnswer.as_str()),
        )
        .arg(answer)
        .arg("EX")
        .arg(HANDOVER_TTL.as_secs())
        .query_async::<()>(&mut redis.conn())
        .await
        .context("holding an API answer in Redis")
}

/// The answer [`hold_answer`] holds for `owner`'s `batch`, while it does.
pub async fn held_answer(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
) -> anyhow::Result<Option<String>> {
    redis::cmd("GET")
        .arg(
            redis
                .keys()
                .handover(owner.0, batch, Copy::ApiAnswer.as_str()),
        )
        .query_async(&mut redis.conn())
        .await
        .context("reading a held API answer")
}
