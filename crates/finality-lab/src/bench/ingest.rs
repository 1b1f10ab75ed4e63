//! Verified-webhook ingest: the real HTTP server on loopback with a durable
//! inbox (PostgreSQL or SQLite, group-committed), and a load generator
//! built in (so CI needs no wrk or oha): `connections` clients each send
//! distinct Standard Webhooks–signed events back to back for `seconds`;
//! every answer must be 200 and every acknowledged event stored.

use super::scratch::Scratch;
use anyhow::{bail, Context};
use finality_core::{Clock, SystemClock};
use finality_engine::{Health, ProviderEntry, Providers};
use finality_providers::config::ProviderConfig;
use finality_providers::http::Timeouts;
use finality_providers::sim::SimAdapter;
use finality_providers::webhook::standard::{self, StandardWebhooks};
use finality_server::{AppState, Background};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

pub struct Ingest {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// The webhook-receiving service's state: the simulator's adapter (which
/// verifies Standard Webhooks) as provider `bench`, on `store`.
pub fn webhook_state(store: Arc<dyn finality_store::Store>) -> anyhow::Result<AppState> {
    let cfg = ProviderConfig::sim("http://127.0.0.1:9");
    let verifier = StandardWebhooks::new(&[SECRET.to_string()], cfg.webhook_tolerance)
        .map_err(anyhow::Error::msg)?;
    let adapter = SimAdapter::new(
        "http://127.0.0.1:9",
        None,
        Timeouts {
            connect: cfg.connect_timeout,
            total: cfg.timeout,
        },
    )?
    .with_webhooks(verifier);
    let mut providers = Providers::new();
    providers.insert(
        "bench".into(),
        ProviderEntry::from_config(Arc::new(adapter), &cfg),
    );
    Ok(AppState {
        store,
        clock: Arc::new(SystemClock),
        providers: Arc::new(providers),
        health: Arc::new(Health::new()),
        tokens: Arc::new(finality_server::identity::Tokens::shared(TOKEN)),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: finality_server::metrics::install(),
        replica: None,
    })
}

/// The feed's bearer token in benchmark services.
pub const TOKEN: &str = "bench-token-0123456789";

/// One signed webhook request saying `provider_ref` succeeded.
pub fn signed_request(
    http: &reqwest::Client,
    target: &str,
    key: &[u8],
    id: &str,
    provider_ref: &str,
) -> reqwest::RequestBuilder {
    let body = format!(
        r#"{{"type":"payment.updated","data":{{"id":"{provider_ref}","status":"succeeded"}}}}"#
    );
    let ts = SystemClock.now().0 / 1000;
    let sig = standard::sign(key, id, ts, body.as_bytes());
    http.post(target)
        .header("webhook-id", id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", sig)
        .header("content-type", "application/json")
        .body(body)
}

/// The standard webhooks key the benchmark signs with.
pub fn key() -> anyhow::Result<Vec<u8>> {
    standard::decode_secret(SECRET).map_err(anyhow::Error::msg)
}

/// `kind`: `postgres` or `sqlite` (the inbox's group commit on each).
pub async fn ingest(
    kind: &str,
    url: &str,
    connections: usize,
    seconds: f64,
) -> anyhow::Result<Ingest> {
    let s = Scratch::new(kind, url, "ingest", 16).await?;
    let r = ingest_on(&s, connections, seconds).await?;
    s.drop_it().await?;
    Ok(r)
}

/// Ingest into the schema or file `s` (fresh, or seeded at size).
pub async fn ingest_on(s: &Scratch, connections: usize, seconds: f64) -> anyhow::Result<Ingest> {
    let before = s
        .scalar("SELECT count(*) FROM webhook_inbox")
        .await
        .context("counting the inbox")?;
    let state = webhook_state(s.store.clone())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let target = format!("http://{}/webhooks/bench", listener.local_addr()?);
    let stop = CancellationToken::new();
    let server = tokio::spawn(finality_server::run(
        state,
        Background::default(),
        listener,
        stop.clone(),
    ));

    let (all, elapsed) = load(&target, connections, seconds).await?;
    stop.cancel();
    let _ = server.await;
    let stored = s
        .scalar("SELECT count(*) FROM webhook_inbox")
        .await
        .context("counting the inbox")?;
    if stored - before != all.len() as i64 {
        bail!(
            "{} webhooks acknowledged, {} new in the inbox",
            all.len(),
            stored - before
        );
    }
    Ok(Ingest::of(all, elapsed))
}

impl Ingest {
    pub(super) fn of(mut all: Vec<Duration>, elapsed: f64) -> Ingest {
        all.sort();
        let q = |f: f64| {
            all.get(((all.len() as f64 * f) as usize).min(all.len().saturating_sub(1)))
                .map_or(0.0, |d| d.as_secs_f64() * 1e3)
        };
        Ingest {
            rps: all.len() as f64 / elapsed,
            p50_ms: q(0.50),
            p99_ms: q(0.99),
            max_ms: q(1.0),
        }
    }
}

/// `connections` clients sending distinct signed webhooks back to back to
/// `target` for `seconds`: every answer's latency, and the time taken.
pub(super) async fn load(
    target: &str,
    connections: usize,
    seconds: f64,
) -> anyhow::Result<(Vec<Duration>, f64)> {
    let key = Arc::new(key()?);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .build()?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    // Distinct per run, so a second run into the same inbox is all new.
    let run = SystemClock.now().0;
    let mut clients = Vec::new();
    for c in 0..connections {
        let (http, key, target) = (http.clone(), key.clone(), target.to_string());
        clients.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let id = format!("msg_{run}_{c}_{i}");
                let t = Instant::now();
                let res = signed_request(&http, &target, &key, &id, &format!("ref_{c}_{i}"))
                    .send()
                    .await?;
                let status = res.status();
                let _ = res.bytes().await?;
                latencies.push(t.elapsed());
                if !status.is_success() {
                    bail!("webhook answered {status}");
                }
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut all = Vec::new();
    for c in clients {
        all.extend(c.await.context("load client panicked")??);
    }
    Ok((all, started.elapsed().as_secs_f64()))
}

/// The no-database peer's service: `POST /webhooks/bench` verified with
/// the same adapter as the durable server, answered 200 at once.
pub fn verify_only() -> anyhow::Result<axum::Router> {
    let store: Arc<dyn finality_store::Store> = Arc::new(finality_store::memory::MemStore::new());
    let state = webhook_state(store)?;
    Ok(axum::Router::new().route(
        "/webhooks/bench",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let state = state.clone();
                async move {
                    let Some(entry) = state.providers.get("bench") else {
                        return axum::http::StatusCode::NOT_FOUND;
                    };
                    match entry
                        .adapter
                        .verify_webhook(&headers, &body, state.clock.now())
                        .await
                    {
                        Ok(_) => axum::http::StatusCode::OK,
                        Err(_) => axum::http::StatusCode::UNAUTHORIZED,
                    }
                }
            },
        ),
    ))
}

/// The peer without a database: the same clients against a server that
/// verifies each webhook with the same adapter and answers 200 at once.
/// On a machine where the load generator, the server and PostgreSQL share
/// two cores, this (not the disk) bounds what ingest can reach.
pub async fn http_only(connections: usize, seconds: f64) -> anyhow::Result<Ingest> {
    let app = verify_only()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let target = format!("http://{}/webhooks/bench", listener.local_addr()?);
    let stop = CancellationToken::new();
    let s2 = stop.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { s2.cancelled().await })
            .await
    });
    let (all, elapsed) = load(&target, connections, seconds).await?;
    stop.cancel();
    let _ = server.await;
    Ok(Ingest::of(all, elapsed))
}
