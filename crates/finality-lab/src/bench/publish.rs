//! Publishing per channel against the feed's own rate, in one run: `n`
//! events seeded into a fresh PostgreSQL schema (complete: each has its
//! payment), then one pusher per destination drains the feed from 0 while
//! a consumer of the broker's own client takes every event. The feed's
//! rate is the same pusher with a sink that sends nothing (what reading,
//! completing and cursor bookkeeping alone allow). Latency is from the
//! start of an event's delivery to its arrival at the consumer. The
//! machine's own brokers on loopback are used (NATS 4222 with JetStream,
//! RabbitMQ 5672, Redis 6379); a channel whose broker does not answer is
//! skipped with a note.

use super::scratch::Scratch;
use async_trait::async_trait;
use finality_core::{Clock, SystemClock};
use finality_relay::event::{Encoding, Event};
use finality_relay::{PushConfig, Pusher, Sink, SinkError};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One channel's figures.
#[derive(Debug, Clone, Serialize)]
pub struct PublishRow {
    pub channel: String,
    pub concurrency: usize,
    pub events: usize,
    pub events_per_s: f64,
    /// Delivery start → consumer, ms.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

type Marks = Arc<Mutex<HashMap<String, Instant>>>;

/// Wraps a sink: notes when each event's delivery started.
struct Timed {
    inner: Arc<dyn Sink>,
    sent: Marks,
}

#[async_trait]
impl Sink for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn deliver(&self, e: &Event) -> Result<Option<u16>, SinkError> {
        if let Ok(mut m) = self.sent.lock() {
            m.entry(e.outbox.event_id.clone())
                .or_insert_with(Instant::now);
        }
        self.inner.deliver(e).await
    }
}

/// Sends nothing: the feed's own rate.
struct Null;

#[async_trait]
impl Sink for Null {
    fn name(&self) -> &str {
        "null"
    }
    async fn deliver(&self, _: &Event) -> Result<Option<u16>, SinkError> {
        Ok(None)
    }
}

fn mark(m: &Marks, id: &str) {
    if let Ok(mut m) = m.lock() {
        m.entry(id.to_string()).or_insert_with(Instant::now);
    }
}

/// `n` payments, each with one sequenced `payment.succeeded` event.
async fn seed(url: &str, n: usize, tag: &str) -> anyhow::Result<Scratch> {
    let s = Scratch::new("postgres", url, tag, 8).await?;
    let now = SystemClock.now().0;
    s.exec(&format!(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, metadata, status, \
         created_at, updated_at) SELECT 'pub' || x, 'bench', 'rpub' || x, 'payment', 100 + x, 'EUR', \
         jsonb_build_object('order', x), 'succeeded', {now}, {now} FROM generate_series(1, {n}) AS g(x); \
         INSERT INTO outbox (event_id, payment_id, type, status, previous_status, source, occurred_at, \
         feed_seq) SELECT 'evt_' || lpad(to_hex(x), 32, '0'), 'pub' || x, 'payment.succeeded', \
         'succeeded', 'pending', 'webhook', {now}, x FROM generate_series(1, {n}) AS g(x); \
         UPDATE feed_state SET last_seq = {n} WHERE id = 1"
    ))
    .await?;
    Ok(s)
}

/// Drain the feed into `sink` from 0 (events/s until the cursor is at
/// `n`); then wait until `got` (the consumer's arrivals, if any) holds `n`.
async fn drain(
    s: &Scratch,
    sink: Arc<dyn Sink>,
    concurrency: usize,
    n: usize,
    got: Option<&Marks>,
) -> anyhow::Result<(f64, Marks)> {
    let sent: Marks = Arc::default();
    let name = sink.name().to_string();
    let timed = Arc::new(Timed {
        inner: sink,
        sent: sent.clone(),
    });
    let p = Pusher::new(
        s.store.clone(),
        Arc::new(SystemClock),
        timed,
        PushConfig {
            concurrency,
            ..PushConfig::default()
        },
    );
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(300);
    while s.store.destination(&name).await?.delivered_seq < n as i64 {
        if p.push_once().await? == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        anyhow::ensure!(Instant::now() < deadline, "{name}: not drained in 300 s");
    }
    let secs = t0.elapsed().as_secs_f64();
    let count = |g: &Marks| g.lock().map_or(0, |g| g.len());
    while let Some(g) = got.filter(|g| count(g) < n) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{name}: the consumer got {} of {n}",
            count(g)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok((n as f64 / secs, sent))
}

