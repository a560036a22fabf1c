//! One tenant, one share with resources and codes, learners, and the final
//! state read back with SQL: what every settlement test starts from.

use std::{sync::Arc, time::Duration};

use engine::{
    accounts::AccountId,
    batches::{self, BatchRequest},
    codes::{Keyring, PlainCode},
    coordination::{Redis, RedisOptions},
    settlement::{
        Counting, Grant, RequestId, SettlementError, SettlementRequest, Settler,
        options::{SettlementOptions, SettlementProbe},
        patience::Patience,
    },
    shares::{self, NewShare, Share, ShareSlug, ShareStatus},
    tenants::{self, TenantId, TenantName, TenantSlug},
};
use secrecy::SecretString;
use sqlx::PgPool;
use uuid::Uuid;

/// What the share is created with. By default a quota far above what any
/// test spends, so that every settlement debits a quota slot (set `quota:
/// None` for a share without one).
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub per_learner_limit: Option<i32>,
    pub quota: Option<i32>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            per_learner_limit: None,
            quota: Some(1_000_000),
        }
    }
}

pub struct World {
    pub pool: PgPool,
    pub redis: Redis,
    pub keyring: Keyring,
    pub tenant: TenantId,
    pub admin: AccountId,
    pub share: Share,
    /// Three resources of the share.
    pub resources: Vec<Uuid>,
    /// Eight codes of the share.
    pub codes: Vec<(Uuid, PlainCode)>,
}

/// The machine's Redis (`REDIS_URL`) under a key prefix of this test's
/// own; the Redis Cluster instead when `REDIS_CLUSTER_NODES` names one
/// (`make test`'s second run).
pub async fn redis() -> Redis {
    if let Ok(nodes) = std::env::var("REDIS_CLUSTER_NODES")
        && !nodes.is_empty()
    {
        return Redis::connect(&RedisOptions {
            urls: nodes.split(',').map(str::to_owned).collect(),
            cluster: true,
            key_prefix: format!("test:{}", Uuid::new_v4()),
            response_timeout: Duration::from_secs(5),
        })
        .await
        .expect("Redis Cluster handle");
    }
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    redis_at(&url).await
}

/// A Redis handle that can never answer: nothing listens on port 1.
pub async fn dead_redis() -> Redis {
    redis_at("redis://127.0.0.1:1").await
}

async fn redis_at(url: &str) -> Redis {
    Redis::connect(&RedisOptions {
        urls: vec![url.to_owned()],
        cluster: false,
        key_prefix: format!("test:{}", Uuid::new_v4()),
        response_timeout: Duration::from_secs(2),
    })
    .await
    .expect("Redis handle")
}

/// An account with a verified address, written directly (no argon2:
/// these tests never sign in).
pub async fn account(pool: &PgPool, name: &str) -> AccountId {
    let id = unverified_account(pool, name).await;
    sqlx::query("UPDATE accounts SET email_verified_at = now() WHERE id = $1")
        .bind(id.0)
        .execute(pool)
        .await
        .expect("verifying an account");
    id
}

/// An account whose address is not verified yet (a fresh registration).
pub async fn unverified_account(pool: &PgPool, name: &str) -> AccountId {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO accounts (id, email, display_name, password_hash) VALUES ($1, $2, $3, 'x')",
    )
    .bind(id)
    .bind(format!("{name}-{id}@example.com"))
    .bind(name)
    .execute(pool)
    .await
    .expect("inserting an account");
    AccountId(id)
}

/// `make mutants` runs this suite against a mutant of a SQL function (the
/// `mutate` binary of `server/harness`): `ADMITONE_SQL_MUTANT` names a file
/// holding its `CREATE OR REPLACE FUNCTION`, applied here to the test's
/// freshly migrated database before anything else, then checked to be the
/// definition in force (its marker comment is in the body). Unset, as
/// everywhere else, this does nothing.
async fn apply_sql_mutant(pool: &PgPool) {
    let Ok(file) = std::env::var("ADMITONE_SQL_MUTANT") else {
        return;
    };
    let statement = std::fs::read_to_string(&file).expect("reading ADMITONE_SQL_MUTANT");
    let marker = statement
        .lines()
        .find_map(|line| line.strip_prefix("-- admitone-mutant "))
        .expect("the mutant's marker line");
    sqlx::raw_sql(&statement)
        .execute(pool)
        .await
        .expect("applying the SQL mutant");
    let in_force: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_proc WHERE strpos(prosrc, 'admitone-mutant ' || $1) > 0)",
    )
    .bind(marker)
    .fetch_one(pool)
    .await
    .expect("reading the definition in force");
    assert!(in_force, "the SQL mutant is not the definition in force");
}

