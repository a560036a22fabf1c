//! The load a fault meets: a contended mix, so that a fault that could
//! break an invariant would. Many learners race for a few shared codes, a
//! share sits at its quota's edge, one learner enters several codes from
//! several sessions at once, and learners replay one request id several
//! times at once. Every learner enters its code and opens the resource,
//! retrying what the API documents as retryable, until it is in or is
//! given its group's final answer. Split out of `main.rs` to keep each
//! file short.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use harness::drive;
use serde_json::{Value, json};
use uuid::Uuid;

/// Which part of the mix a learner is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub(crate) enum Group {
    /// Several learners to each code of a small pool: one wins each.
    Racers,
    /// A share whose quota is half its learners: exactly the quota get in.
    QuotaEdge,
    /// One account, several sessions, a different code in each: one code
    /// binds, every session gets the same access.
    SeveralCodes,
    /// Each opening sent several times at once under one request id.
    Replays,
}

impl Group {
    /// The refusals that are this group's final, documented answers (the
    /// learner stops there). Anywhere else they are wrong answers.
    fn final_refusals(self) -> &'static [&'static str] {
        match self {
            Self::Racers => &["code_bound"],
            Self::QuotaEdge => &["quota_exhausted"],
            Self::SeveralCodes => &["already_has_access"],
            Self::Replays => &[],
        }
    }

    /// How many copies of each opening are sent at once.
    fn copies(self) -> usize {
        match self {
            Self::Replays => 3,
            _ => 1,
        }
    }
}

/// The answers the API documents as "try again" (with `Retry-After`).
const RETRYABLE_409: [&str; 2] = ["busy_retry", "idempotency_key_in_flight"];

/// One learner (one session) of the mix.
pub(crate) struct Learner {
    pub(crate) id: Uuid,
    pub(crate) client: reqwest::Client,
    pub(crate) code: String,
    pub(crate) share: Arc<drive::Share>,
    pub(crate) group: Group,
    /// Its request id for the opening (shared by its replays).
    pub(crate) request_id: String,
}

/// How one request looked to its client.
struct Answer {
    /// `ok`, a documented error, or `undocumented …`.
    kind: String,
    ok: bool,
    /// The group's final refusal.
    refused: bool,
    retry_after: Option<u64>,
    body: Value,
}

async fn answer_of(
    result: Result<reqwest::Response, reqwest::Error>,
    group: Group,
    instance: usize,
) -> Answer {
    let response = match result {
        Ok(response) => response,
        Err(_) => {
            return Answer {
                kind: format!("connection lost to instance {}", instance + 1),
                ok: false,
                refused: false,
                retry_after: None,
                body: Value::Null,
            };
        }
    };
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let body: Value = response.json().await.unwrap_or_default();
    let code = body["code"].as_str().unwrap_or("").to_owned();
    let (kind, ok, refused) = match (status, retry_after.is_some()) {
        (200..=299, _) => ("ok".to_owned(), true, false),
        (503, true) => ("503 + Retry-After".to_owned(), false, false),
        (409, true) if RETRYABLE_409.contains(&code.as_str()) => {
            (format!("409 {code}"), false, false)
        }
        _ if group.final_refusals().contains(&code.as_str()) => {
            (format!("{status} {code} (final)"), false, true)
        }
        _ => (format!("undocumented {status} {code}"), false, false),
    };
    Answer {
        kind,
        ok,
        refused,
        retry_after,
        body,
    }
}

/// An opening answered 200: who, on which share, holding which code.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub(crate) principal: Uuid,
    pub(crate) share: Uuid,
    pub(crate) code: Option<Uuid>,
}

/// What the load recorded.
#[derive(Default)]
pub(crate) struct Log {
    /// (when, outcome) of every request.
    pub(crate) requests: Vec<(Instant, String)>,
    /// Every opening answered 200 (replays included).
    pub(crate) grants: Vec<Grant>,
    /// Learners (sessions) in, by group, and when each got in.
    pub(crate) inside: Vec<(Group, Uuid, Instant)>,
    /// Learners (sessions) given their group's final refusal.
    pub(crate) refused: Vec<Group>,
}

impl Log {
    /// Learners (sessions) that are in or were refused for good.
    pub(crate) fn settled(&self) -> usize {
        self.inside.len() + self.refused.len()
    }
}

/// Every learner enters its code and opens the resource, retrying
/// documented "try again" answers (with its one request id), until it is
/// in or refused for good; learners who are in keep fetching bytes. Runs
/// until `until`.
pub(crate) async fn drive_load(
    bases: Arc<Vec<String>>,
    learners: Vec<Learner>,
    log: Arc<Mutex<Log>>,
    until: Arc<Mutex<Option<Instant>>>,
) {
    let tasks = learners.into_iter().enumerate().map(|(i, learner)| {
        let (bases, log, until) = (bases.clone(), log.clone(), until.clone());
        tokio::spawn(async move {
            let Learner {
                id,
                client,
                code,
                share,
                group,
                request_id,
            } = learner;
            let mut entered = false;
            let mut inside = false;
            let mut attempt = i;
            loop {
                if until
                    .lock()
                    .expect("lock")
                    .is_some_and(|t| Instant::now() >= t)
                {
                    return;
                }
                // Alternate instances: a dead one is left for the other.
                let instance = attempt % bases.len();
                let base = &bases[instance];
                attempt += 1;
                // Enter the code, open the resource (retrying with one
                // request id, its copies at once), then stream its bytes
                // under the grant.
                let answers: Vec<Answer> = if inside {
                    vec![
                        answer_of(
                            client.get(share.content_url(base)).send().await,
                            group,
                            instance,
                        )
                        .await,
                    ]
                } else if entered {
                    let copies = (0..group.copies()).map(|_| async {
                        let result = client
                            .post(share.open_url(base))
                            .header("idempotency-key", &request_id)
                            .send()
                            .await;
                        answer_of(result, group, instance).await
                    });
                    futures::future::join_all(copies).await
                } else {
                    let result = client
                        .post(format!("{base}/api/v1/s/{}/code", share.slug))
                        .json(&json!({ "code": code }))
                        .send()
                        .await;
                    vec![answer_of(result, group, instance).await]
                };
                let ok = answers.iter().any(|a| a.ok);
                let refused = !ok && answers.iter().any(|a| a.refused);
                let retry_after = answers.iter().filter_map(|a| a.retry_after).max();
                {
                    let mut log = log.lock().expect("lock");
                    let now = Instant::now();
                    for answer in &answers {
                        log.requests.push((now, answer.kind.clone()));
                        if answer.ok && entered && !inside {
                            log.grants.push(Grant {
                                principal: id,
                                share: share.id,
                                code: answer.body["code_id"].as_str().and_then(|c| c.parse().ok()),
                            });
                        }
                    }
                    if ok && entered && !inside {
                        log.inside.push((group, id, now));
                    }
                    if refused {
                        log.refused.push(group);
                    }
                }
                if refused {
                    return;
                }
                if ok && !entered {
                    entered = true;
                } else if ok {
                    inside = true;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                } else {
                    let wait = retry_after.map_or(100, |s| (s * 1000).clamp(50, 500));
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
            }
        })
    });
    futures::future::join_all(tasks).await;
}
