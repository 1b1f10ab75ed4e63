//! One pusher per destination: it reads the feed after the destination's
//! cursor and delivers in feed order, a few events at a time (never two of
//! one payment in the same group, so per-payment order holds), advancing the
//! cursor only past a contiguous run of successes. A failure stops the run
//! and is retried with exponential backoff and jitter; after `retry_for`
//! without success the destination is marked failing and an alert raised,
//! and it keeps being retried at the cap, so a recovered destination gets
//! its whole backlog, in order. Delivery is at least once: a crash between a
//! delivery and the cursor update redelivers that event.
//!
//! While it runs, a pusher writes a group's record (its attempts and the
//! cursor's move) while it reads and delivers the next group, so that write
//! is not on the way from a status change to the merchant. The record is
//! settled before the next one, before the stored state is read, before a
//! failure is recorded, and when the pusher stops. If that record failed
//! (the database, or the cursor moved under the pusher: a rewind), the
//! group delivered meanwhile is delivered again from the stored cursor:
//! one group more at least once, never one skipped, per-payment order kept.

use crate::event::{complete, complete_wanted, Event};
use crate::{Sink, SinkError};
use finality_core::{Clock, Schedule, Timestamp};
use finality_store::{DeliveryAttempt, DestinationState, EventFeed};
use rand::Rng;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct PushConfig {
    /// Events read from the feed per round.
    pub batch: u32,
    /// Deliveries in flight at once for this destination.
    pub concurrency: usize,
    /// Delay before each redelivery of a failed event (retries as data:
    /// exponential from 1 s, ±20 % jitter, capped at 10 min by default).
    pub retry: Schedule,
    /// After this long without a success the destination is failing (alert).
    pub retry_for: Duration,
    /// Longest sleep without looking at the feed.
    pub idle_check: Duration,
}

impl Default for PushConfig {
    fn default() -> Self {
        PushConfig {
            batch: 200,
            concurrency: 4,
            retry: Schedule::Exponential {
                base: Duration::from_secs(1),
                factor: 2.0,
                cap: Duration::from_secs(600),
                jitter: 0.2,
            },
            retry_for: Duration::from_secs(3 * 24 * 3600),
            idle_check: Duration::from_millis(200),
        }
    }
}

pub struct Pusher {
    feed: Arc<dyn EventFeed>,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn Sink>,
    config: PushConfig,
    /// The cursor after this pusher's last clean round (none pending).
    cursor: std::sync::Mutex<Option<i64>>,
    /// When the stored state (pause, retry, redeliveries asked for) was
    /// last read: at least every [`STATE_CHECK`], however clean the rounds.
    checked: std::sync::Mutex<Option<Timestamp>>,
    /// The last group's record still being written (see the module
    /// documentation): whether it moved the cursor.
    recording: std::sync::Mutex<Option<JoinHandle<finality_store::Result<bool>>>>,
}

/// How long a clean pusher goes on from its own cursor before reading the
/// stored state again: what a pause, a rewind or a redelivery waits at most.
pub const STATE_CHECK: Duration = Duration::from_secs(1);

/// The delay before redelivery after `attempts` failed tries.
fn backoff(cfg: &PushConfig, attempts: u32) -> Duration {
    cfg.retry.delay(
        attempts.saturating_sub(1),
        rand::thread_rng().gen_range(-1.0..=1.0),
    )
}

/// Split events into groups delivered concurrently: consecutive, at most
/// `max` long, no payment twice.
fn groups(events: &[Event], max: usize) -> Vec<&[Event]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen = HashSet::new();
    for (i, e) in events.iter().enumerate() {
        let payment = e.outbox.payment_id.as_str();
        if i - start == max.max(1) || !seen.insert(payment) {
            out.push(&events[start..i]);
            start = i;
            seen.clear();
            seen.insert(payment);
        }
    }
    if start < events.len() {
        out.push(&events[start..]);
    }
    out
}

