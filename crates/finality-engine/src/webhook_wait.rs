//! How long a provider's webhooks take to bring a payment's final status,
//! counted from registration, learned from the last [`WINDOW`] that did: a
//! provider with `webhook_wait_quantile` set gets its first poll only once
//! that share of payments would have had their webhook, so no poll is spent
//! while a webhook is still expected.
//!
//! Kept per process (each node learns from the webhooks it applies), which
//! is enough: the figure is a distribution, not a count, and every node of a
//! cluster sees a fair share of the webhooks.

use finality_core::Timestamp;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// Observations kept per provider (the most recent).
pub const WINDOW: usize = 1000;

/// Observations needed before the learned wait is used: until then the
/// schedule's own first delay applies.
pub const MIN_SAMPLES: usize = 50;

#[derive(Debug, Default)]
struct Samples {
    recent: VecDeque<u64>,
    /// Sorted copy, rebuilt when stale (every 32 new samples).
    sorted: Vec<u64>,
    since_sort: usize,
}

/// Registration-to-webhook delays, per provider.
#[derive(Debug, Default)]
pub struct WebhookWaits {
    by_provider: Mutex<HashMap<String, Samples>>,
}

impl WebhookWaits {
    /// A payment registered at `registered_at` got its final status from a
    /// webhook applied at `applied_at`.
    pub fn observe(&self, provider: &str, registered_at: Timestamp, applied_at: Timestamp) {
        let ms = u64::try_from(applied_at.0 - registered_at.0).unwrap_or(0);
        let mut map = self.by_provider.lock().unwrap_or_else(|p| p.into_inner());
        let s = match map.get_mut(provider) {
            Some(s) => s,
            None => map.entry(provider.to_string()).or_default(),
        };
        if s.recent.len() == WINDOW {
            s.recent.pop_front();
        }
        s.recent.push_back(ms);
        s.since_sort += 1;
    }

    /// The `q` quantile of the learned delays, once there are enough.
    pub fn quantile(&self, provider: &str, q: f64) -> Option<Duration> {
        let mut map = self.by_provider.lock().unwrap_or_else(|p| p.into_inner());
        let s = map.get_mut(provider)?;
        if s.recent.len() < MIN_SAMPLES {
            return None;
        }
        if s.since_sort >= 32 || s.sorted.len() != s.recent.len() {
            s.sorted.clear();
            s.sorted.extend(s.recent.iter().copied());
            s.sorted.sort_unstable();
            s.since_sort = 0;
        }
        let rank =
            ((q.clamp(0.0, 1.0) * s.sorted.len() as f64).ceil() as usize).clamp(1, s.sorted.len());
        Some(Duration::from_millis(s.sorted[rank - 1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_a_quantile_of_the_recent_window_only() {
        let w = WebhookWaits::default();
        let t = |s: i64| Timestamp(s * 1000);
        for i in 0..(MIN_SAMPLES as i64 - 1) {
            w.observe("p", t(0), t(i + 1));
        }
        assert_eq!(w.quantile("p", 0.9), None, "too few to trust");
        w.observe("p", t(0), t(50));
        assert_eq!(w.quantile("p", 0.9), Some(Duration::from_secs(45)));
        assert_eq!(w.quantile("other", 0.9), None);
        // A slower spell replaces the old window entirely.
        for _ in 0..WINDOW {
            w.observe("p", t(0), t(600));
        }
        assert_eq!(w.quantile("p", 0.5), Some(Duration::from_secs(600)));
    }
}
