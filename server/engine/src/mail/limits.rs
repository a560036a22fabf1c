//! The mail relay's throttle: no tenant hands the SMTP server more than
//! its share of mails a minute, and the server as a whole no more than
//! its SMTP provider takes a second.
//!
//! Why: a creator mailing ten thousand codes, or a bounce storm of their
//! retries, would otherwise spend the SMTP provider's sending rate (and
//! reputation) for every tenant, and a provider past its rate answers
//! `454 Throttling` to everyone's mail. Round-robin leasing
//! ([`super::claim_due`]) already puts every tenant's next mail before a
//! big sender's backlog; the limits here make the big sender wait once
//! it has had its minute's share, and hold everyone to what the provider
//! takes.
//!
//! The count lives in PostgreSQL (`mail_windows`, one row per tenant and
//! minute, and one per second for the server), written by the same
//! statement that leases the mails, so a relay that restarts keeps its
//! count and several relays share it. Every attempt counts, a failed one
//! too: a tenant whose mail keeps bouncing retries within its own share.
//! Windows start on the clock's minute and second, so a tenant may send
//! up to twice its limit across a minute's edge; two relays leasing at the
//! same moment may each read the count before the other's lease, so the
//! limit may be passed by one round (8 mails) per further relay. A held
//! mail is not attempted and not counted: it waits for its next round.

use anyhow::Context as _;
use sqlx::PgPool;

/// How much mail the relays may hand the SMTP server (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MailLimits {
    /// Mails of one tenant a minute (account mail, which no tenant sends,
    /// is not held by it).
    pub tenant_per_minute: Option<u32>,
    /// Mails of everyone a second.
    pub server_per_second: Option<u32>,
}

impl MailLimits {
    /// Limits from the configuration's numbers, where 0 is "none".
    pub fn new(tenant_per_minute: u32, server_per_second: u32) -> Self {
        Self {
            tenant_per_minute: (tenant_per_minute > 0).then_some(tenant_per_minute),
            server_per_second: (server_per_second > 0).then_some(server_per_second),
        }
    }

    /// No limit at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// The limits as the claim's SQL reads them.
    pub(super) fn as_sql(self) -> (Option<i32>, Option<i32>) {
        let clamp = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
        (
            self.tenant_per_minute.map(clamp),
            self.server_per_second.map(clamp),
        )
    }
}

/// How long a window's count is kept: long past any limit's window, short
/// enough that the table stays a few thousand rows.
pub const KEPT_FOR: time::Duration = time::Duration::hours(1);

