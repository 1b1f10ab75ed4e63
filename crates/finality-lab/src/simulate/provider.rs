//! The provider of a simulation, in process: it answers from each payment's
//! draw at the virtual time of the call, and counts every call.

use super::model::Draw;
use async_trait::async_trait;
use finality_core::{Clock, Status, Timestamp};
use finality_providers::webhook::{Disposition, WebhookEvent};
use finality_providers::{EventPage, Observation, PollTarget, Provider, ProviderError};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Payment `i` has provider reference `m{i}`.
pub fn provider_ref(i: usize) -> String {
    format!("m{i}")
}

fn index(provider_ref: &str) -> Option<usize> {
    provider_ref.strip_prefix('m')?.parse().ok()
}

/// The id of payment `i`'s final event: its webhook's and its listed
/// event's alike (one event, however it arrives).
pub fn event_id(i: usize) -> String {
    format!("wh{i}")
}

/// Events per list page (Stripe's maximum).
const PAGE: usize = 100;

/// Answers status queries and event-list reads from the draws.
pub struct ModelProvider {
    draws: Arc<Vec<Draw>>,
    clock: Arc<dyn Clock>,
    /// Settlements in time order: the provider's event log.
    log: Vec<(Timestamp, usize)>,
    /// Calls per payment, and in all (status queries and list reads).
    pub calls: Vec<AtomicU32>,
    pub total: AtomicU64,
    /// Event-list reads.
    pub lists: AtomicU64,
}

impl ModelProvider {
    pub fn new(draws: Arc<Vec<Draw>>, clock: Arc<dyn Clock>) -> Self {
        let calls = (0..draws.len()).map(|_| AtomicU32::new(0)).collect();
        let mut log: Vec<(Timestamp, usize)> = draws
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.settles_at.map(|t| (t, i)))
            .collect();
        log.sort_unstable();
        ModelProvider {
            draws,
            clock,
            log,
            calls,
            total: AtomicU64::new(0),
            lists: AtomicU64::new(0),
        }
    }
}

#[async_trait]
impl Provider for ModelProvider {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        self.total.fetch_add(1, Ordering::Relaxed);
        let Some(i) = t
            .provider_ref
            .and_then(index)
            .filter(|i| *i < self.draws.len())
        else {
            return Err(ProviderError::Permanent {
                message: format!("no simulated payment `{}`", t.provider_ref.unwrap_or("")),
            });
        };
        self.calls[i].fetch_add(1, Ordering::Relaxed);
        let d = &self.draws[i];
        let status = match d.settles_at {
            Some(at) if at <= self.clock.now() => d.status,
            _ => Status::Pending,
        };
        Ok(Observation::new(Some(status), status.as_str()))
    }

    fn lists_events(&self) -> bool {
        true
    }

    /// The log read as Stripe's list is: the cursor is a position in it;
    /// without one, the newest page.
    async fn list_events(&self, cursor: Option<&str>) -> Result<EventPage, ProviderError> {
        self.total.fetch_add(1, Ordering::Relaxed);
        self.lists.fetch_add(1, Ordering::Relaxed);
        let now = self.clock.now();
        let end = self.log.partition_point(|(t, _)| *t <= now);
        let start = match cursor {
            Some(c) => c.parse::<usize>().map_err(|_| ProviderError::Permanent {
                message: format!("bad cursor `{c}`"),
            })?,
            None => end.saturating_sub(PAGE),
        };
        let stop = end.min(start + PAGE);
        let events = self.log[start.min(stop)..stop]
            .iter()
            .map(|(t, i)| {
                let status = self.draws[*i].status;
                WebhookEvent {
                    event_id: event_id(*i),
                    provider_ref: Some(provider_ref(*i)),
                    merchant_ref: None,
                    status: Some(status),
                    provider_status: Some(status.as_str().into()),
                    occurred_at: Some(*t),
                    reported: Default::default(),
                    disposition: Disposition::Apply,
                }
            })
            .collect();
        Ok(EventPage {
            events,
            cursor: Some(stop.to_string()),
            more: stop < end,
            restarted: None,
        })
    }
}
