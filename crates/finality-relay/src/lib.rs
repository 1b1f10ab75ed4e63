//! Events out: every applied transition is one outbox row; this crate turns
//! them into a feed that never skips and pushes it, at least once and in
//! feed order, to HTTP endpoints (signed per Standard Webhooks) and NATS
//! JetStream.
//!
//! # Layout
//! - [`event`]: the event's JSON shape, shared by the pull feed and pushes.
//! - [`sequencer`]: gives committed outbox rows their feed positions.
//! - [`pusher`]: one cursor per destination; retries, alerts, ordering.
//! - [`http`], [`nats`], [`rabbitmq`], [`redis_streams`]: the kinds of
//!   destination ([`Sink`]s).
//! - [`replay`]: rewind, redeliver, pause: what an admin does to a destination.
//! - [`config`]: `[events]` in `finality.toml`.
#![forbid(unsafe_code)]

pub mod config;
pub mod event;
pub mod http;
pub mod nats;
pub mod pusher;
pub mod rabbitmq;
pub mod redis_streams;
pub mod replay;
pub mod sequencer;

pub use pusher::{PushConfig, Pusher};

use async_trait::async_trait;
use finality_store::OutboxEvent;

pub use event::Event;

/// A failed delivery: the status code if the destination answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SinkError {
    pub status_code: Option<u16>,
    pub message: String,
}

/// A push destination.
#[async_trait]
pub trait Sink: Send + Sync + 'static {
    /// The cursor's name in `event_destinations`.
    fn name(&self) -> &str;

    /// Whether this destination wants the event (type filters). Events it
    /// does not want are passed over, in order.
    fn accepts(&self, _event: &OutboxEvent) -> bool {
        true
    }

    /// The shape it is sent events in.
    fn schema(&self) -> event::Schema {
        event::Schema::default()
    }

    /// Whether the event goes to this destination: its type filters, and
    /// its schema (events that are not a status change, such as
    /// `payment.amounts`, exist from schema 3 on; a destination pinned to
    /// an earlier schema never gets them).
    fn wants(&self, event: &OutboxEvent) -> bool {
        self.accepts(event)
            && (self.schema().has_notices() || !finality_store::is_notice(&event.event_type))
    }

    /// Deliver one event; `Ok` only once the destination has it durably
    /// (2xx, a JetStream publish ack, a RabbitMQ publisher confirm, a Redis
    /// `XADD` reply). Returns the status code, if any.
    async fn deliver(&self, event: &Event) -> Result<Option<u16>, SinkError>;
}

