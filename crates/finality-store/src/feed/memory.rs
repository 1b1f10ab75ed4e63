//! The event feed in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::feed::rows::FinalFact;
use crate::memory::MemStore;
use crate::model::*;
use crate::EventFeed;
use finality_core::Timestamp;

/// The in-memory feed's one epoch.
const MEMORY_EPOCH: &str = "memory";

#[async_trait::async_trait]
impl EventFeed for MemStore {
    fn subscribe_feed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.wake.subscribe_feed()
    }

    fn subscribe_transitions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.wake.subscribe_transitions()
    }

    async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.outbox
            .range(seq.saturating_add(1)..)
            .take(limit as usize)
            .map(|(_, r)| r.ev.clone())
            .collect())
    }

    async fn sequence_feed(&self, limit: u32) -> Result<u64> {
        let mut s = self.state.lock().await;
        let ids: Vec<i64> = s.unsequenced.iter().take(limit as usize).copied().collect();
        let mut finals = Vec::new();
        for id in &ids {
            s.unsequenced.remove(id);
            s.last_feed_seq += 1;
            let seq = s.last_feed_seq;
            if let Some(r) = s.outbox.get_mut(id) {
                r.feed_seq = Some(seq);
            }
            s.feed.insert(seq, *id);
            if let Some(ev) = s.outbox.get(id).map(|r| r.ev.clone()) {
                let into_final =
                    ev.status.is_final() && !ev.previous_status.is_some_and(|p| p.is_final());
                if let (true, Some(p)) = (into_final, s.payments.get(&ev.payment_id)) {
                    finals.push(FinalFact {
                        provider: p.provider.clone(),
                        source: ev.source,
                        after_ms: ev.occurred_at.0 - p.created_at.0,
                    });
                }
            }
        }
        drop(s);
        if !ids.is_empty() {
            self.wake.bump_feed();
        }
        crate::feed::sql::record_finals(&finals);
        Ok(ids.len() as u64)
    }

    async fn feed_after(&self, cursor: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.feed
            .range(cursor.saturating_add(1)..)
            .take(limit as usize)
            .filter_map(|(seq, id)| {
                s.outbox.get(id).map(|r| OutboxEvent {
                    seq: *seq,
                    ..r.ev.clone()
                })
            })
            .collect())
    }

    async fn destination(&self, name: &str) -> Result<DestinationState> {
        let mut s = self.state.lock().await;
        Ok(s.destinations
            .entry(name.to_string())
            .or_insert_with(|| DestinationState::new(name))
            .clone())
    }

    async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool> {
        let mut s = self.state.lock().await;
        let head = s.last_feed_seq;
        match s.destinations.get_mut(name) {
            Some(d) if d.delivered_seq == from && to <= head => {
                d.delivered_seq = to;
                d.attempts = 0;
                d.failing_since = None;
                d.next_attempt_at = None;
                d.last_error = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn destination_failed(&self, st: &DestinationState) -> Result<()> {
        let mut s = self.state.lock().await;
        if let Some(d) = s.destinations.get_mut(&st.name) {
            if d.delivered_seq == st.delivered_seq {
                d.attempts = st.attempts;
                d.failing_since = st.failing_since;
                d.next_attempt_at = st.next_attempt_at;
                d.last_error = st.last_error.clone();
            }
        }
        Ok(())
    }

    async fn record_deliveries(&self, attempts: &[DeliveryAttempt]) -> Result<()> {
        self.state
            .lock()
            .await
            .deliveries
            .extend_from_slice(attempts);
        Ok(())
    }

    async fn deliveries(&self, destination: &str, limit: u32) -> Result<Vec<DeliveryAttempt>> {
        let s = self.state.lock().await;
        Ok(s.deliveries
            .iter()
            .filter(|d| d.destination == destination)
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn prune_events(&self, max_seq: i64, before: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        let gone: Vec<(i64, i64)> = s
            .feed
            .range(..=max_seq)
            .filter(|(_, id)| s.outbox.get(id).is_some_and(|r| r.ev.occurred_at < before))
            .map(|(seq, id)| (*seq, *id))
            .collect();
        for (seq, id) in &gone {
            s.feed.remove(seq);
            s.outbox.remove(id);
        }
        Ok(gone.len() as u64)
    }

    async fn event_details(&self, events: &[OutboxEvent]) -> Result<Vec<EventDetails>> {
        let s = self.state.lock().await;
        Ok(events
            .iter()
            .map(|e| {
                let note = s
                    .history
                    .get(&e.payment_id)
                    .and_then(|h| h.iter().find(|h| h.to == e.status && h.at == e.occurred_at));
                let row = s
                    .feed
                    .get(&e.seq)
                    .and_then(|id| s.outbox.get(id))
                    .filter(|r| r.ev.event_id == e.event_id)
                    // (An outbox row read by its id, not its position.)
                    .or_else(|| s.outbox.get(&e.seq).filter(|r| r.ev.event_id == e.event_id));
                EventDetails {
                    payment: s.payments.get(&e.payment_id).cloned(),
                    reason: note.and_then(|h| h.reason.clone()),
                    actor: note.and_then(|h| h.actor.clone()),
                    pieces: row.map(|r| r.pieces.clone()).unwrap_or_default(),
                    flag: row.and_then(|r| r.flag.clone()),
                }
            })
            .collect())
    }

    async fn destinations(&self) -> Result<Vec<DestinationState>> {
        Ok(self
            .state
            .lock()
            .await
            .destinations
            .values()
            .cloned()
            .collect())
    }

    async fn feed_bounds(&self) -> Result<FeedBounds> {
        let s = self.state.lock().await;
        let oldest = s
            .feed
            .iter()
            .next()
            .and_then(|(seq, id)| s.outbox.get(id).map(|r| (*seq, r.ev.occurred_at)));
        Ok(FeedBounds {
            head: s.last_feed_seq,
            oldest,
        })
    }

    async fn feed_epoch(&self) -> Result<FeedEpoch> {
        // One history for the life of the process: nothing rewinds it.
        Ok(FeedEpoch {
            epoch: MEMORY_EPOCH.into(),
            since: 0,
            head: self.state.lock().await.last_feed_seq,
        })
    }

    async fn feed_epoch_parted(&self, epoch: &str) -> Result<Option<i64>> {
        Ok((epoch == MEMORY_EPOCH).then_some(self.state.lock().await.last_feed_seq))
    }

    async fn first_seq_since(&self, at: Timestamp) -> Result<Option<i64>> {
        let s = self.state.lock().await;
        Ok(s.feed
            .iter()
            .find(|(_, id)| s.outbox.get(id).is_some_and(|r| r.ev.occurred_at >= at))
            .map(|(seq, _)| *seq))
    }

    async fn event_by_id(&self, event_id: &str) -> Result<Option<OutboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.outbox.values().find_map(|r| {
            (r.ev.event_id == event_id)
                .then_some(r.feed_seq)
                .flatten()
                .map(|seq| OutboxEvent {
                    seq,
                    ..r.ev.clone()
                })
        }))
    }

    async fn destination_rewind(&self, name: &str, to: i64) -> Result<Option<i64>> {
        let mut s = self.state.lock().await;
        Ok(s.destinations.get_mut(name).map(|d| {
            let was = d.delivered_seq;
            d.delivered_seq = to;
            d.attempts = 0;
            d.failing_since = None;
            d.next_attempt_at = None;
            d.last_error = None;
            was
        }))
    }

    async fn destination_pause(
        &self,
        name: &str,
        paused: Option<(Timestamp, &str)>,
    ) -> Result<bool> {
        let mut s = self.state.lock().await;
        let Some(d) = s.destinations.get_mut(name) else {
            return Ok(false);
        };
        match paused {
            Some((at, by)) => {
                d.paused_at = Some(at);
                d.paused_by = Some(by.to_string());
            }
            None => {
                d.paused_at = None;
                d.paused_by = None;
                d.next_attempt_at = None;
            }
        }
        Ok(true)
    }

    async fn request_redelivery(
        &self,
        destination: &str,
        event_id: &str,
        at: Timestamp,
        by: &str,
    ) -> Result<i64> {
        let mut s = self.state.lock().await;
        let id = s.redeliveries.len() as i64 + 1;
        s.redeliveries.push(Redelivery {
            id,
            destination: destination.to_string(),
            event_id: event_id.to_string(),
            requested_at: at,
            requested_by: by.to_string(),
            done_at: None,
            outcome: None,
        });
        Ok(id)
    }

    async fn pending_redeliveries(&self, destination: &str, limit: u32) -> Result<Vec<Redelivery>> {
        let s = self.state.lock().await;
        Ok(s.redeliveries
            .iter()
            .filter(|r| r.destination == destination && r.done_at.is_none())
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn redeliveries(&self, limit: u32) -> Result<Vec<Redelivery>> {
        let s = self.state.lock().await;
        Ok(s.redeliveries
            .iter()
            .rev()
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn redelivery_done(&self, id: i64, at: Timestamp, outcome: &str) -> Result<()> {
        let mut s = self.state.lock().await;
        if let Some(r) = s.redeliveries.iter_mut().find(|r| r.id == id) {
            r.done_at = Some(at);
            r.outcome = Some(outcome.to_string());
        }
        Ok(())
    }
}
