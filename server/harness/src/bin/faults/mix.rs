//! The contended mix every fault meets: its shares, codes and learners,
//! and what must hold of them afterwards, asked in SQL independently of the
//! server's own queries. A fault that let two learners share a code, a
//! share pass its quota, an account hold two codes of a share, or a
//! replayed request count twice would show here (and in the engine's
//! invariants, which the scenario checks too). How learners drive it is
//! `load.rs`.

use std::{collections::BTreeSet, sync::Arc};

use anyhow::Context as _;
use harness::drive;
use serde_json::json;
use uuid::Uuid;

use crate::load::{Grant, Group, Learner, Log};

/// Sessions of the one learner who enters several codes at once.
const SESSIONS: usize = 4;

/// One share of the mix and what must be true of it at the end.
struct Part {
    share: Uuid,
    /// Codes bound on it at the end, exactly.
    bound: usize,
}

/// The mix of one fault's run.
pub(crate) struct Mix {
    racers: Part,
    quota_edge: Part,
    several: Part,
    replays: Part,
    /// The account behind every session of [`Group::SeveralCodes`].
    several_account: Uuid,
    /// Each replaying learner and the request id it opens under.
    replay_request_ids: Vec<(Uuid, String)>,
    quota: usize,
    /// Learners (accounts) who must end up in.
    pub(crate) expected_in: usize,
}

/// Sizes of the mix for `n` learner accounts (at least 12).
#[derive(Debug, PartialEq, Eq)]
struct Sizes {
    racers: usize,
    shared_codes: usize,
    quota_learners: usize,
    quota: usize,
    replayers: usize,
}

impl Sizes {
    fn of(n: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(
            n >= 12,
            "the contended mix needs at least 12 learners, not {n}"
        );
        let racers = n / 2;
        let quota_learners = n / 4;
        Ok(Self {
            racers,
            // Five racers to each code.
            shared_codes: (racers / 5).max(1),
            quota_learners,
            // The quota's edge: half of them get in.
            quota: (quota_learners / 2).max(1),
            // The rest, less the one with several codes.
            replayers: n - racers - quota_learners - 1,
        })
    }
}

impl Mix {
    /// Makes the mix's four shares, their codes and `n` learner accounts
    /// (plus the extra sessions of the one with several codes), signed in.
    pub(crate) async fn build(
        bases: &[String],
        admin: &reqwest::Client,
        tenant: Uuid,
        pool: &sqlx::PgPool,
        n: usize,
        name: &str,
    ) -> anyhow::Result<(Self, Vec<Learner>)> {
        let sizes = Sizes::of(n)?;
        let base = &bases[0];
        let mut shares = Vec::new();
        for (part, settings) in [
            ("racers", json!({})),
            ("quota edge", json!({ "quota": sizes.quota })),
            ("several codes", json!({})),
            ("replays", json!({})),
        ] {
            let title = format!("{name}: {part}");
            shares.push(Arc::new(
                drive::new_share_with(admin, base, tenant, &title, settings).await?,
            ));
        }
        let [racing, edge, several, replayed] =
            <[Arc<drive::Share>; 4]>::try_from(shares).map_err(|_| anyhow::anyhow!("4 shares"))?;
        let shared_codes = drive::issue(admin, base, racing.id, sizes.shared_codes).await?;
        let edge_codes = drive::issue(admin, base, edge.id, sizes.quota_learners).await?;
        let several_codes = drive::issue(admin, base, several.id, SESSIONS).await?;
        let replay_codes = drive::issue(admin, base, replayed.id, sizes.replayers).await?;

        let mut accounts = drive::learners(bases, pool, n).await?.into_iter();
        let mut learners = Vec::with_capacity(n + SESSIONS);
        let mut add = |(id, client), code: &String, share: &Arc<drive::Share>, group| {
            learners.push(Learner {
                id,
                client,
                code: code.clone(),
                share: share.clone(),
                group,
                request_id: format!("faults-{}", Uuid::new_v4()),
            });
        };
        for i in 0..sizes.racers {
            let account = accounts.next().context("a racer")?;
            add(
                account,
                &shared_codes[i % shared_codes.len()],
                &racing,
                Group::Racers,
            );
        }
        for code in &edge_codes {
            let account = accounts.next().context("a learner at the quota's edge")?;
            add(account, code, &edge, Group::QuotaEdge);
        }
        let (several_account, first) = accounts.next().context("the learner with several codes")?;
        add(
            (several_account, first),
            &several_codes[0],
            &several,
            Group::SeveralCodes,
        );
        for (k, code) in several_codes.iter().enumerate().skip(1) {
            let session = drive::signed_in(
                &bases[k % bases.len()],
                &drive::learner_email(several_account),
                drive::PASSWORD,
            )
            .await?;
            add(
                (several_account, session),
                code,
                &several,
                Group::SeveralCodes,
            );
        }
        for code in &replay_codes {
            let account = accounts.next().context("a replaying learner")?;
            add(account, code, &replayed, Group::Replays);
        }
        anyhow::ensure!(accounts.next().is_none(), "a learner left out of the mix");
        let replay_request_ids = learners
            .iter()
            .filter(|l| l.group == Group::Replays)
            .map(|l| (l.id, l.request_id.clone()))
            .collect();
        let mix = Self {
            racers: Part {
                share: racing.id,
                bound: sizes.shared_codes,
            },
            quota_edge: Part {
                share: edge.id,
                bound: sizes.quota,
            },
            several: Part {
                share: several.id,
                bound: 1,
            },
            replays: Part {
                share: replayed.id,
                bound: sizes.replayers,
            },
            several_account,
            replay_request_ids,
            quota: sizes.quota,
            expected_in: sizes.shared_codes + sizes.quota + 1 + sizes.replayers,
        };
        Ok((mix, learners))
    }