/// Start what `[events]` asks for: the sequencer, one pusher per
/// destination and the pruner. Returns the tasks (they end on `shutdown`).
pub async fn start(
    store: std::sync::Arc<dyn finality_store::EventFeed>,
    clock: std::sync::Arc<dyn finality_core::Clock>,
    cfg: &config::EventsConfig,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Vec<tokio::task::JoinHandle<()>>, StartError> {
    use std::sync::Arc;
    let mut tasks = Vec::new();
    if !cfg.push {
        return Ok(tasks);
    }
    tasks.push(tokio::spawn(sequencer::run(
        store.clone(),
        std::time::Duration::from_millis(100),
        shutdown.clone(),
    )));
    let mut names = Vec::new();
    let encoding = |schema, format| event::Encoding {
        schema,
        format,
        source: cfg.cloudevents_source.clone(),
    };
    let mut spawn =
        |sink: Arc<dyn Sink>, concurrency: usize, retry_for: Option<std::time::Duration>| {
            names.push(sink.name().to_string());
            let mut push = PushConfig {
                concurrency,
                ..PushConfig::default()
            };
            if let Some(r) = retry_for {
                push.retry_for = r;
            }
            let p = Pusher::new(store.clone(), clock.clone(), sink, push);
            tasks.push(tokio::spawn(p.run(shutdown.clone())));
        };
    for ep in &cfg.http {
        let secret = finality_core::secret::Secret::from_env(&ep.secret_env, "secret_env")
            .map_err(|source| StartError::Secret {
                name: format!("events.http `{}`", ep.name),
                source,
            })?;
        let secret = secret.expose();
        check_push_secret(secret).map_err(|why| StartError::WeakSecret {
            name: ep.name.clone(),
            var: ep.secret_env.clone(),
            why,
        })?;
        let key =
            standardwebhooks::Webhook::new(secret.trim()).map_err(|e| StartError::WeakSecret {
                name: ep.name.clone(),
                var: ep.secret_env.clone(),
                why: PushSecretError::NotBase64(e.to_string()),
            })?;
        let sink = http::HttpSink::new(
            &ep.name,
            &ep.url,
            key,
            ep.types.clone(),
            encoding(ep.schema, ep.format),
            ep.timeout,
            clock.clone(),
        )?;
        spawn(Arc::new(sink), ep.concurrency, Some(ep.retry_for));
    }
    if let Some(n) = &cfg.nats {
        let sink = nats::NatsSink::connect(
            &n.url,
            &n.stream,
            &n.subject_prefix,
            n.duplicate_window,
            encoding(n.schema, n.format),
        )
        .await?;
        spawn(Arc::new(sink), n.concurrency, None);
    }
    if let Some(r) = &cfg.rabbitmq {
        let url =
            finality_core::secret::Secret::from_env(&r.url_env, "url_env").map_err(|source| {
                StartError::Secret {
                    name: "events.rabbitmq".into(),
                    source,
                }
            })?;
        let sink = rabbitmq::RabbitSink::new(
            url.expose(),
            &r.exchange,
            encoding(r.schema, r.format),
            r.timeout,
        );
        spawn(Arc::new(sink), r.concurrency, None);
    }
    if let Some(r) = &cfg.redis {
        let url =
            finality_core::secret::Secret::from_env(&r.url_env, "url_env").map_err(|source| {
                StartError::Secret {
                    name: "events.redis".into(),
                    source,
                }
            })?;
        let sink = redis_streams::RedisSink::new(
            url.expose(),
            &r.stream,
            r.max_len,
            encoding(r.schema, r.format),
            r.timeout,
        )?;
        spawn(Arc::new(sink), r.concurrency, None);
    }
    tasks.push(tokio::spawn(prune_loop(
        store,
        clock,
        names,
        cfg.retention,
        shutdown,
    )));
    Ok(tasks)
}

/// Fewest key bytes a push signing secret may have: with `whsec_` (an
/// empty key) every receiver's signature check would pass for anyone.
pub const MIN_PUSH_SECRET_BYTES: usize = 16;

/// Refuse a push secret whose key (the base64 after `whsec_`) is shorter
/// than [`MIN_PUSH_SECRET_BYTES`]; the reason, for the caller to name the
/// variable.
pub fn check_push_secret(secret: &str) -> Result<(), PushSecretError> {
    use base64::Engine as _;
    let b64 = secret
        .trim()
        .strip_prefix("whsec_")
        .unwrap_or(secret.trim());
    let key = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| PushSecretError::NotBase64(e.to_string()))?;
    if key.len() < MIN_PUSH_SECRET_BYTES {
        return Err(PushSecretError::Short(key.len()));
    }
    Ok(())
}

/// A push signing secret that cannot sign: what is wrong with it, for the
/// caller to name the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushSecretError {
    #[error("is not whsec_<base64>: {0}")]
    NotBase64(String),
    #[error(
        "holds a {0}-byte key; a push signing secret needs at least {MIN_PUSH_SECRET_BYTES} \
         (every receiver's signature check would be defeated)"
    )]
    Short(usize),
}

/// Why the relay cannot start what `[events]` asks for, naming the
/// destination and the setting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{name}: {source}")]
    Secret {
        name: String,
        source: finality_core::secret::SecretError,
    },
    #[error("events.http `{name}`: {var} (secret_env) {why}")]
    WeakSecret {
        name: String,
        var: String,
        why: PushSecretError,
    },
    #[error("cannot build HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("NATS at {url}: {detail}")]
    Nats { url: String, detail: String },
    #[error("events.redis: url_env does not hold a Redis URL: {detail}")]
    Redis { detail: String },
}

/// Delete events past retention that every destination has (with no push
/// destination, retention alone decides: pull consumers must keep up).
async fn prune_loop(
    store: std::sync::Arc<dyn finality_store::EventFeed>,
    clock: std::sync::Arc<dyn finality_core::Clock>,
    destinations: Vec<String>,
    retention: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    while !shutdown.is_cancelled() {
        let mut max_seq = i64::MAX;
        let mut ok = true;
        for d in &destinations {
            match store.destination(d).await {
                Ok(st) => max_seq = max_seq.min(st.delivered_seq),
                Err(e) => {
                    tracing::warn!(error = %e, "pruning: reading a destination failed");
                    ok = false;
                }
            }
        }
        if ok {
            let before = finality_core::Timestamp(
                clock.now().millis() - i64::try_from(retention.as_millis()).unwrap_or(i64::MAX),
            );
            match store.prune_events(max_seq, before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(pruned = n, "delivered events past retention deleted"),
                Err(e) => tracing::warn!(error = %e, "pruning events failed"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(600)) => {}
            _ = shutdown.cancelled() => {}
        }
    }
}
