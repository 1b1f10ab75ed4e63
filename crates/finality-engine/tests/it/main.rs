//! The engine end to end: real stores (PostgreSQL and SQLite), the simulator
//! over real HTTP on loopback, virtual time wherever the test allows it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod errors;
mod lifecycle;
mod nodes;
mod reconcile;
mod reconcile_accounts;
mod settlement_accounts;
mod settlement_days;
mod settlement_fetch;
mod sweep;
mod timer;
mod workers;

use finality_core::money::{Amount, Currency, PaymentId, ProviderRef};
use finality_core::{Clock, Kind, RetryPolicy, Schedule, Timestamp};
use finality_engine::{Engine, EngineConfig, Health, ProviderEntry, Providers};
use finality_providers::http::Timeouts;
use finality_providers::sim::SimAdapter;
use finality_sim::{SimConfig, Simulator};
use finality_store::{NewPayment, Registered, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const T0: Timestamp = Timestamp(1_700_000_000_000);

/// A simulator served on a loopback port; stops when dropped.
pub struct SimServer {
    pub sim: Arc<Simulator>,
    pub base_url: String,
    stop: CancellationToken,
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub async fn spawn_sim(config: SimConfig, clock: Arc<dyn Clock>) -> SimServer {
    let sim = Simulator::new(config, clock, 7);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(finality_sim::server::serve(
        sim.clone(),
        listener,
        stop.clone(),
    ));
    SimServer {
        sim,
        base_url,
        stop,
    }
}

pub fn providers(
    base_url: &str,
    policy: RetryPolicy,
    api_key: Option<&str>,
    timeout: Duration,
) -> Arc<Providers> {
    let adapter = SimAdapter::new(
        base_url,
        api_key.map(Into::into),
        Timeouts {
            connect: Duration::from_secs(1),
            total: timeout,
        },
    )
    .unwrap();
    let mut map = Providers::new();
    map.insert(
        "sim".into(),
        ProviderEntry {
            outage_policy: None,
            webhook_outage_after: 0,
            catch_up: None,
            settlement: None,
            live: None,
            webhook_wait_quantile: None,
            accounts: Default::default(),
            adapter: Arc::new(adapter),
            policy,
            pause_on_permanent_error: Duration::from_secs(300),
            nudges_per_minute: 60,
            nudges_per_payment: 3,
            rate_limit: None,
        },
    );
    Arc::new(map)
}

pub fn quick_policy(max_attempts: u32, give_up_after: Duration) -> RetryPolicy {
    RetryPolicy {
        schedule: Schedule::QuickThen {
            count: 5,
            interval: Duration::from_secs(1),
            then: Box::new(Schedule::Exponential {
                base: Duration::from_secs(2),
                factor: 2.0,
                cap: Duration::from_secs(600),
                jitter: 0.2,
            }),
        },
        give_up_after,
        max_attempts,
    }
}

pub fn engine_config(worker: &str, concurrency: usize) -> EngineConfig {
    EngineConfig {
        worker_id: worker.into(),
        concurrency,
        batch_size: 16,
        lease: Duration::from_secs(30),
        idle_check: Duration::from_millis(500),
        ..EngineConfig::default()
    }
}

pub fn engine(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    providers: Arc<Providers>,
    config: EngineConfig,
) -> Arc<Engine> {
    Engine::new(store, clock, providers, config, Arc::new(Health::new()))
}

/// Create the payment at the simulator, then register it with finality.
pub async fn register(
    store: &dyn Store,
    sim: &Simulator,
    id: &str,
    now: Timestamp,
    first_poll_at: Timestamp,
) {
    let plan = sim.create(Some(format!("ref_{id}")));
    let p = NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&plan.id).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1000, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    };
    let r = store.register(&p, now, first_poll_at).await.unwrap();
    assert!(matches!(r, Registered::Created(_)), "{r:?}");
}

/// Run `sql` on the test's database directly, as an operator would.
pub async fn raw(db: &finality_testkit::testing::TestDb, sql: &str) {
    use finality_testkit::testing::Backend as Db;
    match &db.backend {
        Db::Postgres(pg) => {
            sqlx::query(sql).execute(pg.pool()).await.unwrap();
        }
        Db::Sqlite(lite) => {
            sqlx::query(sql).execute(lite.pool()).await.unwrap();
        }
        Db::Mysql(my) => {
            sqlx::query(sql).execute(my.pool()).await.unwrap();
        }
    }
}

/// One number from SQL on the test's database.
pub async fn count(db: &finality_testkit::testing::TestDb, sql: &str) -> i64 {
    use finality_testkit::testing::Backend as Db;
    match &db.backend {
        Db::Postgres(pg) => sqlx::query_scalar(sql).fetch_one(pg.pool()).await.unwrap(),
        Db::Sqlite(lite) => sqlx::query_scalar(sql)
            .fetch_one(lite.pool())
            .await
            .unwrap(),
        // COUNT(*) is BIGINT, SUM a DECIMAL: read through the store's rows.
        Db::Mysql(my) => {
            let s: String = sqlx::query_scalar(&format!("SELECT CAST(({sql}) AS CHAR)"))
                .fetch_one(my.pool())
                .await
                .unwrap();
            s.parse().unwrap()
        }
    }
}
