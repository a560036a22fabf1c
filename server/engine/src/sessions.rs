//! Server-side sessions in Redis, for tower-sessions.
//!
//! Why Redis and not PostgreSQL: a session is read on every request and
//! written on many; Redis serves that from memory and expires records by
//! itself (`EXAT` = the record's expiry), while PostgreSQL stays free for
//! settlement. Why our own store: tower-sessions-redis-store speaks through
//! the `fred` client; we already hold a redis-rs connection (standalone or
//! cluster), so a second client would double the connections and the
//! failure modes. Each operation is one native command (SET NX / SET XX /
//! GET / DEL), atomic on its own and on one key, so no script is needed and
//! all of them work on Redis Cluster.
//!
//! Why `save` is `SET XX`: tower-sessions calls `save` only for a session
//! whose record it loaded at the start of the request (a new or cycled
//! session goes through `create`, which is `SET NX`). If the record is gone
//! by the time the request finishes, the session ended meanwhile: signed
//! out, or expired. An unconditional SET would write the old record back
//! and undo the sign-out; `XX` writes only over a record that still
//! exists, so a late save of an ended session is dropped (and is no error:
//! the request itself succeeded, its session just ended under it). For
//! that, a deleted id must never come back: `create` always picks a new id.
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

    /// Writes `record`; `false` when the condition (`NX`: absent, `XX`:
    /// present) did not hold and nothing was written.
    async fn write(&self, record: &Record, condition: Condition) -> anyhow::Result<bool> {
        let body = serde_json::to_vec(record).context("encoding a session record")?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(&record.id))
            .arg(body)
            .arg("EXAT")
            .arg(record.expiry_date.unix_timestamp().max(1));
        cmd.arg(match condition {
            Condition::Absent => "NX",
            Condition::Present => "XX",
        });
        let reply: Option<String> = cmd
            .query_async(&mut self.redis.conn())
            .await
            .context("writing a session record")?;
        Ok(reply.is_some())
    }
}

/// When [`RedisSessionStore::write`] may write.
#[derive(Debug, Clone, Copy)]
enum Condition {
    /// Only a new record (`NX`): never overwrite someone's session.
    Absent,
    /// Only over an existing record (`XX`): never revive an ended session.
    Present,
}

fn store_error(error: anyhow::Error) -> session_store::Error {
    session_store::Error::Backend(format!("{error:#}"))
}

#[async_trait]
impl SessionStore for RedisSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // Always a fresh id, never the one the record carries: after a
        // flush (sign-out), tower-sessions keeps the cleared record, old id
        // included, for the next write (the "signed out" message). Reusing
        // that id would recreate the deleted key, and a request still in
        // flight with the old session would then overwrite it (`SET XX`
        // finds a record) and sign the old cookie back in. An id is
        // therefore used once. A 128-bit random id practically never
        // collides, but if it does we pick another instead of overwriting
        // someone's session.
        for _ in 0..8 {
            record.id = Id::default();
            if self
                .write(record, Condition::Absent)
                .await
                .map_err(store_error)?
            {
                return Ok(());
            }
        }
        Err(store_error(anyhow::anyhow!(
            "could not find a free session id"
        )))
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let written = self
            .write(record, Condition::Present)
            .await
            .map_err(store_error)?;
        // Not written: deleted since this request loaded it (sign-out,
        // expiry), and it stays deleted.
        tracing::debug!(written, "saved a session (never one that ended meanwhile)");
        Ok(())
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

#[cfg(test)]
mod tests {
    //! The store against the machine's Redis (`REDIS_URL`), each test
    //! under its own key prefix.
    use std::time::Duration;

    use time::OffsetDateTime;
    use tower_sessions::session::Id;

    use super::*;
    use crate::coordination::RedisOptions;

    async fn store() -> RedisSessionStore {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        RedisSessionStore::new(
            Redis::connect(&RedisOptions {
                urls: vec![url],
                cluster: false,
                key_prefix: format!("test:{}", uuid::Uuid::new_v4()),
                response_timeout: Duration::from_secs(5),
            })
            .await
            .expect("Redis handle"),
        )
    }

    fn record(value: &str) -> Record {
        let mut data = std::collections::HashMap::new();
        data.insert("who".to_owned(), serde_json::json!(value));
        Record {
            id: Id::default(),
            data,
            // Whole seconds: the record round-trips exactly.
            expiry_date: OffsetDateTime::from_unix_timestamp(
                OffsetDateTime::now_utc().unix_timestamp() + 3_600,
            )
            .expect("time"),
        }
    }

    async fn pttl(store: &RedisSessionStore, id: &Id) -> i64 {
        redis::cmd("PTTL")
            .arg(store.key(id))
            .query_async(&mut store.redis.conn())
            .await
            .expect("PTTL")
    }

    #[tokio::test]
    async fn create_writes_under_a_fresh_id_that_expires_with_the_record() {
        let store = store().await;
        let mut created = record("ann");
        let carried = created.id;
        store.create(&mut created).await.expect("create");
        assert_ne!(created.id, carried, "never the id the record carried");
        let loaded = store.load(&created.id).await.expect("load");
        assert_eq!(loaded.as_ref(), Some(&created));
        assert_eq!(store.load(&carried).await.expect("load"), None);
        let ttl = pttl(&store, &created.id).await;
        assert!(
            (3_590_000..=3_600_000).contains(&ttl),
            "EXAT is the record's expiry: PTTL {ttl}"
        );
        // Two creates never share an id.
        let mut second = record("bob");
        store.create(&mut second).await.expect("create");
        assert_ne!(second.id, created.id);
        assert_eq!(
            store.load(&created.id).await.expect("load"),
            Some(created),
            "the first is untouched"
        );
    }

    #[tokio::test]
    async fn save_updates_a_live_session_and_never_revives_an_ended_one() {
        let store = store().await;
        let mut session = record("ann");
        store.create(&mut session).await.expect("create");
        let mut changed = session.clone();
        changed
            .data
            .insert("step".to_owned(), serde_json::json!("two"));
        store.save(&changed).await.expect("save");
        assert_eq!(
            store.load(&session.id).await.expect("load").as_ref(),
            Some(&changed),
            "saved over the live record"
        );

        store.delete(&session.id).await.expect("delete");
        assert_eq!(store.load(&session.id).await.expect("load"), None);
        // A request still in flight with the old session finishes: its save
        // is no error and writes nothing.
        store.save(&changed).await.expect("a late save is no error");
        assert_eq!(
            store.load(&session.id).await.expect("load"),
            None,
            "sign-out stands"
        );
    }

    #[tokio::test]
    async fn an_unknown_or_unreadable_record_is_no_session() {
        let store = store().await;
        assert_eq!(store.load(&Id::default()).await.expect("load"), None);
        let id = Id::default();
        let _: () = store
            .redis
            .conn()
            .set(store.key(&id), "not json")
            .await
            .expect("SET");
        assert_eq!(store.load(&id).await.expect("load"), None);
    }
}
