//! The server's background loops (the webhook relay, the mail relay, the
//! refund sweeper), and how they stop.
//!
//! Each loop runs rounds: a round leases work, does it, and records it
//! (a mail sent and then marked sent). Cutting a round off between the
//! doing and the recording is what repeats work: the lease runs out and
//! the next relay sends the mail again. So a deploy's stop never cuts a
//! round off: [`Rounds::stop`] tells every loop to lease nothing more and
//! waits for the rounds already begun to finish, up to the longest a round
//! can take (its lease: past it, its record would be refused anyway).
//! What is left waits in
//! the outbox for the next server. Only a kill (SIGKILL, a crash) still
//! cuts a round off: its mails go again after their lease, at least once.

use std::{future::Future, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

/// The background loops of one server.
#[derive(Debug)]
pub struct Rounds {
    stop: watch::Sender<bool>,
    loops: Vec<(&'static str, JoinHandle<()>)>,
}

impl Default for Rounds {
    fn default() -> Self {
        Self::new()
    }
}

impl Rounds {
    pub fn new() -> Self {
        Self {
            stop: watch::Sender::new(false),
            loops: Vec::new(),
        }
    }

    /// Runs `round` until [`Self::stop`]: straight on while a round did
    /// something (`Ok(true)`), pausing `idle` when it found nothing to do
    /// or failed. A round that has begun is never cut off by the stop.
    pub fn spawn<F, Fut>(&mut self, what: &'static str, idle: Duration, mut round: F)
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<bool>> + Send,
    {
        let mut stop = self.stop.subscribe();
        let task = tokio::spawn(async move {
            while !*stop.borrow_and_update() {
                let busy = match round().await {
                    Ok(busy) => busy,
                    Err(error) => {
                        tracing::warn!(error = format!("{error:#}"), what, "round failed");
                        false
                    }
                };
                if !busy {
                    tokio::select! {
                        () = tokio::time::sleep(idle) => {}
                        // A stop (or the `Rounds` gone, which is one too).
                        _ = stop.changed() => break,
                    }
                }
            }
            tracing::debug!(what, "stopped");
        });
        self.loops.push((what, task));
    }

    /// Tells every loop to begin no more rounds, and waits (at most
    /// `within`) for the rounds under way to finish.
    pub async fn stop(self, within: Duration) {
        let _ = self.stop.send(true);
        let deadline = tokio::time::Instant::now() + within;
        for (what, task) in self.loops {
            match tokio::time::timeout_at(deadline, task).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::error!(what, %error, "a background loop panicked"),
                Err(_) => tracing::warn!(
                    what,
                    within_secs = within.as_secs(),
                    "a round did not finish in time: what it had leased goes again after its lease"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    /// A stop that arrives while a round runs lets that round finish, and
    /// no round begins after it.
    #[tokio::test]
    async fn a_stop_lets_the_round_under_way_finish_and_begins_no_other() {
        let (begun, finished) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut rounds = Rounds::new();
        let (b, f) = (begun.clone(), finished.clone());
        rounds.spawn("test", Duration::from_millis(1), move || {
            let (b, f) = (b.clone(), f.clone());
            async move {
                b.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(200)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(true)
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        rounds.stop(Duration::from_secs(5)).await;
        assert_eq!(begun.load(Ordering::SeqCst), 1, "no round after the stop");
        assert_eq!(finished.load(Ordering::SeqCst), 1, "the round finished");
    }

    /// An idle loop stops at once, not after its pause.
    #[tokio::test]
    async fn an_idle_loop_stops_at_once() {
        let mut rounds = Rounds::new();
        rounds.spawn("idle", Duration::from_secs(3600), || async { Ok(false) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tokio::time::timeout(Duration::from_secs(2), rounds.stop(Duration::from_secs(60)))
            .await
            .expect("stopped without waiting out the pause");
    }
}
