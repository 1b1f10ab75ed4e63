//! Event-list catch-up end to end on virtual time: every webhook is lost,
//! the provider's event list (Stripe's `GET /v1/events`, PayPal's
//! `GET /v1/notifications/webhooks-events`, served by the simulator in each
//! provider's shape, read by the real adapters over HTTP) finds every
//! settlement, the changes record source `sweep`, and not one payment is
//! polled.

use super::*;
use finality_core::{Source, Status, Timestamp, VirtualClock};
use finality_engine::catch_up::CatchUp;
use finality_engine::inbox::InboxProcessor;
use finality_engine::Engine;
use finality_providers::stripe::StripeAdapter;

finality_testkit::on_both_backends!(
    lost_webhooks_are_caught_up_from_stripe_events,
    lost_webhooks_are_caught_up_from_paypal_events
);

const STRIPE_KEY: &str = "sk_test_catch_up";
const PAYPAL_CREDENTIALS: &str = "catch-up-client:catch-up-secret";

#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Stripe,
    PayPal,
}

async fn lost_webhooks_are_caught_up_from_stripe_events(b: Backend) {
    caught_up(b, Wire::Stripe).await;
}

async fn lost_webhooks_are_caught_up_from_paypal_events(b: Backend) {
    caught_up(b, Wire::PayPal).await;
}

async fn caught_up(b: Backend, wire: Wire) {
    let db = b.open().await;
    let clock = Arc::new(VirtualClock::new(Timestamp(1_767_225_600_000)));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let stop = CancellationToken::new();
    // Every payment succeeds 20 s after creation; every webhook is lost.
    let mut sim_cfg = SimConfig::deterministic(Duration::from_secs(20));
    sim_cfg.webhooks.lost = 1.0;
    sim_cfg.api_key = Some(match wire {
        Wire::Stripe => STRIPE_KEY.into(),
        Wire::PayPal => PAYPAL_CREDENTIALS.into(),
    });
    let sim = Simulator::new(sim_cfg, dyn_clock.clone(), 11);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(finality_sim::server::serve(sim.clone(), l, stop.clone()));

    let (name, prefix) = match wire {
        Wire::Stripe => ("stripe", "pi_"),
        Wire::PayPal => ("paypal", "ORDER"),
    };
    let mut cfg = ProviderConfig::sim(&format!("{sim_url}/{name}"));
    cfg.catch_up = Some(Duration::from_secs(30));
    cfg.validate().unwrap();
    let timeouts = Timeouts {
        connect: cfg.connect_timeout,
        total: cfg.timeout,
    };
    let adapter: Arc<dyn finality_providers::Provider> = match wire {
        Wire::Stripe => {
            Arc::new(StripeAdapter::new(&cfg.base_url, STRIPE_KEY.into(), timeouts).unwrap())
        }
        Wire::PayPal => Arc::new(
            finality_providers::paypal::PayPalAdapter::new(
                &cfg.base_url,
                PAYPAL_CREDENTIALS,
                Some("WH-CATCH-UP".into()),
                timeouts,
            )
            .unwrap(),
        ),
    };
    let mut providers = Providers::new();
    providers.insert(name.into(), ProviderEntry::from_config(adapter, &cfg));
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
    let policy = providers[name].policy.clone();
    for (i, id) in ids.iter().enumerate() {
        clock.advance_to(clock.now().plus(Duration::from_secs(20 * i as u64)));
        let plan = sim.create_priced(Some(format!("{prefix}cu{i}")), None, 500, "USD");
        let p = finality_store::NewPayment {
            id: finality_core::money::PaymentId::parse(id).unwrap(),
            provider: name.into(),
            provider_ref: Some(finality_core::money::ProviderRef::parse(&plan.id).unwrap()),
            merchant_ref: None,
            account: None,
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
        .cursor_take(name, "node-b", later, later.plus(Duration::from_secs(60)))
        .await
        .unwrap()
        .unwrap();
    let cursor = lease.cursor.expect("a saved cursor");
    match wire {
        // Stripe's cursor is the newest event's id, PayPal's its time.
        Wire::Stripe => assert!(cursor.starts_with("evt_pi_cu"), "{cursor}"),
        Wire::PayPal => assert!(cursor.starts_with("2026-01-01T00:"), "{cursor}"),
    }
    stop.cancel();
}
