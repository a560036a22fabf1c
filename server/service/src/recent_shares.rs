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
//! the next request reads it afresh. Only shares learners may see are
//! remembered (an unknown link name is read every time), for
//! [`RECHECK`] at most.

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
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
struct Entry {
    share: Share,
    read: Instant,
}

/// Shares by link name, each read within [`RECHECK`].
#[derive(Debug, Clone, Default)]
pub struct RecentShares {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
}

impl RecentShares {
    pub(crate) fn get(&self, slug: &str) -> Option<Share> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(slug)
            .filter(|e| e.read.elapsed() < RECHECK)
            .map(|e| e.share.clone())
    }

    pub(crate) fn put(&self, share: &Share) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| e.read.elapsed() < RECHECK);
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
    }

    /// Forgets `slug`: the settlement found its share changed.
    pub(crate) fn forget(&self, slug: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(slug);
    }
}