impl World {
    pub async fn new(pool: PgPool, policy: Policy) -> Self {
        apply_sql_mutant(&pool).await;
        let keyring =
            Keyring::new(1, vec![(1, SecretString::from("k".repeat(32)))]).expect("keyring");
        let admin = account(&pool, "admin").await;
        let (tenant, _) = tenants::ensure_tenant_with_owner(
            &pool,
            &TenantSlug::parse("school").expect("slug"),
            &TenantName::parse("School").expect("name"),
            admin,
        )
        .await
        .expect("tenant");
        let share = create_share(&pool, tenant, admin, "course", policy).await;
        let mut resources = Vec::new();
        for n in 1..=3 {
            resources.push(add_resource(&pool, tenant, admin, &share, n).await);
        }
        let codes = issue(&pool, &keyring, tenant, admin, &share, 8).await;
        Self {
            redis: redis().await,
            pool,
            keyring,
            tenant,
            admin,
            share,
            resources,
            codes,
        }
    }

    /// Another tenant's course in the same database and Redis (its slug
    /// `elsewhere`): three resources, eight codes, the same admin.
    pub async fn in_tenant(world: &World, tenant: TenantId) -> World {
        let keyring =
            Keyring::new(1, vec![(1, SecretString::from("k".repeat(32)))]).expect("keyring");
        let (pool, admin) = (world.pool.clone(), world.admin);
        let share = create_share(&pool, tenant, admin, "elsewhere", Policy::default()).await;
        let mut resources = Vec::new();
        for n in 1..=3 {
            resources.push(add_resource(&pool, tenant, admin, &share, n).await);
        }
        let codes = issue(&pool, &keyring, tenant, admin, &share, 8).await;
        World {
            redis: world.redis.clone(),
            pool,
            keyring,
            tenant,
            admin,
            share,
            resources,
            codes,
        }
    }

    /// A second share of the same tenant, with one resource and two codes.
    pub async fn other_share(&self) -> (Share, Uuid, Vec<(Uuid, PlainCode)>) {
        let share = create_share(
            &self.pool,
            self.tenant,
            self.admin,
            "other",
            Policy::default(),
        )
        .await;
        let resource = add_resource(&self.pool, self.tenant, self.admin, &share, 1).await;
        let codes = issue(
            &self.pool,
            &self.keyring,
            self.tenant,
            self.admin,
            &share,
            2,
        )
        .await;
        (share, resource, codes)
    }

    pub async fn learner(&self, name: &str) -> AccountId {
        account(&self.pool, name).await
    }

    pub fn code(&self, n: usize) -> Uuid {
        self.codes[n].0
    }

    /// A settler with these options and a probe to read.
    pub fn settler(&self, options: SettlementOptions) -> (Settler, Arc<SettlementProbe>) {
        self.settler_on(self.redis.clone(), options)
    }

    /// [`Self::settler`], coordinating through `redis` (one that is down,
    /// say).
    pub fn settler_on(
        &self,
        redis: Redis,
        options: SettlementOptions,
    ) -> (Settler, Arc<SettlementProbe>) {
        let probe = Arc::new(SettlementProbe::default());
        let settler = Settler::new(
            self.pool.clone(),
            redis,
            SettlementOptions {
                probe: Some(probe.clone()),
                ..options
            },
        );
        (settler, probe)
    }

    pub fn request(
        &self,
        learner: AccountId,
        resource: Uuid,
        pending: Option<Uuid>,
        request_id: &str,
    ) -> SettlementRequest {
        SettlementRequest {
            share: self.share.clone(),
            principal: learner,
            // Every account here is new: epoch 0, as a fresh sign-in has.
            session_epoch: 0,
            resource,
            pending_code: pending,
            request_id: RequestId::parse(request_id).expect("request id"),
            patience: Patience::WaitBriefly,
            counting: Counting::Allowed,
        }
    }

    pub async fn settle(
        &self,
        settler: &Settler,
        request: &SettlementRequest,
    ) -> Result<Grant, SettlementError> {
        settler.settle(request).await
    }

