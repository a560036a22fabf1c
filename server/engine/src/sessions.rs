//! Server-side sessions in Redis, for tower-sessions.
//!
//! Why Redis and not PostgreSQL: a session is read on every request and
//! written on many; Redis serves that from memory and expires records by
//! itself (`EXAT` = the record's expiry), while PostgreSQL stays free for
//! settlement. Why our own store: tower-sessions-redis-store speaks through
//! the `fred` client; we already hold a redis-rs connection (standalone or
//! cluster), so a second client would double the connections and the
//! failure modes. Each operation is one native command (SET NX / SET / GET /
//! DEL), atomic on its own, so no script is needed.
//!
//! Revocation does not live here: "sign out everywhere" bumps the account's
//! `session_epoch` in PostgreSQL (see [`crate::accounts`]), which every
//! authenticated request checks. A lost or restored Redis therefore can
//! lose sessions (users sign in again) but never revive a revoked one.

use anyhow::Context as _;
use async_trait::async_trait;
use redis::AsyncCommands as _;
use tower_sessions::{
    SessionStore,
    session::{Id, Record},
    session_store,
};

use crate::coordination::Redis;

/// A tower-sessions store on our Redis handle.
#[derive(Clone, Debug)]
pub struct RedisSessionStore {
    redis: Redis,
}

impl RedisSessionStore {
    pub fn new(redis: Redis) -> Self {
        Self { redis }
    }

    fn key(&self, id: &Id) -> String {
        self.redis.keys().session(&id.to_string())
    }

    async fn write(&self, record: &Record, only_if_new: bool) -> anyhow::Result<bool> {
        let body = serde_json::to_vec(record).context("encoding a session record")?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(&record.id))
            .arg(body)
            .arg("EXAT")
            .arg(record.expiry_date.unix_timestamp().max(1));
        if only_if_new {
            cmd.arg("NX");
        }
        let reply: Option<String> = cmd
            .query_async(&mut self.redis.conn())
            .await
            .context("writing a session record")?;
        Ok(reply.is_some())
    }
}

fn store_error(error: anyhow::Error) -> session_store::Error {
    session_store::Error::Backend(format!("{error:#}"))
}

#[async_trait]
impl SessionStore for RedisSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // A 128-bit random id practically never collides, but if it does we
        // pick another instead of overwriting someone's session.
        for _ in 0..8 {
            if self.write(record, true).await.map_err(store_error)? {
                return Ok(());
            }
            record.id = Id::default();
        }
        Err(store_error(anyhow::anyhow!(
            "could not find a free session id"
        )))
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        self.write(record, false)
            .await
            .map(|_| ())
            .map_err(store_error)
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let body: Option<Vec<u8>> = self
            .redis
            .conn()
            .get(self.key(id))
            .await
            .context("reading a session record")
            .map_err(store_error)?;
        match body {
            None => Ok(None),
            Some(body) => match serde_json::from_slice(&body) {
                Ok(record) => Ok(Some(record)),
                Err(error) => {
                    // A record we cannot read is treated as no session (the
                    // user signs in again), never as someone else's.
                    tracing::warn!(%error, "discarding an unreadable session record");
                    Ok(None)
                }
            },
        }
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        let _: i64 = self
            .redis
            .conn()
            .del(self.key(id))
            .await
            .context("deleting a session record")
            .map_err(store_error)?;
        Ok(())
    }
}
