//! The shares an instance looked up by link name lately, for `POST
//! …/open` (the JSON API's opening, a course launch's hot path): the
//! settlement then needs no read of the share of its own, and an opening
//! is one call to PostgreSQL.
//!
//! Why remembering is safe: what an opening takes from the share is its
//! tenant and id (a link name never changes once codes exist:
//! `share-slug-locked`), and everything that can change (the status, the
//! dates, the quota, the resources) is read again by the settlement
//! itself, which refuses at once a share paused, closed, archived or taken
//! back to a draft a moment ago. A refusal about the share forgets it, so
//! the next request reads it afresh. Only shares open at the moment they
//! were read are remembered (an unknown link name, or a paused share, is
//! read every time), for [`RECHECK`] at most, without their description
//! (the one long text a share has, which no opening shows), so an entry
//! is small and the whole cache stays under a few MiB.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use engine::shares::Share;

/// How long a share looked up by link name is used without reading it
/// again.
pub const RECHECK: Duration = Duration::from_secs(5);

/// Entries beyond this are dropped (the stale first, then all): the
/// cache is a shortcut, never a store.
const MAX_ENTRIES: usize = 4_096;

#[derive(Debug)]
struct Entry {
    share: Arc<Share>,
    read: Instant,
}

/// Shares by link name, each read within `recheck` ([`RECHECK`]).
#[derive(Debug, Clone)]
pub struct RecentShares {
    recheck: Duration,
    entries: Arc<Mutex<HashMap<String, Entry>>>,
}

impl Default for RecentShares {
    fn default() -> Self {
        Self::new(RECHECK)
    }
}

impl RecentShares {
    fn new(recheck: Duration) -> Self {
        Self {
            recheck,
            entries: Arc::default(),
        }
    }

    pub(crate) fn get(&self, slug: &str) -> Option<Arc<Share>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(slug)
            .filter(|e| e.read.elapsed() < self.recheck)
            .map(|e| e.share.clone())
    }

    /// Remembers `share` (without its description) and answers the copy.
    pub(crate) fn put(&self, share: Share) -> Arc<Share> {
        let share = Arc::new(Share {
            description: String::new(),
            ..share
        });
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| e.read.elapsed() < self.recheck);
            if entries.len() >= MAX_ENTRIES * 3 / 4 {
                entries.clear();
            }
        }
        entries.insert(
            share.slug.clone(),
            Entry {
                share: share.clone(),
                read: Instant::now(),
            },
        );
        share
    }

    /// Forgets `slug`: the settlement found its share changed.
    pub(crate) fn forget(&self, slug: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(slug);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use engine::{
        shares::{ShareId, ShareStatus},
        tenants::TenantId,
    };
    use uuid::Uuid;

    use super::*;

    fn share(slug: &str) -> Share {
        Share {
            tenant_id: TenantId(Uuid::now_v7()),
            id: ShareId(Uuid::now_v7()),
            slug: slug.to_owned(),
            title: "Rust".into(),
            description: "x".repeat(10_000),
            status: ShareStatus::Active,
            valid_from: None,
            valid_until: None,
            per_learner_limit: None,
            quota: None,
            access_days: None,
            quota_used: 0,
            foreign_codes: false,
        }
    }

    #[test]
    fn a_share_is_remembered_small_until_forgotten() {
        let cache = RecentShares::default();
        assert!(cache.get("rust").is_none());
        let put = share("rust");
        let id = put.id;
        cache.put(put);
        let got = cache.get("rust").expect("remembered");
        assert_eq!((got.id, got.title.as_str()), (id, "Rust"));
        assert!(got.description.is_empty(), "the long text is not kept");
        assert!(cache.get("go").is_none());
        cache.forget("rust");
        assert!(cache.get("rust").is_none());
    }

    #[test]
    fn a_share_read_longer_ago_than_the_recheck_is_read_again() {
        let cache = RecentShares::new(Duration::from_millis(30));
        cache.put(share("rust"));
        assert!(cache.get("rust").is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(cache.get("rust").is_none());
    }

    #[test]
    fn the_cache_never_grows_past_its_bound() {
        let cache = RecentShares::default();
        for n in 0..MAX_ENTRIES + 10 {
            cache.put(share(&format!("s{n}")));
            assert!(cache.len() <= MAX_ENTRIES);
        }
        assert!(cache.get(&format!("s{}", MAX_ENTRIES + 9)).is_some());
    }
}
