//! Redis Streams push: each event appended with `XADD <stream> MAXLEN ~ N *`
//! as the fields `id` (the event id: dedupe on it), `type`, `payment_id`,
//! `seq` and `event` (the encoded event). An event counts as delivered
//! only once Redis replied with the entry's id; consumers read with
//! consumer groups (`XREADGROUP`, `XACK`). Redis's own durability decides
//! what survives a Redis restart (`appendonly yes` with `appendfsync
//! always` loses nothing acknowledged); while Redis is down events wait in
//! the outbox.

use crate::event::{Encoding, Event};
use crate::{Sink, SinkError};
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use tokio::sync::Mutex;

pub struct RedisSink {
    name: String,
    client: redis::Client,
    stream: String,
    max_len: u64,
    encoding: Encoding,
    timeout: Duration,
    /// Made on first use; it reconnects by itself after a failure.
    conn: Mutex<Option<ConnectionManager>>,
}

fn err(message: String) -> SinkError {
    SinkError {
        status_code: None,
        message,
    }
}

impl RedisSink {
    /// Connects on the first delivery, so Redis down at start only delays
    /// events. Fails only for a URL that is not a Redis URL.
    pub fn new(
        url: &str,
        stream: &str,
        max_len: u64,
        encoding: Encoding,
        timeout: Duration,
    ) -> Result<Self, crate::StartError> {
        let client = redis::Client::open(url).map_err(|e| crate::StartError::Redis {
            detail: e.to_string(),
        })?;
        Ok(RedisSink {
            name: "redis".into(),
            client,
            stream: stream.to_string(),
            max_len,
            encoding,
            timeout,
            conn: Mutex::new(None),
        })
    }

    async fn connection(&self) -> Result<ConnectionManager, SinkError> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = &*conn {
            return Ok(c.clone());
        }
        let cfg = ConnectionManagerConfig::new()
            .set_connection_timeout(self.timeout)
            .set_response_timeout(self.timeout)
            .set_number_of_retries(1);
        let c = self
            .client
            .get_connection_manager_with_config(cfg)
            .await
            .map_err(|e| err(format!("connecting to Redis: {e}")))?;
        *conn = Some(c.clone());
        Ok(c)
    }
}

#[async_trait]
impl Sink for RedisSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn schema(&self) -> crate::event::Schema {
        self.encoding.schema
    }

    async fn deliver(&self, ev: &Event) -> Result<Option<u16>, SinkError> {
        let mut c = self.connection().await?;
        let e = &ev.outbox;
        let body = self.encoding.encode(ev).to_string();
        let added: Result<String, _> = redis::cmd("XADD")
            .arg(&self.stream)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.max_len)
            .arg("*")
            .arg("id")
            .arg(&e.event_id)
            .arg("type")
            .arg(&e.event_type)
            .arg("payment_id")
            .arg(&e.payment_id)
            .arg("seq")
            .arg(e.seq)
            .arg("event")
            .arg(body)
            .query_async(&mut c)
            .await;
        added
            .map(|_| None)
            .map_err(|x| err(format!("XADD {}: {x}", self.stream)))
    }
}
