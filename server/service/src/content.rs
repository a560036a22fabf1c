//! Serving a resource's bytes: only under a live grant, never counting.
//!
//! The access rule (`docs/design/access-rule.md`): an access is
//! counted where a person opens a resource, by the settlement
//! ([`crate::learner::open`], from the resource page or `POST …/open`).
//! The bytes route asks only whether that opening left a live grant
//! ([`engine::grants::live`]: one read, never a write), so a player's Range
//! requests cost no transaction and no lock, and a request from another
//! site can never count, bind or debit.
//!
//! An instance remembers a "yes" for [`GrantCache`]'s `recheck` (5 s by
//! default, `settlement.grant_recheck_secs`): a player streaming a video
//! asks PostgreSQL about once per `recheck`, and a revoke, an unbind, a
//! pause or "sign out everywhere" stops it within `recheck`. A "no" is
//! never remembered. Every request is counted against the account's limit
//! of byte requests (`throttle.content_per_account_per_minute`).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use engine::{
    coordination::ThrottleScope,
    grants::{self, GrantError, LiveGrant},
    settlement::SettlementError,
};
use time::OffsetDateTime;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{ServiceError, Services, session, throttle};

/// Entries beyond this are dropped (the stale first, then all): the cache
/// is a shortcut, never a store.
const MAX_ENTRIES: usize = 50_000;

/// Who asks for what, as the session says: a new session epoch ("sign out
/// everywhere") is a different key, so it is checked afresh at once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    account: Uuid,
    epoch: i64,
    slug: String,
    resource: Uuid,
}

#[derive(Debug)]
struct Entry {
    grant: LiveGrant,
    checked: Instant,
}

/// Live grants this instance checked in the last `recheck`.
#[derive(Debug, Clone)]
pub struct GrantCache {
    recheck: Duration,
    entries: Arc<Mutex<HashMap<Key, Entry>>>,
    reads: Arc<AtomicU64>,
}

impl GrantCache {
    /// `recheck`: how long a checked grant is served without asking again
    /// (zero: ask on every request).
    pub fn new(recheck: Duration) -> Self {
        Self {
            recheck,
            entries: Arc::default(),
            reads: Arc::default(),
        }
    }

    /// How many times this instance read a grant from PostgreSQL.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    fn get(&self, key: &Key) -> Option<LiveGrant> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|e| e.checked.elapsed() < self.recheck)
            .filter(|e| e.grant.expires_at > OffsetDateTime::now_utc())
            .map(|e| e.grant.clone())
    }

    fn put(&self, key: Key, grant: LiveGrant) {
        if self.recheck.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| e.checked.elapsed() < self.recheck);
            // Still mostly fresh: start again rather than scan on every
            // insert (the cost is one read per grant in use).
            if entries.len() >= MAX_ENTRIES * 3 / 4 {
                entries.clear();
            }
        }
        entries.insert(
            key,
            Entry {
                grant,
                checked: Instant::now(),
            },
        );
    }
}

/// The live grant under which the signed-in learner may read `resource`'s
/// bytes in the share at `slug`. Refuses (changing nothing) when there is
/// none: `OpenFromCoursePage` says to open it first.
pub async fn live_grant(
    services: &Services,
    session: &Session,
    slug: &str,
    resource: Uuid,
) -> Result<LiveGrant, ServiceError> {
    let session::Claim { account, epoch } = session::claimed(services, session).await?;
    throttle::hit(
        services,
        ThrottleScope::ContentAccount,
        &account.0.to_string(),
        services.auth.content_per_account,
    )
    .await?;
    let key = Key {
        account: account.0,
        epoch,
        slug: slug.to_owned(),
        resource,
    };
    if let Some(grant) = services.grants.get(&key) {
        crate::request_span::record("principal", account.0);
        return Ok(grant);
    }
    services.grants.reads.fetch_add(1, Ordering::Relaxed);
    match grants::live(&services.pool, slug, resource, account, epoch).await {
        Ok(grant) => {
            crate::request_span::record("principal", account.0);
            services.grants.put(key, grant.clone());
            Ok(grant)
        }
        Err(GrantError::SessionEnded) => Err(session::ended(session).await?),
        Err(GrantError::ShareNotFound | GrantError::ResourceNotFound) => {
            Err(ServiceError::NotFound)
        }
        // A code entered and not yet bound: the opening binds it.
        Err(GrantError::NotBound { share }) => {
            let pending = crate::learner::pending_code(session, share, account).await?;
            Err(if pending.is_some() {
                SettlementError::OpenFromCoursePage
            } else {
                SettlementError::CodeRequired
            }
            .into())
        }
        Err(GrantError::Refused(refusal)) => Err(refusal.into()),
        Err(GrantError::Unexpected(error)) => Err(error.into()),
    }
}
