//! Only one reconciler runs at a time across all instances: [`Exclusive`]
//! is a PostgreSQL advisory lock held on a connection of its own.

use anyhow::Context as _;
use sqlx::{Connection as _, PgConnection, PgPool};

/// The advisory lock key of the reconciler ("AdmitOne" in ASCII).
pub const RECONCILE_LOCK: i64 = 0x4164_6d69_744f_6e65;

/// The reconciler's lock, held until [`Exclusive::release`] (or until its
/// connection ends, should the process die). A connection of its own, not
/// the pool's: a session lock on a pooled connection would outlive the run.
pub struct Exclusive {
    conn: PgConnection,
}

impl Exclusive {
    /// The lock, or `None` when another reconciler holds it.
    pub async fn try_acquire(pool: &PgPool) -> anyhow::Result<Option<Self>> {
        let mut conn = PgConnection::connect_with(&pool.connect_options())
            .await
            .context("connecting for the reconciler's lock")?;
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(RECONCILE_LOCK)
            .fetch_one(&mut conn)
            .await
            .context("taking the reconciler's lock")?;
        if locked {
            Ok(Some(Self { conn }))
        } else {
            conn.close().await.context("closing the lock connection")?;
            Ok(None)
        }
    }

    /// Releases the lock (ending its session releases it too).
    pub async fn release(mut self) -> anyhow::Result<()> {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(RECONCILE_LOCK)
            .execute(&mut self.conn)
            .await
            .context("releasing the reconciler's lock")?;
        self.conn
            .close()
            .await
            .context("closing the lock connection")
    }
}
