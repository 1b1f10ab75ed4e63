//! Provider failures are classified and handled by class.

use super::*;
use finality_core::{Status, VirtualClock};
use finality_testkit::testing;

async fn setup(cfg: SimConfig) -> (testing::TestDb, Arc<VirtualClock>, SimServer) {
    let db = testing::sqlite().await;
    let vclock = Arc::new(VirtualClock::new(T0));
    let server = spawn_sim(cfg, vclock.clone()).await;
    register(&*db.store, &server.sim, "pay_e", T0, T0).await;
    (db, vclock, server)
}

#[tokio::test]
async fn rate_limit_pauses_the_provider_without_spending_attempts() {
    let mut cfg = SimConfig::deterministic(Duration::ZERO);
    cfg.faults.rate_limited = 1.0;
    cfg.faults.retry_after = Duration::from_secs(7);
    let (db, vclock, server) = setup(cfg).await;
    let e = engine(
        db.store.clone(),
        vclock.clone(),
        providers(
            &server.base_url,
            quick_policy(3, Duration::from_secs(3600)),
            None,
            Duration::from_secs(5),
        ),
        engine_config("w", 2),
    );
    assert_eq!(e.run_once().await.unwrap(), 1);
    let v = db.store.get("pay_e").await.unwrap().unwrap();
    let poll = v.poll.unwrap();
    assert_eq!(poll.attempts, 0, "a 429 does not burn an attempt");
    assert_eq!(
        poll.next_poll_at,
        Some(T0.plus(Duration::from_secs(7))),
        "Retry-After honoured"
    );
    let pause = e.health().paused("sim", T0).expect("provider paused");
    assert_eq!(pause.class.as_str(), "rate_limited");
    let a = db.store.attempts("pay_e").await.unwrap();
    assert_eq!(a[0].attempt.error_class.as_deref(), Some("rate_limited"));
}

#[tokio::test]
async fn permanent_error_pauses_the_provider_and_defers_polls() {
    let mut cfg = SimConfig::deterministic(Duration::ZERO);
    cfg.api_key = Some("sk_right".into());
    let (db, vclock, server) = setup(cfg).await;
    register(&*db.store, &server.sim, "pay_e2", T0, T0).await;
    let mut c = engine_config("w", 1);
    c.batch_size = 1;
    let e = engine(
        db.store.clone(),
        vclock.clone(),
        providers(
            &server.base_url,
            quick_policy(3, Duration::from_secs(3600)),
            Some("sk_wrong"),
            Duration::from_secs(5),
        ),
        c,
    );
    assert_eq!(e.run_once().await.unwrap(), 1);
    assert_eq!(e.run_once().await.unwrap(), 1);
    let pause = e.health().paused("sim", T0).expect("provider paused");
    assert_eq!(pause.class.as_str(), "permanent");
    assert!(pause.reason.contains("401"), "{}", pause.reason);
    assert_eq!(
        server.sim.stats().status_calls,
        1,
        "the second poll is deferred, not sent"
    );
    for id in ["pay_e", "pay_e2"] {
        let v = db.store.get(id).await.unwrap().unwrap();
        assert_eq!(v.payment.status, Status::Pending);
        assert_eq!(v.poll.unwrap().attempts, 0, "no attempt burnt on {id}");
    }
}

#[tokio::test]
async fn transient_errors_retry_on_schedule_then_go_to_review() {
    let mut cfg = SimConfig::deterministic(Duration::ZERO);
    cfg.faults.server_error = 1.0;
    let (db, vclock, server) = setup(cfg).await;
    let e = engine(
        db.store.clone(),
        vclock.clone(),
        providers(
            &server.base_url,
            quick_policy(3, Duration::from_secs(3600)),
            None,
            Duration::from_secs(5),
        ),
        engine_config("w", 2),
    );
    e.clone().run_until_idle(CancellationToken::new()).await;
    let v = db.store.get("pay_e").await.unwrap().unwrap();
    assert_eq!(
        v.payment.status,
        Status::NeedsReview,
        "unknown is not failed"
    );
    assert_eq!(server.sim.stats().status_calls, 3);
    let last = v.history.last().unwrap();
    let reason = last.reason.as_deref().unwrap_or_default();
    assert!(
        reason.starts_with("gave up after 3 status queries in a row failed"),
        "{reason}"
    );
    let poll = v.poll.unwrap();
    assert_eq!(
        (poll.attempts, poll.errors),
        (0, 3),
        "no answer, no attempt"
    );
    let a = db.store.attempts("pay_e").await.unwrap();
    assert!(a
        .iter()
        .all(|a| a.attempt.error_class.as_deref() == Some("transient")));
    // Quick polls one second apart, counted from each completion.
    assert_eq!(vclock.now(), T0.plus(Duration::from_secs(2)));
}

