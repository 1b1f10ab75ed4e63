//! The in-memory timer: jobs claimed ahead of their time fire at it, never
//! before, and a shutdown does not strand the held ones.

use super::*;
use async_trait::async_trait;
use finality_core::{Status, SystemClock};
use finality_providers::{Observation, PollTarget, Provider, ProviderError};
use finality_testkit::testing::{self, TestDb};
use std::sync::Mutex;

/// Answers `succeeded` at once and records when each call started.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, Timestamp, Timestamp)>>,
}

#[async_trait]
impl Provider for Recorder {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        self.calls
            .lock()
            .unwrap()
            .push((t.payment_id.to_string(), t.due_at, SystemClock.now()));
        Ok(Observation::new(Some(Status::Succeeded), "succeeded"))
    }
}

fn recorder_providers(rec: Arc<Recorder>) -> Arc<Providers> {
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
            adapter: rec,
            policy: quick_policy(5, Duration::from_secs(3600)),
            pause_on_permanent_error: Duration::from_secs(60),
            nudges_per_minute: 0,
            nudges_per_payment: 0,
            rate_limit: None,
        },
    );
    Arc::new(map)
}

async fn register_plain(store: &dyn Store, id: &str, now: Timestamp, at: Timestamp) {
    let p = NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("ref_{id}")).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1000, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    };
    let r = store.register(&p, now, at).await.unwrap();
    assert!(matches!(r, Registered::Created(_)), "{r:?}");
}

async fn fires_at_its_time_never_before(db: TestDb) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Arc::new(Recorder::default());
    let now = clock.now();
    for i in 0..40 {
        let at = now.plus(Duration::from_millis(300 + 10 * i));
        register_plain(&*db.store, &format!("pay_t{i:02}"), now, at).await;
    }
    let mut cfg = engine_config("timer", 8);
    cfg.lookahead = Duration::from_millis(500);
    let e = engine(
        db.store.clone(),
        clock,
        recorder_providers(rec.clone()),
        cfg,
    );
    let stop = CancellationToken::new();
    e.run_until_idle(stop).await;
    let calls = rec.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 40, "each payment polled exactly once");
    for (id, due, started) in &calls {
        assert!(
            started >= due,
            "{id} was polled {} ms before its time",
            due.0 - started.0
        );
    }
    let counts = db.store.status_counts().await.unwrap();
    assert_eq!(counts, vec![(Status::Succeeded, 40)]);
}

async fn shutdown_runs_the_held_jobs(db: TestDb) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let rec = Arc::new(Recorder::default());
    let now = clock.now();
    // Due 2 s out: far enough that registering them on a loaded machine
    // cannot eat the margin before the "not yet due" check.
    for i in 0..10 {
        let at = now.plus(Duration::from_secs(2));
        register_plain(&*db.store, &format!("pay_s{i}"), now, at).await;
    }
    let mut cfg = engine_config("timer", 4);
    cfg.lookahead = Duration::from_secs(3);
    let e = engine(
        db.store.clone(),
        clock,
        recorder_providers(rec.clone()),
        cfg,
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(e.run(stop.clone()));
    // Claimed and held well before their time, then asked to stop.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(rec.calls.lock().unwrap().is_empty(), "not yet due");
    stop.cancel();
    run.await.unwrap();
    assert_eq!(rec.calls.lock().unwrap().len(), 10);
    let counts = db.store.status_counts().await.unwrap();
    assert_eq!(counts, vec![(Status::Succeeded, 10)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_jobs_fire_at_their_time_postgres() {
    fires_at_its_time_never_before(testing::postgres(4).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_jobs_fire_at_their_time_sqlite() {
    fires_at_its_time_never_before(testing::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_jobs_fire_at_their_time_mysql() {
    fires_at_its_time_never_before(testing::mysql(4).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_runs_held_jobs_postgres() {
    shutdown_runs_the_held_jobs(testing::postgres(4).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_runs_held_jobs_sqlite() {
    shutdown_runs_the_held_jobs(testing::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_runs_held_jobs_mysql() {
    shutdown_runs_the_held_jobs(testing::mysql(4).await).await;
}