fn row(
    channel: &str,
    concurrency: usize,
    n: usize,
    rate: f64,
    sent: &Marks,
    got: &Marks,
) -> PublishRow {
    let sent = sent.lock().map(|m| m.clone()).unwrap_or_default();
    let got = got.lock().map(|m| m.clone()).unwrap_or_default();
    let mut us: Vec<i64> = got
        .iter()
        .filter_map(|(id, at)| {
            sent.get(id)
                .map(|s| at.saturating_duration_since(*s).as_micros() as i64)
        })
        .collect();
    us.sort_unstable();
    PublishRow {
        channel: channel.into(),
        concurrency,
        events: n,
        events_per_s: rate,
        p50_ms: super::quantile_ms(&us, 0.5),
        p99_ms: super::quantile_ms(&us, 0.99),
        max_ms: super::quantile_ms(&us, 1.0),
    }
}

/// Every channel once; an `Err` row is a channel whose broker is not there (why).
pub async fn run(url: &str, n: usize) -> anyhow::Result<Vec<anyhow::Result<PublishRow>>> {
    let tag = format!("publish_{}", std::process::id());
    let s = seed(url, n, &tag).await?;
    let mut out = Vec::new();
    let enc = Encoding::default();

    // The feed alone.
    {
        let (rate, _) = drain(&s, Arc::new(Null), 16, n, None).await?;
        out.push(Ok(PublishRow {
            channel: "feed (no send)".into(),
            concurrency: 16,
            events: n,
            events_per_s: rate,
            p50_ms: 0.0,
            p99_ms: 0.0,
            max_ms: 0.0,
        }));
    }
    out.push(http(&s, n, enc.clone()).await);
    out.push(nats(&s, n, enc.clone()).await);
    out.push(rabbitmq(&s, n, enc.clone()).await);
    out.push(redis(&s, n, enc).await);
    s.drop_it().await?;
    Ok(out)
}

