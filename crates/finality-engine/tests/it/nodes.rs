//! Nodes that die and nodes that stop: a killed node's polls run again
//! within seconds of its last heartbeat, not when its leases end; a node
//! asked to stop hands back what it still holds.

use super::*;
use finality_core::{Status, SystemClock};
use finality_store::{ClaimRequest, ListFilter};
use finality_testkit::testing;

/// Node A claims five polls (leased for a minute) and dies without a word.
/// Node B, beating every 100 ms, takes A for dead after 500 ms of silence,
/// releases its leases, and polls them itself: long before the minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_nodes_polls_run_again_within_seconds() {
    let db = testing::postgres(8).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let server = spawn_sim(SimConfig::deterministic(Duration::ZERO), clock.clone()).await;
    let now = clock.now();
    for i in 0..5 {
        register(&*db.store, &server.sim, &format!("pay_dead_{i}"), now, now).await;
    }
    db.store.heartbeat("node-a", now).await.unwrap();
    let held = db
        .store
        .claim(&ClaimRequest {
            now,
            limit: 100,
            lease_until: now.plus(Duration::from_secs(60)),
            worker: "node-a".into(),
            weights: Default::default(),
            fair: true,
        })
        .await
        .unwrap();
    assert_eq!(held.len(), 5);
    let died = std::time::Instant::now();

    let providers = providers(
        &server.base_url,
        quick_policy(50, Duration::from_secs(3600)),
        None,
        Duration::from_secs(5),
    );
    let cfg = EngineConfig {
        heartbeat_every: Duration::from_millis(100),
        dead_after: Duration::from_millis(500),
        ..engine_config("node-b", 4)
    };
    let b = engine(db.store.clone(), clock.clone(), providers, cfg);
    let stop = CancellationToken::new();
    let run = tokio::spawn(b.run(stop.clone()));
    loop {
        let done = db
            .store
            .list(&ListFilter {
                status: Some(Status::Succeeded),
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap()
            .len();
        if done == 5 {
            break;
        }
        assert!(
            died.elapsed() < Duration::from_secs(10),
            "node-a's polls still waiting after 10 s ({done} of 5 done)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = died.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    let calls = db.store.attempts("pay_dead_0").await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].attempt.worker, "node-b");
    stop.cancel();
    run.await.unwrap();
    // node-b stopped cleanly: it is no longer among the live nodes (a
    // release with a cutoff far ahead finds only nodes still listed).
    let far = clock.now().plus(Duration::from_secs(3600));
    let left = db.store.release_dead(far, clock.now()).await.unwrap();
    assert!(left.iter().all(|(w, _)| w != "node-b"), "{left:?}");
}