impl Pusher {
    pub fn new(
        feed: Arc<dyn EventFeed>,
        clock: Arc<dyn Clock>,
        sink: Arc<dyn Sink>,
        config: PushConfig,
    ) -> Arc<Self> {
        Arc::new(Pusher {
            feed,
            clock,
            sink,
            config,
            cursor: std::sync::Mutex::new(None),
            checked: std::sync::Mutex::new(None),
            recording: std::sync::Mutex::new(None),
        })
    }

    /// Deliver what can be delivered now; returns how many events were
    /// delivered, each recorded when this returns. Stops at the first
    /// failure (recorded for a later retry).
    pub async fn push_once(&self) -> finality_store::Result<usize> {
        let n = self.round().await?;
        self.settle().await?;
        Ok(n)
    }

    /// The record in flight, written: whether it moved the cursor as
    /// planned. If not, the next round reads the stored cursor.
    async fn settle(&self) -> finality_store::Result<bool> {
        let Some(task) = self.recording.lock().ok().and_then(|mut r| r.take()) else {
            return Ok(true);
        };
        let moved = match task.await {
            Ok(r) => r,
            // A panic in the store: nothing known about the record.
            Err(e) => {
                tracing::error!(destination = self.sink.name(), error = %e, "recording deliveries did not finish");
                Ok(false)
            }
        };
        if !matches!(moved, Ok(true)) {
            if let Ok(mut c) = self.cursor.lock() {
                *c = None;
            }
        }
        if matches!(moved, Ok(false)) {
            tracing::warn!(
                destination = self.sink.name(),
                "cursor moved under this pusher (rewound, or another pusher runs for it, or the \
                 feed's history went back); reading it again"
            );
            // A cursor is never moved past the feed's head: if the feed
            // went back (a failover that lost commits, a restore), reading
            // its epoch drops what this node holds of the old history, so
            // the next round reads the new one.
            self.feed.feed_epoch().await?;
        }
        moved
    }

    /// One round: what can be delivered now, the last group's record left
    /// in flight (see the module documentation).
    async fn round(&self) -> finality_store::Result<usize> {
        let name = self.sink.name();
        let now = self.clock.now();
        // After a clean push this pusher knows its cursor (and that no
        // retry is pending): one read fewer per round, for up to
        // STATE_CHECK. Otherwise, and after anything unexpected, the stored
        // state is read.
        let hint = self.cursor.lock().ok().and_then(|mut c| c.take());
        let fresh = self
            .checked
            .lock()
            .ok()
            .is_some_and(|t| t.is_some_and(|t| now.since(t) < STATE_CHECK));
        let (start, mut st) = match hint.filter(|_| fresh) {
            Some(c) => (c, None),
            None => {
                // The stored state after the record in flight.
                self.settle().await?;
                let st = self.feed.destination(name).await?;
                if let Ok(mut t) = self.checked.lock() {
                    *t = Some(now);
                }
                // Paused: no attempt, no alert; the backlog waits.
                if st.paused_at.is_some() {
                    return Ok(0);
                }
                self.redeliver_asked().await?;
                if st.next_attempt_at.is_some_and(|t| t > now) {
                    return Ok(0);
                }
                (st.delivered_seq, Some(st))
            }
        };
        let events = self.feed.feed_after(start, self.config.batch).await?;
        let events = complete_wanted(&*self.feed, events, |e| self.sink.wants(e)).await?;
        let mut cursor = start;
        let mut delivered = 0;
        for group in groups(&events, self.config.concurrency) {
            let wanted: Vec<&Event> = group
                .iter()
                .filter(|e| self.sink.wants(&e.outbox))
                .collect();
            let (results, records): (Vec<_>, Vec<_>) =
                futures::future::join_all(wanted.iter().map(|e| self.attempt(e)))
                    .await
                    .into_iter()
                    .unzip();
            let mut results = wanted.iter().map(|e| e.outbox.seq).zip(results);
            let mut failure: Option<SinkError> = None;
            let mut upto = cursor;
            for e in group.iter().map(|e| &e.outbox) {
                if !self.sink.wants(e) {
                    upto = e.seq;
                    continue;
                }
                match results.next() {
                    Some((_, Ok(()))) => {
                        upto = e.seq;
                        delivered += 1;
                    }
                    Some((_, Err(err))) => {
                        failure = Some(err);
                        break;
                    }
                    None => break,
                }
            }
            if upto != cursor {
                finality_core::fault::point("after_event_delivery");
            }
            // The previous group's record first: records go in order.
            if !self.settle().await? {
                return Ok(delivered);
            }
            // The group's attempts and the cursor's move: one statement
            // on PostgreSQL, written while the next group is read.
            let (feed, name_owned, from) = (self.feed.clone(), name.to_string(), cursor);
            let task = tokio::spawn(async move {
                feed.destination_delivered(&name_owned, from, upto, &records)
                    .await
            });
            if let Ok(mut r) = self.recording.lock() {
                *r = Some(task);
            }
            cursor = upto;
            if let Some(err) = failure {
                if !self.settle().await? {
                    return Ok(delivered);
                }
                let st = match st.take() {
                    Some(st) => st,
                    None => self.feed.destination(name).await?,
                };
                self.record_failure(&st, cursor, err).await?;
                return Ok(delivered);
            }
        }
        if let Ok(mut c) = self.cursor.lock() {
            *c = Some(cursor);
        }
        Ok(delivered)
    }