    /// The final state, read with SQL.
    pub async fn state(&self) -> State {
        let bindings: Vec<(Uuid, Uuid)> = sqlx::query_as(
            "SELECT id, bound_principal FROM auth_codes
             WHERE tenant_id = $1 AND bound_principal IS NOT NULL ORDER BY id",
        )
        .bind(self.tenant.0)
        .fetch_all(&self.pool)
        .await
        .expect("bindings");
        let access_counts: Vec<(Uuid, i32)> = sqlx::query_as(
            "SELECT id, access_count FROM auth_codes
             WHERE tenant_id = $1 AND access_count > 0 ORDER BY id",
        )
        .bind(self.tenant.0)
        .fetch_all(&self.pool)
        .await
        .expect("access counts");
        let records: i64 =
            sqlx::query_scalar("SELECT count(*) FROM access_records WHERE tenant_id = $1")
                .bind(self.tenant.0)
                .fetch_one(&self.pool)
                .await
                .expect("records");
        let quota_used: i32 = sqlx::query_scalar(
            "SELECT coalesce(sum(used), 0)::integer FROM share_quota_slots
             WHERE tenant_id = $1 AND share_id = $2",
        )
        .bind(self.tenant.0)
        .bind(self.share.id.0)
        .fetch_one(&self.pool)
        .await
        .expect("quota used");
        // The learner's receipt (mail outbox) counts as an event of its
        // own: one per binding, written by the same transaction.
        let events: Vec<(String, i64)> = sqlx::query_as(
            "SELECT event_type, count(*) FROM outbox
             WHERE tenant_id = $1 AND event_type IN ('code.bound', 'access.recorded')
             GROUP BY event_type
             UNION ALL
             SELECT 'receipt', count(*) FROM mail_outbox
             WHERE tenant_id = $1 AND template = 'code_bound'
             HAVING count(*) > 0
             ORDER BY 1",
        )
        .bind(self.tenant.0)
        .fetch_all(&self.pool)
        .await
        .expect("outbox");
        State {
            bindings,
            access_counts,
            records,
            quota_used,
            events,
        }
    }

    /// Asserts nothing was ever settled: no binding, debit, record or event.
    pub async fn assert_untouched(&self, context: &str) {
        assert_eq!(self.state().await, State::default(), "{context}");
    }
}

/// What settlements leave behind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct State {
    /// (code, learner), by code id.
    pub bindings: Vec<(Uuid, Uuid)>,
    /// (code, access count) of codes counted at least once.
    pub access_counts: Vec<(Uuid, i32)>,
    pub records: i64,
    pub quota_used: i32,
    /// (event type, rows) of the settlement's events in the outbox, and
    /// (`receipt`, rows) of the learners' receipts in the mail outbox.
    pub events: Vec<(String, i64)>,
}

impl State {
    pub fn events(bound: i64, recorded: i64) -> Vec<(String, i64)> {
        let mut events = Vec::new();
        if recorded > 0 {
            events.push(("access.recorded".to_owned(), recorded));
        }
        if bound > 0 {
            events.push(("code.bound".to_owned(), bound));
            events.push(("receipt".to_owned(), bound));
        }
        events
    }
}

async fn create_share(
    pool: &PgPool,
    tenant: TenantId,
    admin: AccountId,
    slug: &str,
    policy: Policy,
) -> Share {
    shares::create_share(
        pool,
        tenant,
        admin,
        NewShare {
            title: format!("Course {slug}"),
            slug: ShareSlug::parse(slug).expect("slug"),
            description: String::new(),
            status: ShareStatus::Active,
            per_learner_limit: policy.per_learner_limit,
            quota: policy.quota,
            access_days: None,
            valid_from: None,
            valid_until: None,
        },
    )
    .await
    .expect("share")
}

async fn add_resource(
    pool: &PgPool,
    tenant: TenantId,
    admin: AccountId,
    share: &Share,
    n: u8,
) -> Uuid {
    let id = Uuid::now_v7();
    engine::resources::add_resource(
        pool,
        tenant,
        admin,
        share.id,
        id,
        &format!("Lesson {n}"),
        "text/plain",
        1,
        &format!("key-{id}"),
        i64::MAX,
    )
    .await
    .expect("resource");
    id
}

async fn issue(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    admin: AccountId,
    share: &Share,
    count: i64,
) -> Vec<(Uuid, PlainCode)> {
    batches::issue_codes(
        pool,
        keyring,
        tenant,
        admin,
        &BatchRequest {
            share: share.id,
            count,
            label: "test",
            expires_at: None,
            idempotency_key: None,
            progress: None,
            mailable: false,
        },
    )
    .await
    .expect("codes")
    .codes
}

/// Waits until some backend of this database waits on a lock (the
/// settlement under test), so the test's own transaction can let it go.
pub async fn wait_until_blocked(pool: &PgPool) {
    for _ in 0..200 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the settlement never waited on the test's lock");
}