async fn http(s: &Scratch, n: usize, enc: Encoding) -> anyhow::Result<PublishRow> {
    let got: Marks = Arc::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |h: axum::http::HeaderMap| {
            let keep = keep.clone();
            async move {
                if let Some(id) = h.get("webhook-id").and_then(|v| v.to_str().ok()) {
                    mark(&keep, id);
                }
                "ok"
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", l.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(l, app).await });
    let key = standardwebhooks_key();
    let sink = finality_relay::http::HttpSink::new(
        "bench",
        &url,
        key,
        vec![],
        enc,
        Duration::from_secs(10),
        Arc::new(SystemClock),
    )?;
    let r = drain(s, Arc::new(sink), 4, n, Some(&got)).await;
    server.abort();
    let (rate, sent) = r?;
    Ok(row("http (signed)", 4, n, rate, &sent, &got))
}

fn standardwebhooks_key() -> standardwebhooks::Webhook {
    // A fixed bench key: nothing is protected by it.
    match standardwebhooks::Webhook::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") {
        Ok(k) => k,
        Err(_) => unreachable!("a valid constant key"),
    }
}

async fn nats(s: &Scratch, n: usize, enc: Encoding) -> anyhow::Result<PublishRow> {
    use futures::StreamExt;
    let url = "nats://127.0.0.1:4222";
    let client = async_nats::connect(url)
        .await
        .map_err(|e| anyhow::anyhow!("NATS at {url}: {e}"))?;
    let prefix = format!("finbench{}", std::process::id());
    let stream = format!("FINBENCH{}", std::process::id());
    let mut sub = client.subscribe(format!("{prefix}.>")).await?;
    let got: Marks = Arc::default();
    let keep = got.clone();
    let reader = tokio::spawn(async move {
        while let Some(m) = sub.next().await {
            let v: serde_json::Value = serde_json::from_slice(&m.payload).unwrap_or_default();
            if let Some(id) = v["id"].as_str() {
                mark(&keep, id);
            }
        }
    });
    let sink = finality_relay::nats::NatsSink::connect(
        url,
        &stream,
        &prefix,
        Duration::from_secs(120),
        enc,
    )
    .await?;
    let r = drain(s, Arc::new(sink), 16, n, Some(&got)).await;
    reader.abort();
    let js = async_nats::jetstream::new(client);
    let _ = js.delete_stream(&stream).await;
    let (rate, sent) = r?;
    Ok(row("nats jetstream", 16, n, rate, &sent, &got))
}

async fn amqp(url: &str) -> anyhow::Result<lapin::Connection> {
    finality_relay::rabbitmq::connect(url)
        .await
        .map_err(|e| anyhow::anyhow!("RabbitMQ at 127.0.0.1:5672: {e}"))
}

async fn rabbitmq(s: &Scratch, n: usize, enc: Encoding) -> anyhow::Result<PublishRow> {
    use futures::StreamExt;
    use lapin::options::*;
    use lapin::types::FieldTable;
    let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
    let exchange = format!("finality.bench.{}", std::process::id());
    let conn = amqp(url).await?;
    let ch = conn.create_channel().await?;
    ch.exchange_declare(
        &exchange,
        lapin::ExchangeKind::Topic,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await?;
    let q = ch
        .queue_declare(
            "",
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    ch.queue_bind(
        q.name().as_str(),
        &exchange,
        "#",
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    let mut consumer = ch
        .basic_consume(
            q.name().as_str(),
            "bench",
            BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    let got: Marks = Arc::default();
    let keep = got.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(d)) = consumer.next().await {
            if let Some(id) = d.properties.message_id() {
                mark(&keep, id.as_str());
            }
        }
    });
    let sink =
        finality_relay::rabbitmq::RabbitSink::new(url, &exchange, enc, Duration::from_secs(10));
    let r = drain(s, Arc::new(sink), 16, n, Some(&got)).await;
    reader.abort();
    let _ = ch
        .exchange_delete(&exchange, ExchangeDeleteOptions::default())
        .await;
    let _ = conn.close(200, "bench done").await;
    let (rate, sent) = r?;
    Ok(row("rabbitmq (confirms)", 16, n, rate, &sent, &got))
}

async fn redis(s: &Scratch, n: usize, enc: Encoding) -> anyhow::Result<PublishRow> {
    use redis::streams::{StreamReadOptions, StreamReadReply};
    use redis::AsyncCommands;
    let url = "redis://127.0.0.1:6379/";
    let key = format!("finality:bench:{}", std::process::id());
    let client = redis::Client::open(url)?;
    let mut c = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| anyhow::anyhow!("Redis at 127.0.0.1:6379: {e}"))?;
    let got: Marks = Arc::default();
    let keep = got.clone();
    let rkey = key.clone();
    let mut rc = client.get_multiplexed_async_connection().await?;
    let reader = tokio::spawn(async move {
        let mut last = "0".to_string();
        loop {
            let opts = StreamReadOptions::default().block(1000).count(1000);
            let r: Result<StreamReadReply, _> = rc.xread_options(&[&rkey], &[&last], &opts).await;
            let Ok(r) = r else { break };
            for k in r.keys {
                for e in k.ids {
                    if let Some(id) = e.get::<String>("id") {
                        mark(&keep, &id);
                    }
                    last = e.id;
                }
            }
        }
    });
    let sink = finality_relay::redis_streams::RedisSink::new(
        url,
        &key,
        1_000_000,
        enc,
        Duration::from_secs(10),
    )?;
    let r = drain(s, Arc::new(sink), 16, n, Some(&got)).await;
    reader.abort();
    let _: Result<i64, _> = c.del(&key).await;
    let (rate, sent) = r?;
    Ok(row("redis streams", 16, n, rate, &sent, &got))
}