    /// This pusher's cursor is at the feed head the process knows of.
    fn at_known_head(&self) -> bool {
        let cursor = self.cursor.lock().ok().and_then(|c| *c);
        matches!((cursor, self.feed.feed_head()), (Some(c), Some(h)) if c >= h)
    }

    /// Deliver one event; its outcome and the attempt to record.
    async fn attempt(&self, ev: &Event) -> (Result<(), SinkError>, DeliveryAttempt) {
        let e = &ev.outbox;
        let started = Instant::now();
        let at = self.clock.now();
        let span = tracing::info_span!(
            "event push",
            destination = self.sink.name(),
            event_id = %e.event_id,
            payment_id = %e.payment_id
        );
        let result = tracing::Instrument::instrument(self.sink.deliver(ev), span).await;
        let (status_code, error) = match &result {
            Ok(code) => (*code, None),
            Err(err) => (err.status_code, Some(err.message.clone())),
        };
        let rec = DeliveryAttempt {
            destination: self.sink.name().to_string(),
            event_id: e.event_id.clone(),
            feed_seq: e.seq,
            at,
            status_code,
            latency_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
            error,
        };
        let outcome = if result.is_ok() {
            "delivered"
        } else {
            "failed"
        };
        metrics::counter!("finality_event_deliveries_total", "destination" => self.sink.name().to_string(), "outcome" => outcome).increment(1);
        (result.map(|_| ()), rec)
    }

    /// Send the events an admin asked to have sent again (each once, in
    /// the order asked, whatever the type filter), recording each attempt
    /// and what came of it. A failure is recorded, not retried: the
    /// console shows it and it can be asked for again.
    async fn redeliver_asked(&self) -> finality_store::Result<()> {
        let name = self.sink.name();
        for r in self.feed.pending_redeliveries(name, 20).await? {
            let outcome = match self.feed.event_by_id(&r.event_id).await? {
                None => "not sent: the event is not in the feed (unknown, or pruned by retention)"
                    .to_string(),
                Some(e) => {
                    let events = complete(&*self.feed, vec![e]).await?;
                    match events.first() {
                        None => "not sent: the event vanished".to_string(),
                        Some(ev) => {
                            let (result, rec) = self.attempt(ev).await;
                            self.feed.record_deliveries(&[rec]).await?;
                            match result {
                                Ok(()) => "delivered".to_string(),
                                Err(e) => format!("failed: {e}"),
                            }
                        }
                    }
                }
            };
            tracing::info!(destination = name, event_id = %r.event_id, outcome = %outcome, by = %r.requested_by, "redelivery");
            self.feed
                .redelivery_done(r.id, self.clock.now(), &outcome)
                .await?;
        }
        Ok(())
    }

