//! Per-provider health: pauses (while a provider is rate-limiting us or
//! failing permanently) and circuit breakers (while its calls time out or
//! fail with 5xx), under which its due polls are deferred without spending
//! anything; and whether its webhooks are arriving (polls that keep
//! settling payments no webhook announced mean they are not, and the
//! provider is polled by its outage schedule until one arrives). `/readyz`
//! reports all three.

use crate::breaker::Breakers;
use finality_core::{ErrorClass, Timestamp};
use std::collections::HashMap;
use std::sync::Mutex;

/// Why and until when a provider is paused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub until: Timestamp,
    pub class: ErrorClass,
    pub reason: String,
}

/// Whether a provider's webhooks are arriving.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct WebhookWatch {
    /// Payments whose final status a poll learned since the last webhook.
    settled_by_poll: u32,
    /// Since when webhooks are taken to be down.
    outage_since: Option<Timestamp>,
}

/// How long a refusal counts toward pausing its provider.
const REFUSALS_WINDOW_MS: i64 = 10 * 60 * 1000;

/// Distinct payments, each answered before, refused within
/// [`REFUSALS_WINDOW_MS`] that make it the provider's problem (a changed
/// API, a wrong account), not theirs.
pub const REFUSALS_TO_PAUSE: usize = 5;

/// Shared by the engine (writes) and `/readyz` (reads).
#[derive(Debug, Default)]
pub struct Health {
    paused: Mutex<HashMap<String, Pause>>,
    /// Per provider, the payments it refused lately and when.
    refusals: Mutex<HashMap<String, HashMap<String, Timestamp>>>,
    breakers: Breakers,
    webhooks: Mutex<HashMap<String, WebhookWatch>>,
    /// Registration-to-webhook delays, for `webhook_wait_quantile`.
    pub webhook_waits: crate::webhook_wait::WebhookWaits,
}

impl Health {
    pub fn new() -> Self {
        Self::default()
    }

    /// With breakers configured other than by default.
    pub fn with_breakers(breakers: Breakers) -> Self {
        Health {
            paused: Mutex::default(),
            refusals: Mutex::default(),
            breakers,
            webhooks: Mutex::default(),
            webhook_waits: Default::default(),
        }
    }

    pub fn breakers(&self) -> &Breakers {
        &self.breakers
    }

    /// Record that `provider` refused a request about `payment_id`: how
    /// many distinct payments it refused within the window. One payment's
    /// refusals (however many, and whoever caused them) count once.
    pub fn refused(&self, provider: &str, payment_id: &str, now: Timestamp) -> usize {
        let mut map = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let seen = map.entry(provider.to_string()).or_default();
        seen.retain(|_, at| now.0 - at.0 < REFUSALS_WINDOW_MS);
        seen.insert(payment_id.to_string(), now);
        seen.len()
    }

    /// Pause `provider` until `until` (extending, never shortening, a pause).
    pub fn pause(&self, provider: &str, pause: Pause) {
        let mut map = self.paused.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(provider) {
            Some(p) if p.until >= pause.until => {}
            _ => {
                map.insert(provider.to_string(), pause);
            }
        }
    }

    /// The pause in force for `provider` at `now`, if any.
    pub fn paused(&self, provider: &str, now: Timestamp) -> Option<Pause> {
        let map = self.paused.lock().unwrap_or_else(|p| p.into_inner());
        map.get(provider).filter(|p| p.until > now).cloned()
    }

    /// Every pause in force at `now`, for `/readyz`.
    pub fn pauses(&self, now: Timestamp) -> Vec<(String, Pause)> {
        let map = self.paused.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = map
            .iter()
            .filter(|(_, p)| p.until > now)
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// A verified webhook of `provider` arrived: its webhooks work. `true`
    /// when this ends an outage.
    pub fn webhook_seen(&self, provider: &str) -> bool {
        let mut map = self.webhooks.lock().unwrap_or_else(|p| p.into_inner());
        // Every webhook passes here: no allocation unless there is a count
        // to reset.
        let Some(w) = map.get_mut(provider) else {
            return false;
        };
        w.settled_by_poll = 0;
        let ended = w.outage_since.take().is_some();
        if ended {
            metrics::gauge!("finality_webhook_outage", "provider" => provider.to_string()).set(0.0);
        }
        ended
    }

    /// A poll learned a payment's final status before any webhook said it.
    /// After `threshold` of these in a row (0: never) the provider's
    /// webhooks are taken to be down: `true` when this starts an outage.
    pub fn settled_by_poll(&self, provider: &str, now: Timestamp, threshold: u32) -> bool {
        if threshold == 0 {
            return false;
        }
        let mut map = self.webhooks.lock().unwrap_or_else(|p| p.into_inner());
        let w = map.entry(provider.to_string()).or_default();
        w.settled_by_poll = w.settled_by_poll.saturating_add(1);
        if w.outage_since.is_none() && w.settled_by_poll >= threshold {
            w.outage_since = Some(now);
            metrics::gauge!("finality_webhook_outage", "provider" => provider.to_string()).set(1.0);
            return true;
        }
        false
    }

    /// Since when `provider`'s webhooks are taken to be down, if they are.
    pub fn webhook_outage(&self, provider: &str) -> Option<Timestamp> {
        let map = self.webhooks.lock().unwrap_or_else(|p| p.into_inner());
        map.get(provider).and_then(|w| w.outage_since)
    }

    /// Every provider whose webhooks are taken to be down, for `/readyz`.
    pub fn webhook_outages(&self) -> Vec<(String, Timestamp)> {
        let map = self.webhooks.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = map
            .iter()
            .filter_map(|(k, w)| w.outage_since.map(|t| (k.clone(), t)))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls that keep finding final statuses no webhook announced mean the
    /// webhooks are down; one verified webhook means they are back.
    #[test]
    fn an_outage_starts_after_polls_settle_alone_and_ends_with_a_webhook() {
        let h = Health::new();
        let t = Timestamp(1_000);
        for _ in 0..4 {
            assert!(!h.settled_by_poll("sim", t, 5));
        }
        assert!(!h.webhook_seen("sim"), "no outage to end yet");
        for _ in 0..4 {
            assert!(
                !h.settled_by_poll("sim", t, 5),
                "a webhook restarted the count"
            );
        }
        assert!(
            h.settled_by_poll("sim", t, 5),
            "the fifth in a row starts it"
        );
        assert!(!h.settled_by_poll("sim", t, 5), "once");
        assert_eq!(h.webhook_outage("sim"), Some(t));
        assert_eq!(h.webhook_outages(), vec![("sim".to_string(), t)]);
        assert!(h.webhook_seen("sim"));
        assert_eq!(h.webhook_outage("sim"), None);
        assert!(!h.settled_by_poll("other", t, 0), "0 turns it off");
    }
}
