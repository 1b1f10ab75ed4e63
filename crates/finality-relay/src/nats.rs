//! NATS JetStream push: each event published to `<prefix>.<kind>.<status>`
//! with `Nats-Msg-Id` = the event id, so JetStream drops a redelivery inside
//! its duplicate window; an event counts as delivered only once the publish
//! ack arrives. While NATS is down, events wait; none is lost.

use crate::event::{Encoding, Event};
use crate::{Sink, SinkError};
use async_nats::jetstream;
use async_trait::async_trait;
use finality_store::OutboxEvent;
use std::time::Duration;
use tokio::sync::OnceCell;

pub struct NatsSink {
    name: String,
    stream: String,
    prefix: String,
    duplicate_window: Duration,
    encoding: Encoding,
    client: async_nats::Client,
    js: jetstream::Context,
    ready: OnceCell<()>,
}

impl NatsSink {
    /// Connects in the background (and reconnects for ever), so a NATS
    /// outage at start only delays events.
    pub async fn connect(
        url: &str,
        stream: &str,
        prefix: &str,
        duplicate_window: Duration,
        encoding: Encoding,
    ) -> Result<Self, crate::StartError> {
        let client = async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(2))
            .connect(url)
            .await
            .map_err(|e| crate::StartError::Nats {
                url: url.to_string(),
                detail: e.to_string(),
            })?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(Duration::from_secs(5));
        Ok(NatsSink {
            name: "nats".into(),
            stream: stream.to_string(),
            prefix: prefix.to_string(),
            duplicate_window,
            encoding,
            client,
            js,
            ready: OnceCell::new(),
        })
    }

    pub fn subject(&self, e: &OutboxEvent) -> String {
        // "payment.succeeded" → "<prefix>.payment.succeeded"
        format!("{}.{}", self.prefix, e.event_type)
    }

    async fn ensure_stream(&self) -> Result<(), SinkError> {
        self.ready
            .get_or_try_init(|| async {
                self.js
                    .get_or_create_stream(jetstream::stream::Config {
                        name: self.stream.clone(),
                        subjects: vec![format!("{}.>", self.prefix)],
                        duplicate_window: self.duplicate_window,
                        ..Default::default()
                    })
                    .await
                    .map(|_| ())
                    .map_err(|e| SinkError {
                        status_code: None,
                        message: format!("creating stream {}: {e}", self.stream),
                    })
            })
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl Sink for NatsSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn schema(&self) -> crate::event::Schema {
        self.encoding.schema
    }

    async fn deliver(&self, ev: &Event) -> Result<Option<u16>, SinkError> {
        let e = &ev.outbox;
        if self.client.connection_state() != async_nats::connection::State::Connected {
            return Err(SinkError {
                status_code: None,
                message: "NATS not connected".into(),
            });
        }
        self.ensure_stream().await?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", e.event_id.as_str());
        headers.insert("Content-Type", self.encoding.content_type());
        let payload = bytes::Bytes::from(self.encoding.encode(ev).to_string());
        let err = |m: String| SinkError {
            status_code: None,
            message: m,
        };
        let ack = self
            .js
            .publish_with_headers(self.subject(e), headers, payload)
            .await
            .map_err(|x| err(format!("publish: {x}")))?;
        ack.await.map_err(|x| err(format!("publish ack: {x}")))?;
        Ok(None)
    }
}
