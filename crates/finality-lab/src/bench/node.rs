//! The benchmark's in-process provider and one engine "node": the same code
//! runs inside `finality bench` (one process) and as `finality bench-node`
//! child processes (three processes sharing one PostgreSQL).

use async_trait::async_trait;
use finality_core::{Clock, RetryPolicy, Schedule, Status, SystemClock};
use finality_engine::{Engine, EngineConfig, Health, ProviderEntry, Providers};
use finality_providers::{Observation, PollTarget, Provider, ProviderError};
use finality_store::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Answers instantly: `pending` until the K-th counted poll of a payment,
/// then `succeeded`. It answers by the job's attempt count (kept in the
/// database), so several processes agree on which poll is the K-th.
pub struct InstantProvider {
    pub k: u32,
    pub calls: AtomicU64,
    /// When set, each call's lateness in µs (call start − `next_poll_at`).
    pub lateness_us: Option<Mutex<Vec<i64>>>,
}

impl InstantProvider {
    pub fn new(k: u32, record_lateness: bool) -> Self {
        InstantProvider {
            k,
            calls: AtomicU64::new(0),
            lateness_us: record_lateness.then(Mutex::default),
        }
    }
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

#[async_trait]
impl Provider for InstantProvider {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        if let Some(l) = &self.lateness_us {
            let late = now_us() - t.due_at.0 * 1000;
            l.lock().unwrap_or_else(|p| p.into_inner()).push(late);
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        let status = if t.attempt + 1 >= self.k {
            Status::Succeeded
        } else {
            Status::Pending
        };
        Ok(Observation::new(Some(status), status.as_str()))
    }
}

/// The engine settings every measurement starts from: the defaults, with
/// `workers` executing at once.
pub fn config(workers: usize, tag: &str) -> EngineConfig {
    EngineConfig {
        worker_id: format!("bench-{tag}-{}", std::process::id()),
        concurrency: workers,
        idle_check: Duration::from_millis(50),
        ..EngineConfig::default()
    }
}

/// One engine polling provider `bench` with `adapter`, rescheduling at once.
pub fn engine(
    store: Arc<dyn Store>,
    adapter: Arc<InstantProvider>,
    config: EngineConfig,
) -> Arc<Engine> {
    engine_with(store, adapter, Default::default(), config)
}

/// [`engine`] with any adapter, and the provider's `accounts`.
pub fn engine_with(
    store: Arc<dyn Store>,
    adapter: Arc<dyn Provider>,
    accounts: Arc<finality_engine::accounts::ProviderAccounts>,
    config: EngineConfig,
) -> Arc<Engine> {
    let mut providers = Providers::new();
    providers.insert(
        "bench".into(),
        ProviderEntry {
            outage_policy: None,
            webhook_outage_after: 0,
            catch_up: None,
            settlement: None,
            live: None,
            webhook_wait_quantile: None,
            accounts,
            adapter,
            policy: RetryPolicy {
                schedule: Schedule::Fixed {
                    delays: vec![Duration::ZERO],
                },
                give_up_after: Duration::from_secs(3600),
                max_attempts: 1_000_000,
            },
            pause_on_permanent_error: Duration::from_secs(60),
            nudges_per_minute: 0,
            nudges_per_payment: 0,
            rate_limit: None,
        },
    );
    Engine::new(
        store,
        Arc::new(SystemClock),
        Arc::new(providers),
        config,
        Arc::new(Health::new()),
    )
}

/// `finality bench-node`: one engine process for the multi-process and
/// memory measurements. Prints one JSON line: calls, seconds, peak RSS.
#[derive(clap::Args)]
pub struct NodeArgs {
    #[arg(long)]
    database_url: String,
    /// PostgreSQL schema holding the benchmark's tables.
    #[arg(long)]
    schema: String,
    #[arg(long, default_value_t = 64)]
    workers: usize,
    /// Run this long; without it, run until no job is left.
    #[arg(long)]
    seconds: Option<f64>,
}

pub async fn run_node(args: NodeArgs) -> anyhow::Result<()> {
    let opts: sqlx::postgres::PgConnectOptions = args.database_url.parse()?;
    let store = finality_store::postgres::PgStore::connect_with(
        opts.options([("search_path", args.schema.as_str())]),
        (args.workers as u32 / 4).clamp(4, 16),
    )
    .await?;
    let store: Arc<dyn Store> = Arc::new(store);
    let adapter = Arc::new(InstantProvider::new(3, false));
    let e = engine(store, adapter.clone(), config(args.workers, "node"));
    let started = Instant::now();
    let stop = CancellationToken::new();
    match args.seconds {
        Some(s) => {
            let stopper = stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs_f64(s)).await;
                stopper.cancel();
            });
            e.run(stop).await;
        }
        None => e.run_until_idle(stop).await,
    }
    let line = serde_json::json!({
        "calls": adapter.calls.load(Ordering::Relaxed),
        "seconds": started.elapsed().as_secs_f64(),
        "vm_hwm_kib": proc_status_kib("VmHWM:"),
        "vm_rss_kib": proc_status_kib("VmRSS:"),
        "now_ms": SystemClock.now().0,
    });
    println!("{line}");
    Ok(())
}

/// A `/proc/self/status` figure in KiB (Linux).
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}
