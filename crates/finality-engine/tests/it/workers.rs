//! Many workers, crashes and wake-ups.

use super::*;
use finality_core::{Status, SystemClock, VirtualClock};
use finality_store::{ClaimRequest, ListFilter};
use finality_testkit::testing;

/// 8 engines (as 8 nodes, each with its own pool) share 5,000 due jobs on
/// PostgreSQL: every job runs exactly once, never two at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_workers_run_5000_due_jobs_exactly_once_on_postgres() {
    eight_workers_run_5000_due_jobs_exactly_once(testing::postgres(8).await).await;
}

/// The same on MariaDB, whose claims lock with `FOR UPDATE SKIP LOCKED`
/// and lease in a second statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_workers_run_5000_due_jobs_exactly_once_on_mysql() {
    eight_workers_run_5000_due_jobs_exactly_once(testing::mysql(8).await).await;
}

async fn eight_workers_run_5000_due_jobs_exactly_once(db: testing::TestDb) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut cfg = SimConfig::deterministic(Duration::ZERO);
    cfg.latency = Duration::from_millis(2);
    let server = spawn_sim(cfg, clock.clone()).await;
    let now = clock.now();
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut regs = Vec::new();
    for i in 0..5000 {
        let (store, sim, sem) = (db.store.clone(), server.sim.clone(), sem.clone());
        regs.push(tokio::spawn(async move {
            let _p = sem.acquire().await.unwrap();
            register(&*store, &sim, &format!("pay_{i:05}"), now, now).await;
        }));
    }
    for r in regs {
        r.await.unwrap();
    }

    let providers = providers(
        &server.base_url,
        quick_policy(50, Duration::from_secs(3600)),
        None,
        Duration::from_secs(5),
    );
    let stop = CancellationToken::new();
    let mut runs = Vec::new();
    for w in 0..8 {
        let node = finality_store::open(&db.url, 4).await.unwrap();
        let e = engine(
            node,
            clock.clone(),
            providers.clone(),
            engine_config(&format!("w{w}"), 4),
        );
        runs.push(tokio::spawn(e.run(stop.clone())));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    loop {
        let counts = db.store.status_counts().await.unwrap();
        if counts == vec![(Status::Succeeded, 5000)] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not all settled: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.cancel();
    for r in runs {
        r.await.unwrap();
    }
    let stats = server.sim.stats();
    assert_eq!(
        stats.overlapping_calls, 0,
        "no payment polled by two workers at once"
    );
    assert_eq!(stats.status_calls, 5000, "every job executed exactly once");
    let workers: std::collections::HashSet<String> = futures::future::join_all(
        ["pay_00000", "pay_01234", "pay_02500", "pay_04999"].map(|id| {
            let store = db.store.clone();
            async move { store.attempts(id).await.unwrap().remove(0).attempt.worker }
        }),
    )
    .await
    .into_iter()
    .collect();
    assert!(!workers.is_empty());
}

/// A worker claims jobs and dies; once the lease ends another engine polls
/// them, on virtual time.
#[tokio::test]
async fn crashed_workers_jobs_are_picked_up_after_the_lease() {
    let db = testing::sqlite().await;
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let server = spawn_sim(SimConfig::deterministic(Duration::ZERO), clock.clone()).await;
    for i in 0..10 {
        register(&*db.store, &server.sim, &format!("pay_{i}"), T0, T0).await;
    }
    let dead = db
        .store
        .claim(&ClaimRequest {
            now: T0,
            limit: 100,
            lease_until: T0.plus(Duration::from_secs(30)),
            worker: "dead".into(),
            weights: Default::default(),
            fair: true,
        })
        .await
        .unwrap();
    assert_eq!(dead.len(), 10);
    let providers = providers(
        &server.base_url,
        quick_policy(50, Duration::from_secs(3600)),
        None,
        Duration::from_secs(5),
    );
    let e = engine(
        db.store.clone(),
        clock.clone(),
        providers,
        engine_config("alive", 4),
    );
    assert_eq!(e.run_once().await.unwrap(), 0, "leased jobs are not due");
    vclock.advance(Duration::from_secs(31));
    let mut ran = 0;
    while ran < 10 {
        ran += e.run_once().await.unwrap();
    }
    let all = db
        .store
        .list(&ListFilter {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(all.iter().all(|p| p.status == Status::Succeeded));
    let a = db.store.attempts("pay_3").await.unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].attempt.worker, "alive");
}

/// An idle engine (long idle check) wakes for a payment registered by
/// another node: PostgreSQL LISTEN/NOTIFY carries the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_engine_wakes_on_registration_by_another_node() {
    let db = testing::postgres(4).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let server = spawn_sim(SimConfig::deterministic(Duration::ZERO), clock.clone()).await;
    let providers = providers(
        &server.base_url,
        quick_policy(50, Duration::from_secs(3600)),
        None,
        Duration::from_secs(5),
    );
    let mut cfg = engine_config("sleepy", 4);
    cfg.idle_check = Duration::from_secs(120);
    let node = finality_store::open(&db.url, 4).await.unwrap();
    let e = engine(node, clock.clone(), providers, cfg);
    let stop = CancellationToken::new();
    let run = tokio::spawn(e.run(stop.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await; // let it go idle

    let now = clock.now();
    register(&*db.store, &server.sim, "pay_wake", now, now).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let v = db.store.get("pay_wake").await.unwrap().unwrap();
        if v.payment.status == Status::Succeeded {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "engine did not wake (idle check is 120 s)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    run.await.unwrap();
}

/// The whole model on virtual time: settle times, failures, never-settling
/// payments that end in review; detection never precedes settlement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn virtual_time_run_drives_every_payment_to_final_or_review() {
    let db = testing::sqlite().await;
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let server = spawn_sim(SimConfig::default(), clock.clone()).await;
    for i in 0..300 {
        register(
            &*db.store,
            &server.sim,
            &format!("pay_{i:03}"),
            T0,
            T0.plus(Duration::from_secs(1)),
        )
        .await;
    }
    let providers = providers(
        &server.base_url,
        quick_policy(40, Duration::from_secs(6 * 3600)),
        None,
        Duration::from_secs(5),
    );
    let e = engine(
        db.store.clone(),
        clock.clone(),
        providers,
        engine_config("v", 16),
    );
    tokio::time::timeout(
        Duration::from_secs(120),
        e.run_until_idle(CancellationToken::new()),
    )
    .await
    .expect("virtual run finishes");
    let all = db
        .store
        .list(&ListFilter {
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 300);
    for p in &all {
        let plan = server.sim.plan(p.provider_ref.as_deref().unwrap()).unwrap();
        match plan.settles_at {
            None => assert_eq!(p.status, Status::NeedsReview, "{} never settles", p.id),
            Some(settled) => {
                assert!(p.status.is_final(), "{} ended {:?}", p.id, p.status);
                let found = p.finalized_at.unwrap();
                assert!(found >= settled, "detected before it settled");
            }
        }
    }
    assert_eq!(server.sim.stats().overlapping_calls, 0);
}
