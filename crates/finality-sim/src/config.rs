//! What the simulator draws from. Every field has a default that looks like a
//! card provider on a normal day.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long after creation a payment settles at the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SettleTime {
    /// Log-normal: most settle near `median`, a long tail settles much later.
    LogNormal {
        #[serde(with = "humantime_serde")]
        median: Duration,
        sigma: f64,
    },
    Fixed {
        #[serde(with = "humantime_serde")]
        after: Duration,
    },
}

/// Probabilities of each outcome; the rest (1 − sum) never settles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeMix {
    pub succeeded: f64,
    pub failed: f64,
    pub cancelled: f64,
}

/// How the webhook of a payment misbehaves (drawn independently).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookMix {
    pub lost: f64,
    pub delayed: f64,
    #[serde(with = "humantime_serde")]
    pub delay: Duration,
    pub duplicated: f64,
    pub reordered: f64,
}

/// Faults injected into status queries, each a probability per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    pub rate_limited: f64,
    #[serde(with = "humantime_serde")]
    pub retry_after: Duration,
    pub server_error: f64,
    pub timeout: f64,
    /// How long a "timeout" hangs before answering 504 (real time).
    #[serde(with = "humantime_serde")]
    pub hang: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub settle: SettleTime,
    /// Fraction of the settle time after which the status is `processing`.
    pub processing_at: f64,
    pub outcomes: OutcomeMix,
    pub webhooks: WebhookMix,
    pub faults: Faults,
    /// Real time each status answer takes (makes overlapping calls visible).
    #[serde(with = "humantime_serde")]
    pub latency: Duration,
    /// When set, status queries need `Authorization: Bearer <api_key>`.
    pub api_key: Option<String>,
    /// When set, a status call beyond this many in the last second gets a
    /// 429 with `Retry-After: 1`, as a provider's limiter would.
    #[serde(default)]
    pub max_calls_per_second: Option<u32>,
    /// How long OAuth tokens (PayPal) live; 9 h by default, as PayPal's.
    #[serde(default, with = "humantime_serde")]
    pub token_ttl: Option<Duration>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            settle: SettleTime::LogNormal {
                median: Duration::from_secs(20),
                sigma: 1.2,
            },
            processing_at: 0.3,
            outcomes: OutcomeMix {
                succeeded: 0.86,
                failed: 0.08,
                cancelled: 0.03,
            },
            webhooks: WebhookMix {
                lost: 0.03,
                delayed: 0.05,
                delay: Duration::from_secs(40 * 60),
                duplicated: 0.05,
                reordered: 0.02,
            },
            faults: Faults {
                rate_limited: 0.0,
                retry_after: Duration::from_secs(1),
                server_error: 0.0,
                timeout: 0.0,
                hang: Duration::from_secs(30),
            },
            latency: Duration::ZERO,
            api_key: None,
            max_calls_per_second: None,
            token_ttl: None,
        }
    }
}

impl SimConfig {
    /// Every payment settles with `outcome` after `after`; no faults.
    pub fn deterministic(after: Duration) -> Self {
        SimConfig {
            settle: SettleTime::Fixed { after },
            outcomes: OutcomeMix {
                succeeded: 1.0,
                failed: 0.0,
                cancelled: 0.0,
            },
            ..SimConfig::default()
        }
    }
}
