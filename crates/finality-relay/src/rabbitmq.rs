//! RabbitMQ push: each event published to a durable topic exchange with
//! routing key `<kind>.<status>` (`payment.succeeded`), persistent
//! (delivery mode 2), `message_id` = the event id so a consumer dedupes
//! redeliveries. The channel is in confirm mode and an event counts as
//! delivered only once the broker confirmed it (for a persistent message
//! routed to a durable queue, once it is on disk), so the cursor never
//! passes an event the broker could still lose. While the broker is down
//! the connection is made again on the next attempt and events wait in the
//! outbox.
//!
//! Messages that no queue is bound to receive are dropped by RabbitMQ (not
//! an error for a publisher): declare and bind the consumer's queue before
//! events flow (`docs/EVENTS.md`), or give the exchange an
//! alternate-exchange.

use crate::event::{Encoding, Event};
use crate::{Sink, SinkError};
use async_trait::async_trait;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions};
use lapin::publisher_confirm::Confirmation;
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use std::time::Duration;
use tokio::sync::Mutex;

pub struct RabbitSink {
    name: String,
    url: String,
    exchange: String,
    encoding: Encoding,
    timeout: Duration,
    /// The open connection and its confirm-mode channel, made on first use
    /// and again after the broker went away.
    open: Mutex<Option<(Connection, Channel)>>,
}

/// An AMQP connection driven by this process's tokio runtime (lapin's own
/// executor otherwise), named `finality` in the broker's management view.
pub async fn connect(url: &str) -> lapin::Result<Connection> {
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio)
        .with_connection_name("finality".into());
    Connection::connect(url, props).await
}

fn err(message: String) -> SinkError {
    SinkError {
        status_code: None,
        message,
    }
}

impl RabbitSink {
    /// Connects on the first delivery, so a broker down at start only
    /// delays events. `url` is `amqp://user:pass@host:port/vhost`.
    pub fn new(url: &str, exchange: &str, encoding: Encoding, timeout: Duration) -> Self {
        RabbitSink {
            name: "rabbitmq".into(),
            url: url.to_string(),
            exchange: exchange.to_string(),
            encoding,
            timeout,
            open: Mutex::new(None),
        }
    }

    async fn connect(&self) -> Result<(Connection, Channel), SinkError> {
        // The URL is not in the message: it may carry a password.
        let conn = connect(&self.url)
            .await
            .map_err(|e| err(format!("connecting to RabbitMQ: {e}")))?;
        let ch = conn
            .create_channel()
            .await
            .map_err(|e| err(format!("opening a channel: {e}")))?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| err(format!("enabling publisher confirms: {e}")))?;
        ch.exchange_declare(
            &self.exchange,
            ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(|e| err(format!("declaring exchange {}: {e}", self.exchange)))?;
        Ok((conn, ch))
    }

    async fn channel(&self) -> Result<Channel, SinkError> {
        let mut open = self.open.lock().await;
        if let Some((conn, ch)) = &*open {
            if conn.status().connected() && ch.status().connected() {
                return Ok(ch.clone());
            }
        }
        *open = None;
        let (conn, ch) = tokio::time::timeout(self.timeout, self.connect())
            .await
            .map_err(|_| err("connecting to RabbitMQ: timeout".into()))??;
        *open = Some((conn, ch.clone()));
        Ok(ch)
    }

    async fn publish(&self, ev: &Event) -> Result<(), SinkError> {
        let ch = self.channel().await?;
        let e = &ev.outbox;
        let body = self.encoding.encode(ev).to_string();
        let props = BasicProperties::default()
            .with_message_id(ShortString::from(e.event_id.clone()))
            .with_delivery_mode(2)
            .with_content_type(ShortString::from(self.encoding.content_type()))
            .with_type(ShortString::from(e.event_type.clone()))
            .with_timestamp(u64::try_from(e.occurred_at.0 / 1000).unwrap_or(0));
        let confirm = ch
            .basic_publish(
                &self.exchange,
                &e.event_type,
                BasicPublishOptions::default(),
                body.as_bytes(),
                props,
            )
            .await
            .map_err(|x| err(format!("publish: {x}")))?
            .await
            .map_err(|x| err(format!("publish confirm: {x}")))?;
        match confirm {
            Confirmation::Ack(_) => Ok(()),
            Confirmation::Nack(_) => Err(err("the broker refused the message (nack)".into())),
            Confirmation::NotRequested => Err(err(
                "the channel is not in confirm mode; not counted as delivered".into(),
            )),
        }
    }
}

#[async_trait]
impl Sink for RabbitSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn schema(&self) -> crate::event::Schema {
        self.encoding.schema
    }

    async fn deliver(&self, ev: &Event) -> Result<Option<u16>, SinkError> {
        match tokio::time::timeout(self.timeout, self.publish(ev)).await {
            Ok(Ok(())) => Ok(None),
            Ok(Err(e)) => {
                // The next attempt opens a new connection.
                *self.open.lock().await = None;
                Err(e)
            }
            Err(_) => {
                *self.open.lock().await = None;
                Err(err("publish: no confirm within the timeout".into()))
            }
        }
    }
}
