//! The event feed in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::feed::rows::FinalFact;
use crate::memory::MemStore;
use crate::model::*;
use crate::EventFeed;
use finality_core::Timestamp;

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
            .or_insert_with(|| DestinationState {
                name: name.to_string(),
                delivered_seq: 0,
                attempts: 0,
                failing_since: None,
                next_attempt_at: None,
                last_error: None,
            })
            .clone())
    }

    async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool> {
        let mut s = self.state.lock().await;
        match s.destinations.get_mut(name) {
            Some(d) if d.delivered_seq == from => {
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
}