    /// The share whose learners replay their openings.
    pub(crate) fn replays_share(&self) -> Uuid {
        self.replays.share
    }

    /// Learners (accounts) in so far.
    pub(crate) fn learners_in(log: &Log) -> usize {
        log.inside
            .iter()
            .map(|(_, id, _)| *id)
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// What does not hold at the end, each in a sentence (empty: all of
    /// it holds).
    pub(crate) async fn mismatches(&self, pool: &sqlx::PgPool) -> anyhow::Result<Vec<String>> {
        let mut found = Vec::new();
        for (what, part) in [
            ("racers' shared codes", &self.racers),
            ("quota edge", &self.quota_edge),
            ("several codes", &self.several),
            ("replays", &self.replays),
        ] {
            let bound: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL",
            )
            .bind(part.share)
            .fetch_one(pool)
            .await
            .context("counting bound codes")?;
            if usize::try_from(bound)? != part.bound {
                found.push(format!("{what}: {bound} codes bound, not {}", part.bound));
            }
        }
        // The quota is counted in its slots (the settlement debits one).
        let used: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(used), 0)::bigint FROM share_quota_slots WHERE share_id = $1",
        )
        .bind(self.quota_edge.share)
        .fetch_one(pool)
        .await
        .context("reading the quota used")?;
        if usize::try_from(used)? != self.quota {
            found.push(format!(
                "quota edge: {used} of the quota used, not {}",
                self.quota
            ));
        }
        let holders: Vec<Uuid> = sqlx::query_scalar(
            "SELECT bound_principal FROM auth_codes WHERE share_id = $1 AND bound_principal IS NOT NULL",
        )
        .bind(self.several.share)
        .fetch_all(pool)
        .await
        .context("reading the several codes' holders")?;
        if holders.iter().any(|h| *h != self.several_account) {
            found.push(format!("several codes: held by {holders:?}"));
        }
        // Each replaying learner's binding counted exactly once, under the
        // request id it replayed (from the bound codes, so that none
        // counted at all shows too).
        let (principals, request_ids): (Vec<Uuid>, Vec<String>) =
            self.replay_request_ids.iter().cloned().unzip();
        let miscounted: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (
               SELECT c.id FROM auth_codes c
                 LEFT JOIN unnest($2::uuid[], $3::text[]) AS own (principal, request_id)
                        ON own.principal = c.bound_principal
                 LEFT JOIN access_records a ON a.code_id = c.id AND a.principal_id = c.bound_principal
                WHERE c.share_id = $1 AND c.bound_principal IS NOT NULL
                GROUP BY c.id
               HAVING count(a.id) <> 1
                   OR NOT coalesce(bool_and(a.request_id = own.request_id), false)) AS wrong",
        )
        .bind(self.replays.share)
        .bind(&principals)
        .bind(&request_ids)
        .fetch_one(pool)
        .await
        .context("counting the replays' records")?;
        if miscounted > 0 {
            found.push(format!(
                "replays: {miscounted} bindings counted other than once under their request id"
            ));
        }
        Ok(found)
    }
}

/// Openings answered 200 whose learner does not hold the code the answer
/// named, with an access record under it: successes that did not commit,
/// or named the wrong code.
pub(crate) async fn lost(pool: &sqlx::PgPool, grants: &[Grant]) -> anyhow::Result<usize> {
    let mut lost = 0;
    for grant in grants {
        let Some(code) = grant.code else {
            lost += 1;
            continue;
        };
        let held: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM auth_codes c
                            WHERE c.id = $1 AND c.share_id = $2 AND c.bound_principal = $3
                              AND EXISTS (SELECT 1 FROM access_records a
                                          WHERE a.code_id = c.id AND a.principal_id = $3))",
        )
        .bind(code)
        .bind(grant.share)
        .bind(grant.principal)
        .fetch_one(pool)
        .await
        .context("checking a granted learner")?;
        if !held {
            lost += 1;
        }
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::Sizes;

    #[test]
    fn the_mix_uses_every_learner_and_keeps_each_part_contended() {
        for n in [12, 60, 61, 300] {
            let s = Sizes::of(n).expect("sizes");
            assert_eq!(s.racers + s.quota_learners + 1 + s.replayers, n, "{n}");
            assert!(s.racers > s.shared_codes, "{n}: {s:?}");
            assert!(s.quota_learners > s.quota, "{n}: {s:?}");
            assert!(s.replayers >= 1, "{n}: {s:?}");
        }
        assert!(Sizes::of(11).is_err());
    }
}
