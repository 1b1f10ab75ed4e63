//! The producer: claim as many due jobs as there are free slots, hand each to
//! an executor task, then wait for the next due time, a wake-up, a free slot
//! or shutdown, whichever comes first.

use crate::Engine;
use finality_core::Timestamp;
use finality_store::ClaimRequest;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

impl Engine {
    /// Run until `shutdown` is cancelled. In-flight polls are finished and
    /// their jobs released (rescheduled), not left for their leases to expire.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        self.run_loop(shutdown, false).await;
    }

    /// Run until no job is left to poll (every payment final or parked in
    /// review): the demo and simulations end this way.
    pub async fn run_until_idle(self: Arc<Self>, shutdown: CancellationToken) {
        self.run_loop(shutdown, true).await;
    }

    /// Claim one batch due now and poll it to completion; returns how many
    /// jobs ran. For tests that step the engine on a virtual clock.
    pub async fn run_once(self: &Arc<Self>) -> finality_store::Result<usize> {
        let jobs = self.claim(self.config.batch_size).await?;
        let n = jobs.len();
        let mut tasks = JoinSet::new();
        for job in jobs {
            let me = self.clone();
            tasks.spawn(async move { me.execute(job).await });
        }
        while tasks.join_next().await.is_some() {}
        Ok(n)
    }

    async fn claim(&self, limit: u32) -> finality_store::Result<Vec<finality_store::ClaimedJob>> {
        let now = self.clock.now();
        self.store
            .claim(&ClaimRequest {
                now,
                limit,
                lease_until: now.plus(self.config.lease),
                worker: self.config.worker_id.clone(),
            })
            .await
    }

    async fn run_loop(self: Arc<Self>, shutdown: CancellationToken, stop_when_idle: bool) {
        let mut wake = self.store.subscribe();
        let mut tasks: JoinSet<()> = JoinSet::new();
        let slots = self.config.concurrency;
        let mut db_backoff = Duration::from_millis(100);
        tracing::info!(worker = %self.config.worker_id, slots, "poll engine started");
        while !shutdown.is_cancelled() {
            while tasks.try_join_next().is_some() {}
            let free = slots.saturating_sub(tasks.len());
            if free > 0 {
                let limit = u32::try_from(free)
                    .unwrap_or(u32::MAX)
                    .min(self.config.batch_size);
                match self.claim(limit).await {
                    Ok(jobs) => {
                        db_backoff = Duration::from_millis(100);
                        let full = jobs.len() as u32 == limit;
                        for job in jobs {
                            let me = self.clone();
                            tasks.spawn(async move { me.execute(job).await });
                        }
                        if full && tasks.len() < slots {
                            continue; // more may be due right now
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %e, retry_in = ?db_backoff, "claiming due polls failed");
                        tokio::select! {
                            _ = tokio::time::sleep(db_backoff) => {}
                            _ = shutdown.cancelled() => {}
                        }
                        db_backoff = (db_backoff * 2).min(Duration::from_secs(30));
                        continue;
                    }
                }
            }
            if !self
                .wait(&mut tasks, &mut wake, &shutdown, stop_when_idle)
                .await
            {
                break;
            }
        }
        while tasks.join_next().await.is_some() {}
        tracing::info!(worker = %self.config.worker_id, "poll engine stopped");
    }

    /// Wait until there may be work. Returns false when the loop should end
    /// (idle and asked to stop when idle).
    async fn wait(
        &self,
        tasks: &mut JoinSet<()>,
        wake: &mut tokio::sync::watch::Receiver<u64>,
        shutdown: &CancellationToken,
        stop_when_idle: bool,
    ) -> bool {
        let full = tasks.len() >= self.config.concurrency;
        if let Some(virtual_clock) = self.clock.as_virtual() {
            // Virtual time may only jump when nothing is in flight, or an
            // in-flight poll would see its lease expire under it.
            if !tasks.is_empty() {
                tokio::select! {
                    _ = tasks.join_next() => {}
                    _ = wake.changed() => {}
                    _ = shutdown.cancelled() => {}
                }
                return true;
            }
            return match self.store.next_due_at().await {
                Ok(Some(t)) => {
                    virtual_clock.advance_to(t);
                    true
                }
                Ok(None) if stop_when_idle => false,
                Ok(None) => {
                    tokio::select! {
                        _ = wake.changed() => {}
                        _ = shutdown.cancelled() => {}
                    }
                    true
                }
                Err(e) => {
                    tracing::error!(error = %e, "reading the next due poll failed");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    true
                }
            };
        }

        let next_due = if full {
            None
        } else {
            match self.store.next_due_at().await {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!(error = %e, "reading the next due poll failed");
                    None
                }
            }
        };
        if stop_when_idle && tasks.is_empty() && next_due.is_none() {
            return false;
        }
        let now = self.clock.now();
        let sleep_for = next_due
            .map_or(self.config.idle_check, |t: Timestamp| t.since(now))
            .min(self.config.idle_check);
        tokio::select! {
            _ = tokio::time::sleep(sleep_for) => {}
            _ = wake.changed() => {}
            Some(_) = tasks.join_next(), if full => {}
            _ = shutdown.cancelled() => {}
        }
        true
    }
}
