//! The HTTP API v1 over real HTTP on loopback, on both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounts;
mod accounts_platforms;
mod amounts;
mod api;
mod catch_up;
mod console;
mod console_settlement;
mod contracts;
mod db_outage;
mod every_row;
mod fuzz;
mod hostile;
mod hostile_admin;
mod isolation;
mod money;
mod no_false_final;
mod observability;
mod openapi;
mod outage;
mod providers;
mod replay;
mod replica;
mod roles;
mod settlement_announced;
mod webhooks;

use finality_core::{Clock, SystemClock};
use finality_engine::inbox::InboxConfig;
use finality_engine::{EngineConfig, Health, ProviderEntry, Providers};
use finality_providers::config::ProviderConfig;
use finality_providers::http::Timeouts;
use finality_providers::sim::SimAdapter;
use finality_providers::webhook::standard::StandardWebhooks;
use finality_server::identity::Tokens;
use finality_server::AppState;
use finality_sim::{SimConfig, Simulator};
use finality_testkit::testing::{self, TestDb};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const TOKEN: &str = "test-token-123";
/// Test apps close a connection whose headers or body take longer than this.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// The sim provider's webhook secret in every test app.
pub const WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub db: TestDb,
    pub sim: Arc<Simulator>,
    pub stop: CancellationToken,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub use finality_testkit::Backend;

/// Start the simulator and the full service (API + engine) on port 0.
pub async fn spawn_app(backend: Backend, settle_after: Duration) -> TestApp {
    spawn_app_with(backend, settle_after, true).await
}

/// As [`spawn_app`]; `engine: false` leaves polls alone (webhooks only).
pub async fn spawn_app_with(backend: Backend, settle_after: Duration, engine: bool) -> TestApp {
    spawn_app_custom(
        backend,
        SimConfig::deterministic(settle_after),
        engine,
        sim_providers,
    )
    .await
}

/// The sim provider, webhooks signed with [`WEBHOOK_SECRET`].
pub fn sim_providers(sim_url: &str) -> Providers {
    let cfg = ProviderConfig::sim(sim_url);
    let timeouts = Timeouts {
        connect: cfg.connect_timeout,
        total: cfg.timeout,
    };
    let verifier =
        StandardWebhooks::new(&[WEBHOOK_SECRET.to_string()], cfg.webhook_tolerance).unwrap();
    let adapter = SimAdapter::new(sim_url, None, timeouts)
        .unwrap()
        .with_webhooks(verifier);
    let mut providers = Providers::new();
    providers.insert(
        "sim".into(),
        ProviderEntry::from_config(Arc::new(adapter), &cfg),
    );
    providers
}

/// The simulator with `config`, and the service with the providers
/// `providers(sim_url)` makes.
pub async fn spawn_app_custom(
    backend: Backend,
    config: SimConfig,
    engine: bool,
    providers: impl FnOnce(&str) -> Providers,
) -> TestApp {
    let db = match backend {
        Backend::Postgres => testing::postgres(8).await,
        Backend::Sqlite => testing::sqlite().await,
        Backend::Mysql => testing::mysql(8).await,
    };
    spawn_app_on(db, config, engine, providers).await
}

/// [`spawn_app_custom`] on a database of the test's own.
pub async fn spawn_app_on(
    db: TestDb,
    config: SimConfig,
    engine: bool,
    providers: impl FnOnce(&str) -> Providers,
) -> TestApp {
    spawn_app_tokens(db, config, engine, providers, Tokens::shared(TOKEN)).await
}

/// [`spawn_app_on`] accepting `tokens`.
pub async fn spawn_app_tokens(
    db: TestDb,
    config: SimConfig,
    engine: bool,
    providers: impl FnOnce(&str) -> Providers,
    tokens: Tokens,
) -> TestApp {
    spawn_app_background(db, config, engine, providers, tokens, |_| {}).await
}

