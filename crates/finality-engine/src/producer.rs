//! The producer: claim jobs due now or within the look-ahead window, as many
//! as there is room for, hand each to an executor task, then wait for the
//! next due time, a wake-up, a free slot or shutdown, whichever comes first.
//!
//! The in-memory timer: a job claimed before it is due sleeps in its task
//! until its `next_poll_at` (a tokio timer, millisecond resolution), then
//! takes one of `concurrency` execution permits. Its lease runs from the
//! end of the look-ahead window, so holding it costs no safety: if this
//! process dies, the job falls due again when the lease ends. Claims happen
//! about twice per window instead of once per job, which is what makes
//! polls start within milliseconds of their time.

use crate::liveness::Liveness;
use crate::Engine;
use finality_core::{Schedule, Timestamp};
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
        self.queue
            .claim(&ClaimRequest {
                now,
                limit,
                lease_until: now.plus(self.config.lease),
                worker: self.config.worker_id.clone(),
                weights: self.weights.of(&self.providers),
                fair: self.config.fair_claiming,
            })
            .await
    }

    /// The look-ahead window in force: none on a virtual clock, where time
    /// only moves when the engine is idle and a held job would never fire.
    fn lookahead(&self) -> Duration {
        if self.clock.as_virtual().is_some() {
            Duration::ZERO
        } else {
            self.config.lookahead
        }
    }

    /// Claim jobs due by `now + lookahead`, leased from the window's end.
    async fn claim_ahead(
        &self,
        limit: u32,
    ) -> finality_store::Result<(Vec<finality_store::ClaimedJob>, Timestamp)> {
        let now = self.clock.now();
        let horizon = now.plus(self.lookahead());
        let lease_until = horizon.plus(self.config.lease);
        let jobs = self
            .queue
            .claim(&ClaimRequest {
                now: horizon,
                limit,
                lease_until,
                worker: self.config.worker_id.clone(),
                weights: self.weights.of(&self.providers),
                fair: self.config.fair_claiming,
            })
            .await?;
        Ok((jobs, lease_until))
    }

    async fn run_loop(self: Arc<Self>, shutdown: CancellationToken, stop_when_idle: bool) {
        let mut wake = self.queue.subscribe();
        let mut tasks: JoinSet<()> = JoinSet::new();
        let permits = crate::permits::FairPermits::new(self.config.concurrency);
        let lookahead = self.lookahead();
        // Room for the executing jobs plus the ones waiting for their time.
        let capacity = self.config.concurrency
            + if lookahead.is_zero() {
                0
            } else {
                self.config.max_held
            };
        // Retries as data: 100 ms doubling to 30 s while the database fails.
        let db_retry = Schedule::Exponential {
            base: Duration::from_millis(100),
            factor: 2.0,
            cap: Duration::from_secs(30),
            jitter: 0.2,
        };
        let mut db_failures = 0u32;
        // Dropped with this loop (also when its task is aborted), so a node
        // that stops running stops beating.
        let beat = AbortOnDrop(tokio::spawn(self.clone().heartbeats()));
        tracing::info!(worker = %self.config.worker_id, slots = self.config.concurrency, ?lookahead, "poll engine started");
        // Looked up once, not on every round of the claim loop.
        let leases_held = metrics::gauge!("finality_poll_leases_held");
        while !shutdown.is_cancelled() {
            while tasks.try_join_next().is_some() {}
            // Polls this node holds a lease on: executing or waiting for
            // their time (set here, where the set changes, not per scrape).
            leases_held.set(tasks.len() as f64);
            let free = capacity.saturating_sub(tasks.len());
            if free > 0 {
                let limit = u32::try_from(free)
                    .unwrap_or(u32::MAX)
                    .min(self.config.batch_size);
                let claimed = tracing::Instrument::instrument(
                    self.claim_ahead(limit),
                    tracing::debug_span!("claim", limit),
                )
                .await;
                match claimed {
                    Ok((jobs, lease_until)) => {
                        db_failures = 0;
                        let full = jobs.len() as u32 == limit;
                        for job in jobs {
                            let me = self.clone();
                            let permits = permits.clone();
                            // Every line logged about this poll carries the
                            // payment and its provider.
                            let span = tracing::info_span!(
                                "poll",
                                payment_id = %job.payment_id,
                                provider = %job.provider
                            );
                            tasks.spawn(tracing::Instrument::instrument(
                                async move { me.execute_at(job, lease_until, permits).await },
                                span,
                            ));
                        }
                        if full && tasks.len() < capacity {
                            continue; // more may be due right now
                        }
                    }
                    Err(e) => {
                        let retry_in =
                            db_retry.delay(db_failures, rand::random::<f64>() * 2.0 - 1.0);
                        db_failures = db_failures.saturating_add(1);
                        tracing::error!(error = %e, ?retry_in, "claiming due polls failed");
                        tokio::select! {
                            _ = tokio::time::sleep(retry_in) => {}
                            _ = shutdown.cancelled() => {}
                        }
                        continue;
                    }
                }
            }
            if !self
                .wait(&mut tasks, &mut wake, &shutdown, stop_when_idle, capacity)
                .await
            {
                break;
            }
        }
        // Held jobs fire at their time (at most one window away) and
        // in-flight ones finish; whatever lease is left (a completion that
        // could not be written) is handed back for another node to take
        // at once, and the node leaves the list of live ones.
        while tasks.join_next().await.is_some() {}
        drop(beat);
        self.hand_back().await;
        tracing::info!(worker = %self.config.worker_id, "poll engine stopped");
    }

    /// Release this node's remaining leases and forget it (a clean stop).
    pub async fn hand_back(&self) {
        let worker = &self.config.worker_id;
        match self.queue.release_worker(worker, self.clock.now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(%worker, released = n, "handed back polls still leased"),
            Err(e) => {
                tracing::warn!(%worker, error = %e, "handing back leases failed; they fall due when they expire")
            }
        }
    }

    /// Record this node's heartbeat every `heartbeat_every`, and release
    /// the leases of nodes silent for `dead_after` (not on a virtual clock,
    /// where time jumps and silence means nothing), once this node's own
    /// heartbeats have been written for that long ([`Liveness`]).
    async fn heartbeats(self: Arc<Self>) {
        let worker = self.config.worker_id.clone();
        let mut liveness = Liveness::new(self.config.heartbeat_every, self.config.dead_after);
        loop {
            let now = self.clock.now();
            let started = std::time::Instant::now();
            let beat = self.queue.heartbeat(&worker, now).await;
            let may_judge = liveness.beat(beat.is_ok(), started, std::time::Instant::now());
            if let Err(e) = beat {
                tracing::warn!(%worker, error = %e, "recording the heartbeat failed");
            } else if may_judge && self.clock.as_virtual().is_none() {
                let cutoff = Timestamp(
                    now.0 - i64::try_from(self.config.dead_after.as_millis()).unwrap_or(i64::MAX),
                );
                match self.queue.release_dead(cutoff, now).await {
                    Ok(dead) => {
                        for (node, n) in dead {
                            metrics::counter!("finality_leases_released_total", "reason" => "node_stopped")
                                .increment(n);
                            tracing::warn!(%node, released = n, silent_for = ?self.config.dead_after, "a node stopped beating; its polls run again now");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "releasing dead nodes' leases failed"),
                }
            }
            tokio::time::sleep(self.config.heartbeat_every).await;
        }
    }

    /// Wait until there may be work. Returns false when the loop should end
    /// (idle and asked to stop when idle).
    async fn wait(
        &self,
        tasks: &mut JoinSet<()>,
        wake: &mut tokio::sync::watch::Receiver<u64>,
        shutdown: &CancellationToken,
        stop_when_idle: bool,
        capacity: usize,
    ) -> bool {
        let full = tasks.len() >= capacity;
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
            return match self.queue.next_due_at().await {
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
            match self.queue.next_due_at().await {
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
        // Wake when the next job is half a window away: the claim then
        // takes everything due within the window, so a steady stream is
        // claimed about twice per window.
        let now = self.clock.now();
        let half = self.lookahead() / 2;
        let sleep_for = next_due
            .map_or(self.config.idle_check, |t: Timestamp| {
                t.since(now.plus(half))
            })
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

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