/// Deletes the windows older than [`KEPT_FOR`]. Returns how many.
pub async fn forget_windows(pool: &PgPool) -> anyhow::Result<u64> {
    let done = sqlx::query!(
        "DELETE FROM mail_windows WHERE window_start < now() - make_interval(secs => $1)",
        KEPT_FOR.as_seconds_f64(),
    )
    .execute(pool)
    .await
    .context("forgetting the mail relay's old windows")?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use model::TenantId;
    use uuid::Uuid;

    use super::*;
    use crate::mail::{DueMail, claim_due};

    /// Queues `n` due mails of `tenant` (`None`: account mail).
    async fn queue(pool: &PgPool, tenant: Option<Uuid>, n: i32) {
        sqlx::query(
            "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params, next_attempt_at)
             SELECT gen_random_uuid(), $1, 'password_changed', 'm-' || gen_random_uuid() || '@example.com',
                    'en', '{}', now() - interval '1 hour' + k * interval '1 millisecond'
               FROM generate_series(1, $2) AS k",
        )
        .bind(tenant)
        .bind(n)
        .execute(pool)
        .await
        .expect("queued");
    }

    async fn tenant(pool: &PgPool) -> Uuid {
        let id = Uuid::now_v7();
        sqlx::query("INSERT INTO tenants (id, slug, name) VALUES ($1, $2, 'T')")
            .bind(id)
            .bind(format!("t-{}", &id.simple().to_string()[..12]))
            .execute(pool)
            .await
            .expect("tenant");
        id
    }

    fn of(due: &[DueMail], tenant: Option<Uuid>) -> usize {
        due.iter()
            .filter(|d| d.tenant.map(|t: TenantId| t.0) == tenant)
            .count()
    }

    const LEASE: Duration = Duration::from_secs(600);

    /// A tenant past its minute's share waits; another tenant's mail and
    /// account mail go on; the next minute it sends its share again.
    #[sqlx::test(migrations = "../../migrations")]
    async fn a_tenant_past_its_share_waits_and_no_one_else_does(pool: PgPool) {
        let (big, small) = (tenant(&pool).await, tenant(&pool).await);
        queue(&pool, Some(big), 30).await;
        queue(&pool, Some(small), 3).await;
        queue(&pool, None, 2).await;
        let limits = MailLimits::new(10, 0);
        let mut leased = Vec::new();
        loop {
            let due = claim_due(&pool, 8, LEASE, limits).await.expect("leased");
            if due.is_empty() {
                break;
            }
            leased.extend(due);
            assert!(leased.len() <= 35, "the claims end");
        }
        // Each minute's window holds at most the share (two windows if
        // the minute turned meanwhile), and counts every lease.
        let windows: Vec<i32> = sqlx::query_scalar(
            "SELECT attempts FROM mail_windows WHERE kind = 'tenant' AND tenant_id = $1",
        )
        .bind(big)
        .fetch_all(&pool)
        .await
        .expect("windows");
        let big_leased = of(&leased, Some(big));
        assert!(windows.iter().all(|n| *n == 10), "{windows:?}");
        assert_eq!(
            big_leased,
            usize::try_from(windows.iter().sum::<i32>()).expect("n")
        );
        assert_eq!(of(&leased, Some(small)), 3);
        assert_eq!(of(&leased, None), 2, "account mail is no tenant's");
        // The held mails were not attempted.
        let untouched: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM mail_outbox WHERE tenant_id = $1 AND attempts = 0",
        )
        .bind(big)
        .fetch_one(&pool)
        .await
        .expect("held");
        assert_eq!(untouched, 30 - i64::try_from(big_leased).expect("n"));
        // The minute passes (every window moved out of it at once).
        sqlx::query("UPDATE mail_windows SET window_start = window_start - interval '2 hours'")
            .execute(&pool)
            .await
            .expect("later");
        let next = claim_due(&pool, 50, LEASE, limits).await.expect("leased");
        assert_eq!(of(&next, Some(big)), 10);
        // No limit: everything due goes.
        let rest = claim_due(&pool, 50, LEASE, MailLimits::none())
            .await
            .expect("leased");
        assert_eq!(of(&rest, Some(big)), 20 - big_leased);
    }

    /// Past a tenant's share, account mail queued last still goes in the
    /// server's next second: within a turn it comes first, then the
    /// tenants served least.
    #[sqlx::test(migrations = "../../migrations")]
    async fn account_mail_goes_first_when_the_second_is_short(pool: PgPool) {
        for _ in 0..6 {
            let t = tenant(&pool).await;
            queue(&pool, Some(t), 3).await;
        }
        // Queued after every tenant's mail.
        sqlx::query(
            "INSERT INTO mail_outbox (id, template, to_address, lang, params)
             VALUES (gen_random_uuid(), 'reset_password', 'own@example.com', 'en', '{}')",
        )
        .execute(&pool)
        .await
        .expect("a reset");
        let mut tx = pool.begin().await.expect("tx");
        let first = claim_due(&mut *tx, 8, LEASE, MailLimits::new(0, 3))
            .await
            .expect("leased");
        assert_eq!(first.len(), 3);
        assert_eq!(of(&first, None), 1, "the reset is among the second's three");
        tx.commit().await.expect("commit");
    }

    /// Within one second the server hands out no more than its limit,
    /// whoever's mail it is (two claims in one transaction share its
    /// clock: the same second).
    #[sqlx::test(migrations = "../../migrations")]
    async fn the_server_sends_no_more_than_its_limit_a_second(pool: PgPool) {
        let (a, b) = (tenant(&pool).await, tenant(&pool).await);
        queue(&pool, Some(a), 6).await;
        queue(&pool, Some(b), 6).await;
        queue(&pool, None, 6).await;
        let limits = MailLimits::new(0, 5);
        let mut tx = pool.begin().await.expect("tx");
        let first = claim_due(&mut *tx, 8, LEASE, limits).await.expect("leased");
        assert_eq!(first.len(), 5);
        // Round-robin: every queue's first mails among them.
        for queue in [Some(a), Some(b), None] {
            assert!(of(&first, queue) >= 1, "{queue:?}");
        }
        let second = claim_due(&mut *tx, 8, LEASE, limits).await.expect("leased");
        assert!(second.is_empty(), "the second's five are spent");
        let counted: i32 =
            sqlx::query_scalar("SELECT attempts FROM mail_windows WHERE kind = 'server'")
                .fetch_one(&mut *tx)
                .await
                .expect("counted");
        assert_eq!(counted, 5);
        tx.commit().await.expect("commit");
        // A second later (as far as the count knows), five more.
        sqlx::query("UPDATE mail_windows SET window_start = window_start - interval '1 second'")
            .execute(&pool)
            .await
            .expect("a second later");
        let mut tx = pool.begin().await.expect("tx");
        let third = claim_due(&mut *tx, 8, LEASE, limits).await.expect("leased");
        assert_eq!(third.len(), 5);
        tx.commit().await.expect("commit");
    }

    /// Eight relays claiming at once: none fails (their upserts of the
    /// same windows never wait on each other crosswise), the count holds
    /// every attempt made, and a tenant's share is passed by at most one
    /// round per further relay.
    #[sqlx::test(migrations = "../../migrations")]
    async fn relays_claiming_at_once_count_every_attempt(pool: PgPool) {
        let tenants = [
            tenant(&pool).await,
            tenant(&pool).await,
            tenant(&pool).await,
        ];
        for t in tenants {
            queue(&pool, Some(t), 40).await;
        }
        let limits = MailLimits::new(10, 0);
        let claimers = (0..8).map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut leased = 0;
                loop {
                    let due = claim_due(&pool, 3, LEASE, limits).await.expect("claim");
                    if due.is_empty() {
                        return leased;
                    }
                    leased += due.len();
                }
            })
        });
        let mut leased = 0;
        for claimer in futures_util::future::join_all(claimers).await {
            leased += claimer.expect("claimer");
        }
        let rows: Vec<(Uuid, i64, i64)> = sqlx::query_as(
            "SELECT m.tenant_id, count(*) FILTER (WHERE m.attempts > 0),
                    (SELECT coalesce(sum(w.attempts), 0) FROM mail_windows w
                      WHERE w.kind = 'tenant' AND w.tenant_id = m.tenant_id)
               FROM mail_outbox m GROUP BY m.tenant_id",
        )
        .fetch_all(&pool)
        .await
        .expect("counts");
        assert_eq!(rows.len(), 3);
        let mut attempted = 0;
        for (t, tried, counted) in rows {
            assert_eq!(tried, counted, "{t}: every attempt counted once");
            let windows: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM mail_windows WHERE kind = 'tenant' AND tenant_id = $1",
            )
            .bind(t)
            .fetch_one(&pool)
            .await
            .expect("windows");
            assert!(
                tried >= 10 && tried <= windows * (10 + 7 * 3),
                "{t}: {tried} in {windows} minute(s)"
            );
            attempted += tried;
        }
        assert_eq!(usize::try_from(attempted).expect("n"), leased);
    }

    #[sqlx::test(migrations = "../../migrations")]
    async fn old_windows_are_forgotten_and_recent_ones_kept(pool: PgPool) {
        let t = tenant(&pool).await;
        sqlx::query(
            "INSERT INTO mail_windows (kind, tenant_id, window_start, attempts) VALUES
               ('tenant', $1, date_trunc('minute', now()) - interval '61 minutes', 3),
               ('tenant', $1, date_trunc('minute', now()) - interval '59 minutes', 4),
               ('server', '00000000-0000-0000-0000-000000000000', now() - interval '2 hours', 1)",
        )
        .bind(t)
        .execute(&pool)
        .await
        .expect("windows");
        assert_eq!(forget_windows(&pool).await.expect("forgot"), 2);
        let left: Vec<i32> = sqlx::query_scalar("SELECT attempts FROM mail_windows")
            .fetch_all(&pool)
            .await
            .expect("left");
        assert_eq!(left, [4]);
    }

    #[test]
    fn zero_is_no_limit() {
        assert_eq!(MailLimits::new(0, 0), MailLimits::none());
        assert_eq!(
            MailLimits::new(600, 14),
            MailLimits {
                tenant_per_minute: Some(600),
                server_per_second: Some(14)
            }
        );
        assert_eq!(
            MailLimits::new(u32::MAX, 1).as_sql(),
            (Some(i32::MAX), Some(1))
        );
    }
}
