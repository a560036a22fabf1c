//! Stale-tolerant reads, on a standby when one is configured.
//!
//! Why: the console's dashboard, its audit log, the lists of learners and
//! access records and their CSV exports scan many rows. With
//! `database.read_from_standby` they run on a standby of the formation and
//! leave the primary to what decides: settlement, code entry and every
//! admin write take the primary's [`PgPool`] and never come here.
//! Everything in [`crate::read_models`] reads through [`Reads`].
//!
//! Reading one's own writes: a read first asks the primary how far its WAL
//! is flushed (`pg_current_wal_flush_lsn()`, one round trip touching no
//! table), then uses the standby only once it has replayed that far
//! (`pg_last_wal_replay_lsn()`), waiting up to `standby_wait`. A commit
//! is visible only once its record is flushed (with `synchronous_commit`
//! anything but `off`, which nothing here sets), so a read sees every
//! write committed before it began, whoever made it and on whichever
//! instance: the page that just revoked a code lists it revoked, and so
//! does an API client's next call. (The flushed position, not the insert
//! position: just after a new WAL segment or page begins, the insert
//! position is past a header no standby reports having replayed.)
//!
//! A standby further behind than that, not answering within the wait
//! (down, or frozen: the whole attempt is bounded on this side), or no
//! longer a standby (promoted): the read runs on the primary, as it would
//! without a standby, and for the next second every read goes straight
//! there. The primary not answering: the read fails as a momentary outage
//! (503), like any other; a standby alone cannot tell which acknowledged
//! writes it is missing.
//!
//! `admitone_db_reads_total{served_by}` counts where reads ran
//! (docs/operations/high-availability.md).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use sqlx::{PgPool, Postgres, pool::PoolConnection};

/// Where stale-tolerant reads run: the primary's pool, and a standby's
/// when `database.read_from_standby` is set.
#[derive(Debug, Clone)]
pub struct Reads {
    primary: PgPool,
    standby: Option<PgPool>,
    wait: Duration,
    /// Until when reads skip the standby (milliseconds since `born`),
    /// after one found none.
    skip_until_ms: Arc<AtomicU64>,
    born: Instant,
}

/// How long reads go straight to the primary after one found no standby
/// (down, frozen, promoted): the others do not each pay the wait.
const SKIP_AFTER_NO_STANDBY: Duration = Duration::from_secs(1);

/// Where one read ran, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBy {
    /// On the standby, caught up with the primary as the read began.
    Standby,
    /// On the primary: the standby had not replayed the primary's WAL
    /// within the wait.
    PrimaryStandbyBehind,
    /// On the primary: no standby answered (down, promoted, none found).
    PrimaryNoStandby,
    /// On the primary: no standby is configured.
    Primary,
}

impl ServedBy {
    pub fn label(self) -> &'static str {
        match self {
            Self::Standby => "standby",
            Self::PrimaryStandbyBehind => "primary_standby_behind",
            Self::PrimaryNoStandby => "primary_no_standby",
            Self::Primary => "primary",
        }
    }
}

impl Reads {
    /// Every read on the primary (no standby configured).
    pub fn primary_only(primary: PgPool) -> Self {
        Self {
            primary,
            standby: None,
            wait: Duration::ZERO,
            skip_until_ms: Arc::default(),
            born: Instant::now(),
        }
    }

    /// Reads on `standby` once it has caught up, waiting up to `wait`.
    pub fn with_standby(primary: PgPool, standby: PgPool, wait: Duration) -> Self {
        Self {
            primary,
            standby: Some(standby),
            wait,
            skip_until_ms: Arc::default(),
            born: Instant::now(),
        }
    }

    /// The primary's pool (for callers that must not read stale data).
    pub fn primary(&self) -> &PgPool {
        &self.primary
    }

    /// A connection for one read, on the standby when it has replayed
    /// every write committed before this call, else on the primary.
    pub async fn connection(&self) -> anyhow::Result<PoolConnection<Postgres>> {
        Ok(self.connection_served().await?.0)
    }

    /// [`Reads::connection`], saying where it is.
    pub async fn connection_served(&self) -> anyhow::Result<(PoolConnection<Postgres>, ServedBy)> {
        let Some(standby) = &self.standby else {
            return Ok((self.on_primary().await?, ServedBy::Primary));
        };
        if self.millis() < self.skip_until_ms.load(Ordering::Relaxed) {
            return Ok(record((
                self.on_primary().await?,
                ServedBy::PrimaryNoStandby,
            )));
        }
        // The primary's position first: whatever committed before this
        // line is at or before it.
        let target: String = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn()::text")
            .fetch_one(&self.primary)
            .await
            .context("reading the primary's WAL position")?;
        // The whole attempt is bounded here: a frozen standby answers
        // nothing, and its server-side timeouts never fire. (The
        // connection dropped mid-query is pinged within a limit as it goes
        // back, and closed: `super::pool_with_timeouts`.)
        let attempt = tokio::time::timeout(
            self.wait + CHECK_MARGIN,
            caught_up(standby, &target, self.wait),
        )
        .await
        .unwrap_or(Err(Behind::NoStandby));
        let served = match attempt {
            Ok(connection) => return Ok(record((connection, ServedBy::Standby))),
            Err(Behind::Lagging) => ServedBy::PrimaryStandbyBehind,
            Err(Behind::NoStandby) => {
                let until = self.millis() + millis(SKIP_AFTER_NO_STANDBY);
                self.skip_until_ms.store(until, Ordering::Relaxed);
                ServedBy::PrimaryNoStandby
            }
        };
        Ok(record((self.on_primary().await?, served)))
    }

    fn millis(&self) -> u64 {
        millis(self.born.elapsed())
    }

    async fn on_primary(&self) -> anyhow::Result<PoolConnection<Postgres>> {
        self.primary
            .acquire()
            .await
            .context("a PostgreSQL connection for a read")
    }
}

/// Beyond the wait, what one check's round trip may take.
const CHECK_MARGIN: Duration = Duration::from_millis(250);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn record(served: (PoolConnection<Postgres>, ServedBy)) -> (PoolConnection<Postgres>, ServedBy) {
    crate::metrics::read_served(served.1.label());
    served
}

enum Behind {
    /// In recovery, but not at the target within the wait.
    Lagging,
    /// No connection, an error, or a node no longer in recovery.
    NoStandby,
}

/// A standby connection once its node has replayed up to `target`,
/// polling every few milliseconds for up to `wait`.
async fn caught_up(
    standby: &PgPool,
    target: &str,
    wait: Duration,
) -> Result<PoolConnection<Postgres>, Behind> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut connection = standby.acquire().await.map_err(|error| {
        tracing::debug!(%error, "no standby connection: reading on the primary");
        Behind::NoStandby
    })?;
    let mut pause = Duration::from_millis(1);
    loop {
        let (in_recovery, replayed): (bool, bool) = sqlx::query_as(
            "SELECT pg_is_in_recovery(),
                    coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)",
        )
        .bind(target)
        .fetch_one(&mut *connection)
        .await
        .map_err(|error| {
            tracing::debug!(%error, "the standby did not answer: reading on the primary");
            Behind::NoStandby
        })?;
        if !in_recovery {
            return Err(Behind::NoStandby);
        }
        if replayed {
            return Ok(connection);
        }
        if tokio::time::Instant::now() + pause > deadline {
            return Err(Behind::Lagging);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
