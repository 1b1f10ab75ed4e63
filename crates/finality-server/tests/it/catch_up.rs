//! Event-list catch-up end to end on virtual time: every webhook is lost,
//! Stripe's `GET /v1/events` (served by the simulator in Stripe's shape,
//! read by the real Stripe adapter over HTTP) finds every settlement, the
//! changes record source `sweep`, and not one payment is polled.

use super::*;
use finality_core::{Source, Status, Timestamp, VirtualClock};
use finality_engine::catch_up::CatchUp;
use finality_engine::inbox::InboxProcessor;
use finality_engine::Engine;
use finality_providers::stripe::StripeAdapter;

finality_testkit::on_both_backends!(lost_webhooks_are_caught_up_from_the_event_list);

const STRIPE_KEY: &str = "sk_test_catch_up";

async fn lost_webhooks_are_caught_up_from_the_event_list(b: Backend) {
    let db = b.open().await;
    let clock = Arc::new(VirtualClock::new(Timestamp(1_767_225_600_000)));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let stop = CancellationToken::new();
    // Every payment succeeds 20 s after creation; every webhook is lost.
    let mut sim_cfg = SimConfig::deterministic(Duration::from_secs(20));
    sim_cfg.webhooks.lost = 1.0;
    sim_cfg.api_key = Some(STRIPE_KEY.into());
    let sim = Simulator::new(sim_cfg, dyn_clock.clone(), 11);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(finality_sim::server::serve(sim.clone(), l, stop.clone()));

    let mut cfg = ProviderConfig::sim(&format!("{sim_url}/stripe"));
    cfg.catch_up = Some(Duration::from_secs(30));
    cfg.validate().unwrap();
    let adapter = StripeAdapter::new(
        &cfg.base_url,
        STRIPE_KEY.into(),
        Timeouts {
            connect: cfg.connect_timeout,
            total: cfg.timeout,
        },
    )
    .unwrap();
    let mut providers = Providers::new();
    providers.insert(
        "stripe".into(),
        ProviderEntry::from_config(Arc::new(adapter), &cfg),
    );
    let providers = Arc::new(providers);
    let engine = Engine::new(
        db.store.clone(),
        dyn_clock.clone(),
        providers.clone(),
        EngineConfig {
            worker_id: "catch-up-test".into(),
            ..EngineConfig::default()
        },
        Arc::new(Health::new()),
    );
    let inbox = InboxProcessor::new(db.store.clone(), dyn_clock.clone(), InboxConfig::default());
    let catch_up = CatchUp::new(db.store.clone(), dyn_clock.clone(), &providers, "node-a")
        .expect("a provider with catch_up");

    // Registered over 2 minutes; the last one a minute before the run ends.
    let ids: Vec<String> = (0..6).map(|i| format!("pay_cu{i}")).collect();
    let policy = providers["stripe"].policy.clone();
    for (i, id) in ids.iter().enumerate() {
        clock.advance_to(clock.now().plus(Duration::from_secs(20 * i as u64)));
        let plan = sim.create(Some(format!("pi_cu{i}")));
        let p = finality_store::NewPayment {
            id: finality_core::money::PaymentId::parse(id).unwrap(),
            provider: "stripe".into(),
            provider_ref: Some(finality_core::money::ProviderRef::parse(&plan.id).unwrap()),
            merchant_ref: None,
            kind: finality_core::Kind::Payment,
            amount: finality_core::money::Amount::new(
                500,
                finality_core::money::Currency::parse("USD").unwrap(),
            )
            .unwrap(),
            metadata: json!({}),
        };
        let now = clock.now();
        db.store
            .register(&p, now, policy.first_poll_at(now))
            .await
            .unwrap();
    }
    // The backstop poll is at give-up (7 days): nothing else polls.
    let first_poll = db.store.next_due_at().await.unwrap().unwrap();
    assert!(first_poll.since(clock.now()) > Duration::from_secs(6 * 24 * 3600));

    let mut rounds = 0;
    loop {
        catch_up.run_due().await;
        inbox.process_due().await.unwrap();
        while engine.run_once().await.unwrap() > 0 {}
        let mut open = 0;
        for id in &ids {
            let p = db.store.get(id).await.unwrap().unwrap().payment;
            open += usize::from(!p.status.is_final());
        }
        if open == 0 {
            break;
        }
        rounds += 1;
        assert!(rounds < 100, "payments still open after {rounds} reads");
        let next = catch_up.next_at().unwrap();
        clock.advance_to(next.max(clock.now()).plus(Duration::from_millis(250)));
    }
    for id in &ids {
        let p = db.store.get(id).await.unwrap().unwrap().payment;
        assert_eq!(p.status, Status::Succeeded, "{id}");
        assert_eq!(p.status_source, Some(Source::Sweep), "{id}");
    }
    let stats = sim.stats();
    assert_eq!(stats.status_calls, 0, "no payment was polled");
    assert_eq!(stats.webhooks_sent, 0, "every webhook was lost");
    assert!(
        (1..=12).contains(&stats.event_list_requests),
        "{} list calls",
        stats.event_list_requests
    );

    // The cursor is durable: after node-a's lease ends, node-b takes over
    // at the newest event read, not from scratch.
    let later = clock.now().plus(Duration::from_secs(3600));
    let lease = db
        .store
        .cursor_take(
            "stripe",
            "node-b",
            later,
            later.plus(Duration::from_secs(60)),
        )
        .await
        .unwrap()
        .unwrap();
    let cursor = lease.cursor.expect("a saved cursor");
    assert!(cursor.starts_with("evt_pi_cu"), "{cursor}");
    stop.cancel();
}
