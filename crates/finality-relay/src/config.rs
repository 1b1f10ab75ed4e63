//! `[events]` in `finality.toml`.

use serde::{Deserialize, Serialize};
use std::time::Duration;

fn default_retention() -> Duration {
    Duration::from_secs(7 * 24 * 3600)
}
fn default_retry_for() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_concurrency() -> usize {
    4
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpEndpoint {
    pub name: String,
    pub url: String,
    /// Environment variable holding the `whsec_` secret deliveries are signed with.
    pub secret_env: String,
    /// Event types to send (e.g. "payment.succeeded"); empty: all.
    #[serde(default)]
    pub types: Vec<String>,
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// Deliveries in flight at once (never two of one payment).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Retry this long before the endpoint is marked failing (then keep
    /// retrying at the cap).
    #[serde(default = "default_retry_for", with = "humantime_serde")]
    pub retry_for: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsConfig {
    pub url: String,
    #[serde(default = "default_stream")]
    pub stream: String,
    #[serde(default = "default_prefix")]
    pub subject_prefix: String,
    #[serde(default = "default_dup_window", with = "humantime_serde")]
    pub duplicate_window: Duration,
}

fn default_stream() -> String {
    "FINALITY".into()
}
fn default_prefix() -> String {
    "finality".into()
}
fn default_dup_window() -> Duration {
    Duration::from_secs(120)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EventsConfig {
    /// Whether this node sequences the feed and pushes (one node is enough;
    /// several are safe but deliver duplicates).
    pub push: bool,
    /// Events delivered everywhere are deleted after this long; the pull
    /// feed only reaches back this far.
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
    pub http: Vec<HttpEndpoint>,
    pub nats: Option<NatsConfig>,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            push: true,
            retention: default_retention(),
            http: Vec::new(),
            nats: None,
        }
    }
}
