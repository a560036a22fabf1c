//! The load a fault meets: every learner entering its code and opening the
//! resource, concurrently, and what each request looked like to the
//! client. Split out of `main.rs` to keep each file short.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use harness::drive;
use serde_json::json;
use uuid::Uuid;

/// One request's outcome as a client sees it.
fn classify(result: &Result<reqwest::Response, reqwest::Error>) -> String {
    match result {
        Ok(r) if r.status().is_success() => "ok".to_owned(),
        Ok(r) => {
            let retry_after = r.headers().contains_key(reqwest::header::RETRY_AFTER);
            match (r.status().as_u16(), retry_after) {
                (503, true) => "503 + Retry-After".to_owned(),
                (409, true) => "409 busy_retry".to_owned(),
                (status, _) => format!("undocumented {status}"),
            }
        }
        Err(_) => "connection lost".to_owned(),
    }
}

/// What the load recorded.
#[derive(Default)]
pub(crate) struct Log {
    /// (when, outcome) of every request.
    pub(crate) requests: Vec<(Instant, String)>,
    /// Learners answered 200 on their resource, and when.
    pub(crate) granted: Vec<Uuid>,
    pub(crate) granted_at: Vec<Instant>,
}

/// Every learner enters its code and opens the resource, retrying (with
/// its own idempotency key) until it is in; learners who are in keep
/// coming back. Runs until `stop` or until everyone is in past `settle`.
pub(crate) async fn drive_load(
    bases: Arc<Vec<String>>,
    share: Arc<drive::Share>,
    learners: Vec<(Uuid, reqwest::Client, String)>,
    log: Arc<Mutex<Log>>,
    until: Arc<Mutex<Option<Instant>>>,
) {
    let tasks = learners
        .into_iter()
        .enumerate()
        .map(|(i, (id, client, code))| {
            let (bases, share, log, until) =
                (bases.clone(), share.clone(), log.clone(), until.clone());
            tokio::spawn(async move {
                let key = format!("faults-{id}");
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
                    let base = &bases[attempt % bases.len()];
                    attempt += 1;
                    // Enter the code, open the resource (retrying with one
                    // request id), then stream its bytes under the grant.
                    let result = if inside {
                        client.get(share.content_url(base)).send().await
                    } else if entered {
                        client
                            .post(share.open_url(base))
                            .header("idempotency-key", &key)
                            .send()
                            .await
                    } else {
                        client
                            .post(format!("{base}/api/v1/s/{}/code", share.slug))
                            .json(&json!({ "code": code }))
                            .send()
                            .await
                    };
                    let mut outcome = classify(&result);
                    let ok = outcome == "ok";
                    let retry_after = result.as_ref().ok().and_then(|r| {
                        r.headers()
                            .get(reqwest::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                    });
                    if let Ok(response) = result
                        && outcome.starts_with("undocumented")
                    {
                        // Name the error code: what a client would see.
                        let body: serde_json::Value = response.json().await.unwrap_or_default();
                        if let Some(code) = body["code"].as_str() {
                            outcome = format!("{outcome} {code}");
                        }
                    }
                    {
                        let mut log = log.lock().expect("lock");
                        log.requests.push((Instant::now(), outcome));
                        if ok && entered && !inside {
                            log.granted.push(id);
                            log.granted_at.push(Instant::now());
                        }
                    }
                    if ok && !entered {
                        entered = true;
                    } else if ok {
                        inside = true;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    } else {
                        let wait = retry_after.map_or(100, |s| (s * 1000).min(500));
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    }
                }
            })
        });
    futures::future::join_all(tasks).await;
}