/// [`spawn_app_tokens`], with the background work adjusted by `adjust`.
pub async fn spawn_app_background(
    db: TestDb,
    config: SimConfig,
    engine: bool,
    providers: impl FnOnce(&str) -> Providers,
    tokens: Tokens,
    adjust: impl FnOnce(&mut finality_server::Background),
) -> TestApp {
    spawn_app_replica(db, config, engine, providers, tokens, adjust, None).await
}

/// [`spawn_app_background`], the API's reads served by `replica`.
pub async fn spawn_app_replica(
    db: TestDb,
    config: SimConfig,
    engine: bool,
    providers: impl FnOnce(&str) -> Providers,
    tokens: Tokens,
    adjust: impl FnOnce(&mut finality_server::Background),
    replica: Option<Arc<finality_server::replica::Replica>>,
) -> TestApp {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let stop = CancellationToken::new();

    let sim = Simulator::new(config, clock.clone(), 1);
    let sim_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_url = format!("http://{}", sim_listener.local_addr().unwrap());
    tokio::spawn(finality_sim::server::serve(
        sim.clone(),
        sim_listener,
        stop.clone(),
    ));
    let providers = providers(&sim_url);
    let state = AppState {
        store: db.store.clone(),
        clock,
        providers: Arc::new(providers),
        health: Arc::new(Health::new()),
        tokens: Arc::new(tokens),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: finality_server::metrics::install(),
        replica,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let engine_cfg = EngineConfig {
        worker_id: "api-test".into(),
        ..EngineConfig::default()
    };
    let mut background = finality_server::Background {
        engine: engine.then_some(engine_cfg),
        inbox: Some(InboxConfig::default()),
        events: Some(finality_relay::config::EventsConfig::default()),
        sweep: None,
        retention: None,
        gauges: None,
        shutdown_grace: None,
        client_timeout: Some(CLIENT_TIMEOUT),
        max_connections: None,
        max_connections_per_address: None,
        idle_timeout: None,
        accounts_refresh: None,
        settlement_dir: None,
    };
    adjust(&mut background);
    tokio::spawn(finality_server::run(
        state,
        background,
        listener,
        stop.clone(),
    ));
    TestApp {
        base,
        http: reqwest::Client::new(),
        db,
        sim,
        stop,
    }
}

impl TestApp {
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        let v =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
        (status, v)
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    /// What `/metrics` renders now.
    pub async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Wait (at most 10 s) until `/readyz` reports `scope` (a provider, or
    /// `provider/account`) paused; the whole `/readyz` answer.
    pub async fn wait_paused(&self, scope: &str) -> Value {
        let started = std::time::Instant::now();
        loop {
            let ready: Value = self
                .http
                .get(format!("{}/readyz", self.base))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if !ready["paused_providers"][scope].is_null() {
                return ready;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{ready}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_for_status(&self, id: &str, status: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (_, v) = self.get(&format!("/v1/payments/{id}")).await;
            if v["status"] == status {
                return v;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never became {status}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The inbox row of `event_id` once it is in `state`.
    pub async fn wait_inbox_state(
        &self,
        provider: &str,
        event_id: &str,
        state: &str,
    ) -> finality_store::InboxEvent {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let row = self.db.store.inbox_get(provider, event_id).await.unwrap();
            if let Some(r) = row.as_ref().filter(|r| r.state.as_str() == state) {
                return r.clone();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never {state}: {row:?}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// A payment created at the simulator, as a registration body.
    pub fn payment(&self, id: &str) -> Value {
        let plan = self.sim.create_priced(None, None, 4200, "EUR");
        json!({"id": id, "provider": "sim", "provider_ref": plan.id, "amount": 4200, "currency": "EUR", "metadata": {"order": "o-1"}})
    }
}

/// POST a body announced as 2 MiB without sending it, and return the status
/// line's code: the server must refuse on the length alone. (Sending the
/// whole body races the server closing the socket after its early 413.)
pub async fn post_oversized(base: &str, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{{",
        2 * 1024 * 1024
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = s.read(&mut buf).await.unwrap();
    let head = String::from_utf8_lossy(&buf[..n]);
    head.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}