    async fn record_failure(
        &self,
        before: &DestinationState,
        cursor: i64,
        err: SinkError,
    ) -> finality_store::Result<()> {
        let now = self.clock.now();
        let same_head = cursor == before.delivered_seq;
        let attempts = if same_head { before.attempts + 1 } else { 1 };
        let failing_since: Timestamp = if same_head {
            before.failing_since.unwrap_or(now)
        } else {
            now
        };
        let name = self.sink.name();
        if now.since(failing_since) >= self.config.retry_for {
            metrics::gauge!("finality_event_destination_failing", "destination" => name.to_string()).set(1.0);
            tracing::error!(
                destination = name, since = %failing_since, attempts, error = %err,
                "ALERT: event destination failing; still retrying every {:?}, its backlog waits in order",
                backoff(&self.config, attempts)
            );
        } else {
            tracing::warn!(destination = name, attempts, error = %err, "event delivery failed; will retry");
        }
        let st = DestinationState {
            name: name.to_string(),
            delivered_seq: cursor,
            attempts,
            failing_since: Some(failing_since),
            next_attempt_at: Some(now.plus(backoff(&self.config, attempts))),
            last_error: Some(err.to_string()),
            paused_at: None,
            paused_by: None,
        };
        self.feed.destination_failed(&st).await
    }

    /// Run until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut wake = self.feed.subscribe_feed();
        while !shutdown.is_cancelled() {
            match self.round().await {
                Ok(n) if n > 0 => {
                    // Something was delivered: the head is not failing. (An
                    // idle round says nothing: a failing destination waits
                    // for its next attempt in idle rounds.)
                    metrics::gauge!("finality_event_destination_failing", "destination" => self.sink.name().to_string()).set(0.0);
                    // Read on at once unless this pusher is at the head the
                    // process knows of: then growth wakes it, one read
                    // fewer per round.
                    if !self.at_known_head() {
                        continue;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(destination = self.sink.name(), error = %e, "event push failed")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.idle_check) => {}
                _ = wake.changed() => {}
                _ = shutdown.cancelled() => {}
            }
        }
        // The last group's record, written before the pusher ends.
        if let Err(e) = self.settle().await {
            tracing::error!(destination = self.sink.name(), error = %e, "recording the last deliveries failed; they are delivered again at the next start");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use finality_core::{Source, Status};

    fn ev(seq: i64, payment: &str) -> Event {
        Event {
            outbox: finality_store::OutboxEvent {
                seq,
                event_id: format!("e{seq}"),
                payment_id: payment.into(),
                event_type: "payment.succeeded".into(),
                status: Status::Succeeded,
                previous_status: None,
                source: Source::Webhook,
                occurred_at: Timestamp(0),
            },
            details: Default::default(),
        }
    }

    #[test]
    fn groups_never_hold_one_payment_twice() {
        let evs = vec![
            ev(1, "a"),
            ev(2, "b"),
            ev(3, "a"),
            ev(4, "c"),
            ev(5, "d"),
            ev(6, "e"),
        ];
        let g: Vec<Vec<i64>> = groups(&evs, 3)
            .iter()
            .map(|g| g.iter().map(|e| e.outbox.seq).collect())
            .collect();
        assert_eq!(g, vec![vec![1, 2], vec![3, 4, 5], vec![6]]);
    }

    #[test]
    fn backoff_is_capped() {
        let cfg = PushConfig::default();
        assert!(backoff(&cfg, 1) <= Duration::from_millis(1200));
        assert!(backoff(&cfg, 1) >= Duration::from_millis(800));
        let late = backoff(&cfg, 40);
        assert!(
            late <= Duration::from_secs(600) && late >= Duration::from_secs(480),
            "{late:?}"
        );
    }
}