#[tokio::test]
async fn timeouts_are_transient_and_bounded() {
    let mut cfg = SimConfig::deterministic(Duration::ZERO);
    cfg.faults.timeout = 1.0;
    cfg.faults.hang = Duration::from_secs(5);
    let (db, vclock, server) = setup(cfg).await;
    let e = engine(
        db.store.clone(),
        vclock.clone(),
        providers(
            &server.base_url,
            quick_policy(3, Duration::from_secs(3600)),
            None,
            Duration::from_millis(200),
        ),
        engine_config("w", 2),
    );
    let started = std::time::Instant::now();
    assert_eq!(e.run_once().await.unwrap(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the total timeout bounds the call"
    );
    let a = db.store.attempts("pay_e").await.unwrap();
    assert_eq!(a[0].attempt.error_class.as_deref(), Some("transient"));
    assert!(a[0]
        .attempt
        .error
        .as_deref()
        .unwrap_or("")
        .contains("timeout"));
    let v = db.store.get("pay_e").await.unwrap().unwrap();
    let poll = v.poll.unwrap();
    assert_eq!(
        (poll.attempts, poll.errors),
        (0, 1),
        "an error, not an attempt"
    );
    drop(server);
}

/// An outage (every call 503 for a minute) opens the circuit breaker: the
/// calls made during it stay at the probe rate, no payment spends its budget
/// on it (max_attempts is 3, the outage is 60 quick polls long), and polls
/// resume by themselves when a probe is answered.
#[tokio::test]
async fn outage_opens_the_breaker_and_polls_resume_by_themselves() {
    let db = testing::sqlite().await;
    let vclock = Arc::new(VirtualClock::new(T0));
    let server = spawn_sim(
        SimConfig::deterministic(Duration::from_secs(61)),
        vclock.clone(),
    )
    .await;
    for i in 0..20 {
        register(&*db.store, &server.sim, &format!("pay_o{i:02}"), T0, T0).await;
    }
    server.sim.outage_until(T0.plus(Duration::from_secs(60)));
    let e = engine(
        db.store.clone(),
        vclock.clone(),
        providers(
            &server.base_url,
            quick_policy(3, Duration::from_secs(3600)),
            None,
            Duration::from_secs(5),
        ),
        engine_config("w", 4),
    );
    e.clone().run_until_idle(CancellationToken::new()).await;
    assert_eq!(
        db.store.status_counts().await.unwrap(),
        vec![(Status::Succeeded, 20)],
        "nobody went to review because of the outage"
    );
    let during = server.sim.stats().injected_server_errors;
    // Five failures open it (plus up to three already in flight), then one
    // probe per open period: 5 s, 10 s, 20 s, 40 s (the fourth is answered).
    assert!(
        (5..=5 + 3 + 4).contains(&during),
        "{during} calls during a 60 s outage"
    );
    let calls = server.sim.stats().status_calls;
    assert!(calls <= during + 20 + 20, "{calls} calls in all");
    assert!(e.health().breakers().tripped().is_empty(), "closed again");
    for i in 0..20 {
        let a = db.store.attempts(&format!("pay_o{i:02}")).await.unwrap();
        let answered = a.iter().filter(|a| a.attempt.outcome != "error").count();
        assert!((1..=2).contains(&answered), "pay_o{i:02}: {a:?}");
    }
}
