//! `[events]` in `finality.toml`.

use crate::event::{Format, Schema};
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
    /// The event's shape: 2 (complete, the default) or 1 (the thin shape
    /// of earlier versions, for consumers built on it).
    #[serde(default)]
    pub schema: Schema,
    /// `json` (the event is the body) or `cloudevents` (a CloudEvents 1.0
    /// JSON envelope around it).
    #[serde(default)]
    pub format: Format,
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
    /// Publishes awaiting their JetStream ack at once (never two of one
    /// payment).
    #[serde(default = "default_broker_concurrency")]
    pub concurrency: usize,
    /// The event's shape: 2 (complete, the default) or 1 (the thin shape
    /// of earlier versions, for consumers built on it).
    #[serde(default)]
    pub schema: Schema,
    /// `json` (the event is the body) or `cloudevents` (a CloudEvents 1.0
    /// JSON envelope around it).
    #[serde(default)]
    pub format: Format,
}

/// `[events.rabbitmq]`: publish to a durable topic exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RabbitConfig {
    /// Environment variable holding the `amqp://user:password@host:port/vhost`
    /// URL (it carries a password, so never the file itself).
    pub url_env: String,
    #[serde(default = "default_exchange")]
    pub exchange: String,
    /// Publishes awaiting their confirm at once (never two of one payment).
    #[serde(default = "default_broker_concurrency")]
    pub concurrency: usize,
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// The event's shape: 2 (complete, the default) or 1 (the thin shape
    /// of earlier versions, for consumers built on it).
    #[serde(default)]
    pub schema: Schema,
    /// `json` (the event is the body) or `cloudevents` (a CloudEvents 1.0
    /// JSON envelope around it).
    #[serde(default)]
    pub format: Format,
}

/// `[events.redis]`: append to a Redis stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// Environment variable holding the `redis://[:password@]host:port/db` URL.
    pub url_env: String,
    #[serde(default = "default_redis_stream")]
    pub stream: String,
    /// `XADD … MAXLEN ~ max_len`: Redis trims the stream to about this many
    /// entries (consumers that fall further behind lose the oldest).
    #[serde(default = "default_max_len")]
    pub max_len: u64,
    #[serde(default = "default_broker_concurrency")]
    pub concurrency: usize,
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// The event's shape: 2 (complete, the default) or 1 (the thin shape
    /// of earlier versions, for consumers built on it).
    #[serde(default)]
    pub schema: Schema,
    /// `json` (the event is the body) or `cloudevents` (a CloudEvents 1.0
    /// JSON envelope around it).
    #[serde(default)]
    pub format: Format,
}

fn default_exchange() -> String {
    "finality.events".into()
}
fn default_redis_stream() -> String {
    "finality:events".into()
}
fn default_max_len() -> u64 {
    1_000_000
}
fn default_broker_concurrency() -> usize {
    16
}
fn default_source() -> String {
    crate::event::DEFAULT_SOURCE.into()
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
    pub rabbitmq: Option<RabbitConfig>,
    pub redis: Option<RedisConfig>,
    /// The CloudEvents `source` of every event (destinations with
    /// `format = "cloudevents"`): a URI reference naming this deployment.
    #[serde(default = "default_source")]
    pub cloudevents_source: String,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            push: true,
            retention: default_retention(),
            http: Vec::new(),
            nats: None,
            rabbitmq: None,
            redis: None,
            cloudevents_source: default_source(),
        }
    }
}
