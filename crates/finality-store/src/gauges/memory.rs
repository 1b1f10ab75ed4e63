//! The cluster's gauges in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::MemStore;
use crate::Review;
use finality_core::Timestamp;
use std::collections::BTreeMap;

#[async_trait::async_trait]
impl crate::Gauges for MemStore {
    async fn cluster_gauges(
        &self,
        now: Timestamp,
        overdue_before: Timestamp,
        live_since: Timestamp,
    ) -> Result<crate::ClusterGauges> {
        let review = self.review_counts().await?;
        let s = self.state.lock().await;
        let mut open: BTreeMap<(String, String), i64> = BTreeMap::new();
        for p in s.payments.values() {
            if !p.status.is_final() {
                *open
                    .entry((p.provider.clone(), p.status.as_str().to_string()))
                    .or_default() += 1;
            }
        }
        let due: Vec<i64> = s
            .due
            .iter()
            .take_while(|(at, _)| *at <= now.0)
            .map(|(at, _)| *at)
            .collect();
        let mut inbox: BTreeMap<String, i64> = BTreeMap::new();
        for r in &s.inbox {
            let state = r.ev.state.as_str();
            if matches!(state, "received" | "failed" | "orphaned") {
                *inbox.entry(state.to_string()).or_default() += 1;
            }
        }
        let destinations = s
            .destinations
            .values()
            .map(|d| {
                let oldest = s
                    .feed
                    .get(&(d.delivered_seq + 1))
                    .and_then(|id| s.outbox.get(id))
                    .map(|o| o.ev.occurred_at);
                (
                    d.name.clone(),
                    (s.last_feed_seq - d.delivered_seq).max(0),
                    oldest,
                )
            })
            .collect();
        Ok(crate::ClusterGauges {
            open: open.into_iter().map(|((p, st), n)| (p, st, n)).collect(),
            review,
            polls_due: due.len() as i64,
            polls_overdue: due.iter().filter(|at| **at < overdue_before.0).count() as i64,
            oldest_due_at: due.first().copied().map(Timestamp),
            inbox: inbox.into_iter().collect(),
            unsequenced: s.unsequenced.len() as i64,
            destinations,
            nodes: s
                .nodes
                .values()
                .filter(|(_, beat)| *beat >= live_since.0)
                .count() as i64,
        })
    }
}
