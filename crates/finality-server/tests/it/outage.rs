//! Webhook outage detection on virtual time: the simulator's webhook sender
//! goes down mid-run, payments keep settling by polls, the provider switches
//! to its outage schedule (and `/readyz` and the metric say so), and back
//! when webhooks resume.

use super::*;
use finality_core::{Status, Timestamp, VirtualClock};
use finality_engine::inbox::InboxProcessor;
use finality_engine::Engine;
use finality_providers::webhook::standard::decode_secret;
use finality_sim::webhooks::WebhookTarget;

finality_testkit::on_both_backends!(webhook_outage_switches_schedules_and_back);

struct Rig {
    /// The provider's name, one per backend: the metrics recorder is shared
    /// by every test of the process, so each run watches its own gauge.
    provider: String,
    db: TestDb,
    clock: Arc<VirtualClock>,
    sim: Arc<Simulator>,
    engine: Arc<Engine>,
    inbox: Arc<InboxProcessor>,
    health: Arc<Health>,
    base: String,
    http: reqwest::Client,
    stop: CancellationToken,
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Rig {
    async fn new(b: Backend) -> Rig {
        let provider = format!("sim_{}", format!("{b:?}").to_lowercase());
        let db = b.open().await;
        let clock = Arc::new(VirtualClock::new(Timestamp(1_767_225_600_000)));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let stop = CancellationToken::new();
        // Every payment succeeds 10 s after creation; every webhook arrives.
        let mut sim_cfg = SimConfig::deterministic(Duration::from_secs(10));
        sim_cfg.webhooks.lost = 0.0;
        sim_cfg.webhooks.delayed = 0.0;
        sim_cfg.webhooks.duplicated = 0.0;
        sim_cfg.webhooks.reordered = 0.0;
        let sim = Simulator::new(sim_cfg, dyn_clock.clone(), 7);
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sim_url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(finality_sim::server::serve(sim.clone(), l, stop.clone()));

        // Webhooks configured: the webhooks-first schedule, watched.
        let mut cfg = ProviderConfig::sim(&sim_url);
        cfg.webhook_secret_envs = vec!["FINALITY_TEST_OUTAGE_SECRET".into()];
        cfg.webhook_outage_after = 3;
        let verifier =
            StandardWebhooks::new(&[WEBHOOK_SECRET.to_string()], cfg.webhook_tolerance).unwrap();
        let timeouts = Timeouts {
            connect: cfg.connect_timeout,
            total: cfg.timeout,
        };
        let adapter = SimAdapter::new(&sim_url, None, timeouts)
            .unwrap()
            .with_webhooks(verifier);
        let mut providers = Providers::new();
        providers.insert(
            provider.clone(),
            ProviderEntry::from_config(Arc::new(adapter), &cfg),
        );
        let providers = Arc::new(providers);
        let health = Arc::new(Health::new());
        let state = AppState {
            store: db.store.clone(),
            clock: dyn_clock.clone(),
            providers: providers.clone(),
            health: health.clone(),
            tokens: Arc::new(finality_server::identity::Tokens::shared(TOKEN)),
            nudges: Arc::default(),
            throttle: Arc::default(),
            metrics: finality_server::metrics::install(),
            replica: None,
        };
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(finality_server::run(
            state,
            finality_server::Background::default(),
            l,
            stop.clone(),
        ));
        sim.set_webhook_target(WebhookTarget::standard(
            format!("{base}/webhooks/{provider}"),
            decode_secret(WEBHOOK_SECRET).unwrap(),
        ));
        let engine = Engine::new(
            db.store.clone(),
            dyn_clock.clone(),
            providers,
            EngineConfig {
                worker_id: "outage-test".into(),
                ..EngineConfig::default()
            },
            health.clone(),
        );
        let inbox = InboxProcessor::new(db.store.clone(), dyn_clock, InboxConfig::default());
        let http = reqwest::Client::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while http.get(format!("{base}/healthz")).send().await.is_err() {
            assert!(std::time::Instant::now() < deadline, "server did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Rig {
            provider,
            db,
            clock,
            sim,
            engine,
            inbox,
            health,
            base,
            http,
            stop,
        }
    }

    /// Register through the API (so the schedule in force picks the first poll).
    async fn register(&self, id: &str) {
        let plan = self.sim.create(Some(format!("sim_{id}")));
        let r = self
            .http
            .post(format!("{}/v1/payments", self.base))
            .bearer_auth(TOKEN)
            .json(
                &json!({"id": id, "provider": self.provider, "provider_ref": plan.id,
                          "amount": 1000, "currency": "EUR"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
    }

    /// Step virtual time (webhooks, inbox, polls) until `ids` are final.
    async fn settle(&self, ids: &[&str]) {
        for _ in 0..10_000 {
            self.sim.deliver_due().await;
            self.inbox.process_due().await.unwrap();
            while self.engine.run_once().await.unwrap() > 0 {}
            let mut open = 0;
            for id in ids {
                let p = self.db.store.get(id).await.unwrap().unwrap().payment;
                open += usize::from(!p.status.is_final());
            }
            if open == 0 {
                return;
            }
            let next = [
                self.db.store.next_due_at().await.unwrap(),
                self.sim.next_webhook_at(),
                self.db.store.inbox_next_due().await.unwrap(),
            ]
            .into_iter()
            .flatten()
            .min()
            .expect("something is due while payments are open");
            self.clock
                .advance_to(next.max(self.clock.now()).plus(Duration::from_millis(250)));
        }
        panic!("{ids:?} did not settle");
    }

    async fn source(&self, id: &str) -> Option<finality_core::Source> {
        let p = self.db.store.get(id).await.unwrap().unwrap().payment;
        assert_eq!(p.status, Status::Succeeded, "{id}");
        p.status_source
    }

    async fn readyz(&self) -> Value {
        let r = self
            .http
            .get(format!("{}/readyz", self.base))
            .send()
            .await
            .unwrap();
        r.json().await.unwrap()
    }
}

async fn webhook_outage_switches_schedules_and_back(b: Backend) {
    use finality_core::Source;
    let rig = Rig::new(b).await;

    // Webhooks arrive: payments settle by them, nothing is polled early.
    for id in ["pay_o1", "pay_o2", "pay_o3"] {
        rig.register(id).await;
    }
    rig.settle(&["pay_o1", "pay_o2", "pay_o3"]).await;
    for id in ["pay_o1", "pay_o2", "pay_o3"] {
        assert_eq!(rig.source(id).await, Some(Source::Webhook), "{id}");
    }
    assert_eq!(rig.health.webhook_outage(&rig.provider), None);
    assert_eq!(rig.readyz().await["status"], "ready");

    // The provider's webhook sender goes down: payments still settle, by
    // polls (the first at 100 s under the webhooks-first schedule)...
    rig.sim.set_webhooks_down(true);
    let down = ["pay_o4", "pay_o5", "pay_o6", "pay_o7"];
    for id in down {
        rig.register(id).await;
    }
    rig.settle(&down).await;
    for id in down {
        assert_eq!(rig.source(id).await, Some(Source::StatusQuery), "{id}");
    }
    // ...and after three of them the webhooks are taken to be down.
    assert!(rig.health.webhook_outage(&rig.provider).is_some());
    let r = rig.readyz().await;
    assert_eq!(r["status"], "degraded", "{r}");
    assert!(
        r["webhook_outages"][&rig.provider]["since"].is_string(),
        "{r}"
    );
    let metrics = rig
        .http
        .get(format!("{}/metrics", rig.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!(
            "finality_webhook_outage{{provider=\"{}\"}} 1",
            rig.provider
        )),
        "{metrics}"
    );

    // A payment registered now is polled by the outage schedule (the quick
    // one: first poll after 1 s, not 100 s).
    rig.register("pay_o8").await;
    let poll = rig
        .db
        .store
        .get("pay_o8")
        .await
        .unwrap()
        .unwrap()
        .poll
        .unwrap();
    assert_eq!(
        poll.next_poll_at,
        Some(rig.clock.now().plus(Duration::from_secs(1)))
    );

    // Webhooks resume: the first verified one ends the outage.
    rig.sim.set_webhooks_down(false);
    rig.register("pay_o9").await;
    rig.settle(&["pay_o8", "pay_o9"]).await;
    for _ in 0..100 {
        if rig.health.webhook_outage(&rig.provider).is_none() {
            break;
        }
        rig.clock
            .advance_to(rig.clock.now().plus(Duration::from_secs(1)));
        rig.sim.deliver_due().await;
    }
    assert_eq!(
        rig.health.webhook_outage(&rig.provider),
        None,
        "webhooks resumed"
    );
    assert_eq!(rig.readyz().await["status"], "ready");
}
