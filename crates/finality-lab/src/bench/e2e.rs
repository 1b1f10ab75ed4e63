//! Webhook to event, end to end: the real service on loopback (durable
//! inbox, inbox processor, sequencer, an HTTP push destination) with
//! `rate × seconds` pending payments seeded; webhooks saying each one
//! succeeded are sent at a fixed `rate` (open loop: a slow answer never
//! delays the next send). For every payment, from the moment its webhook
//! was sent: (a) the 2xx, (b) the status change recorded, (c) its event
//! delivered by HTTP push to a receiver on loopback, (d) its event seen by
//! a reader long-polling `GET /v1/events?wait=30s`.

use super::ingest::{key, signed_request, webhook_state, TOKEN};
use super::scratch::Scratch;
use anyhow::{bail, Context};
use finality_server::Background;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// p50, p99 and max of one latency, ms.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    fn of(mut us: Vec<i64>) -> Latency {
        us.sort_unstable();
        let q = |f: f64| super::quantile_ms(&us, f);
        Latency {
            p50: q(0.5),
            p99: q(0.99),
            max: us.last().map_or(f64::NAN, |m| *m as f64 / 1e3),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct E2e {
    /// Webhooks sent per second, as achieved.
    pub sent_per_s: f64,
    pub ack: Latency,
    pub applied: Latency,
    pub pushed: Latency,
    pub read: Latency,
}

/// Microseconds since the Unix epoch: one timebase for every process
/// step (the status change's own time is recorded in ms).
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Payment `e{i}` (1-based), the number back from an id.
fn number(payment_id: &str) -> Option<usize> {
    payment_id.strip_prefix('e')?.parse().ok()
}

pub async fn e2e(url: &str, rate: f64, seconds: f64) -> anyhow::Result<E2e> {
    let n = ((rate * seconds) as usize).max(1);
    let s = Scratch::new("postgres", url, "e2e", 16).await?;
    let now_ms = finality_core::Clock::now(&finality_core::SystemClock).0;
    s.seed("e", n, now_ms, &format!("{}", now_ms + 86_400_000))
        .await?;
    // A running service's tables are not new: as many payments settled
    // before this run, each with its history row, and the statistics
    // PostgreSQL gathers (autovacuum does within a minute of a table's
    // growth). On a new, unanalysed `status_history` a prepared
    // statement's cached plan reads all of it on every event read for
    // the rest of the run (docs/PERFORMANCE.md, session 23).
    s.exec(&format!(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
         created_at, updated_at, finalized_at) SELECT 'old' || x, 'bench', 'rold' || x, \
         'payment', 100, 'USD', 'succeeded', {now_ms}, {now_ms}, {now_ms} \
         FROM generate_series(1, {n}) AS g(x); \
         INSERT INTO status_history (payment_id, from_status, to_status, source, observed_at, at) \
         SELECT 'old' || x, 'pending', 'succeeded', 'webhook', {now_ms}, {now_ms} \
         FROM generate_series(1, {n}) AS g(x); ANALYZE"
    ))
    .await?;

    // The push destination: records when each payment's event arrives.
    let pushed: Arc<Mutex<HashMap<usize, i64>>> = Arc::default();
    let p2 = pushed.clone();
    let receiver = axum::Router::new().route(
        "/events",
        axum::routing::post(move |body: axum::body::Bytes| {
            let at = now_us();
            let pushed = p2.clone();
            async move {
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                if let Some(i) = v["payment_id"].as_str().and_then(number) {
                    if let Ok(mut p) = pushed.lock() {
                        p.entry(i).or_insert(at);
                    }
                }
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let rl = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let receiver_url = format!("http://{}/events", rl.local_addr()?);
    let stop = CancellationToken::new();
    let rstop = stop.clone();
    tokio::spawn(async move {
        axum::serve(rl, receiver)
            .with_graceful_shutdown(async move { rstop.cancelled().await })
            .await
    });

    const SECRET_ENV: &str = "FINALITY_BENCH_EVENTS_SECRET";
    std::env::set_var(SECRET_ENV, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    let events = finality_relay::config::EventsConfig {
        http: vec![finality_relay::config::HttpEndpoint {
            name: "bench".into(),
            url: receiver_url,
            secret_env: SECRET_ENV.into(),
            types: Vec::new(),
            timeout: Duration::from_secs(10),
            concurrency: 32,
            retry_for: Duration::from_secs(3600),
            schema: Default::default(),
            format: Default::default(),
        }],
        ..Default::default()
    };
    let state = webhook_state(s.store.clone())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(finality_server::run(
        state,
        Background {
            inbox: Some(finality_engine::inbox::InboxConfig::default()),
            events: Some(events),
            ..Background::default()
        },
        listener,
        stop.clone(),
    ));

    // The long-polling feed reader.
    let read: Arc<Mutex<HashMap<usize, i64>>> = Arc::default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let reader = {
        let (read, http, base, stop) = (read.clone(), http.clone(), base.clone(), stop.clone());
        tokio::spawn(async move {
            let mut cursor = "0".to_string();
            while !stop.is_cancelled() {
                let r = http
                    .get(format!("{base}/v1/events"))
                    .query(&[
                        ("after", cursor.as_str()),
                        ("limit", "1000"),
                        ("wait", "30s"),
                    ])
                    .bearer_auth(TOKEN)
                    .send()
                    .await;
                let at = now_us();
                let Ok(r) = r else { continue };
                let Ok(v) = r.json::<serde_json::Value>().await else {
                    continue;
                };
                if let Ok(mut read) = read.lock() {
                    for e in v["events"].as_array().into_iter().flatten() {
                        if let Some(i) = e["payment_id"].as_str().and_then(number) {
                            read.entry(i).or_insert(at);
                        }
                    }
                }
                if let Some(c) = v["next_cursor"].as_str() {
                    cursor = c.to_string();
                }
            }
        })
    };
    // Let the reader reach its long poll before the first webhook.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let key = Arc::new(key()?);
    let target = format!("{base}/webhooks/bench");
    let sent: Arc<Vec<AtomicI64>> = Arc::new((0..=n).map(|_| AtomicI64::new(0)).collect());
    let acks: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::with_capacity(n)));
    // Every request here comes from one address, which the server lets
    // hold half its connections (then answers from its reserve, 503 to a
    // webhook): a loaded machine slowing the answers must not turn the
    // bench into that. Requests beyond this wait here, before their send
    // time is taken.
    let in_flight = Arc::new(tokio::sync::Semaphore::new(
        finality_server::serve::MAX_CONNECTIONS / 4,
    ));
    let started = Instant::now();
    let mut sends = Vec::with_capacity(n);
    for i in 1..=n {
        let due = started + Duration::from_secs_f64((i - 1) as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        let permit = in_flight.clone().acquire_owned().await?;
        let (http, key, target, sent, acks) = (
            http.clone(),
            key.clone(),
            target.clone(),
            sent.clone(),
            acks.clone(),
        );
        sends.push(tokio::spawn(async move {
            let _permit = permit;
            let t0 = now_us();
            sent[i].store(t0, Ordering::Relaxed);
            let r = signed_request(
                &http,
                &target,
                &key,
                &format!("msg_e{i}"),
                &format!("re{i}"),
            )
            .send()
            .await?;
            let status = r.status();
            let _ = r.bytes().await?;
            if !status.is_success() {
                bail!("webhook answered {status}");
            }
            if let Ok(mut a) = acks.lock() {
                a.push(now_us() - t0);
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for s in sends {
        s.await.context("a sender panicked")??;
    }
    let sent_per_s = n as f64 / started.elapsed().as_secs_f64();
    // Everything pushed and read, or a minute more.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done =
            pushed.lock().map_or(0, |p| p.len()) >= n && read.lock().map_or(0, |r| r.len()) >= n;
        if done || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    reader.abort();
    let _ = server.await;

    let applied_rows = s
        .rows_i64("SELECT payment_id, at FROM status_history WHERE to_status = 'succeeded'")
        .await
        .context("reading the status changes")?;
    let since = |i: usize, at_us: i64| at_us - sent[i].load(Ordering::Relaxed);
    let applied: Vec<i64> = applied_rows
        .iter()
        .filter_map(|(id, at_ms)| number(id).map(|i| since(i, at_ms * 1000)))
        .collect();
    // Arrival times per payment → latencies from each one's send.
    let latencies = |seen: &Mutex<HashMap<usize, i64>>| -> anyhow::Result<Vec<i64>> {
        Ok(seen
            .lock()
            .map_err(|_| anyhow::anyhow!("a recorder's lock is poisoned"))?
            .iter()
            .map(|(i, at)| since(*i, *at))
            .collect())
    };
    let pushed = latencies(&pushed)?;
    let read = latencies(&read)?;
    for (what, got) in [
        ("applied", applied.len()),
        ("pushed", pushed.len()),
        ("read", read.len()),
    ] {
        if got != n {
            bail!("{n} webhooks sent, {got} {what}");
        }
    }
    s.drop_it().await?;
    let acks = std::mem::take(
        &mut *acks
            .lock()
            .map_err(|_| anyhow::anyhow!("ack lock poisoned"))?,
    );
    Ok(E2e {
        sent_per_s,
        ack: Latency::of(acks),
        applied: Latency::of(applied),
        pushed: Latency::of(pushed),
        read: Latency::of(read),
    })
}
