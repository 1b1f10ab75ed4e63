//! When the database goes away: a private PostgreSQL (its own `initdb`, its
//! own port: the shared server other tests use is never touched) stopped
//! under a running service, then started again.

use super::*;
use finality_core::Schedule;
use finality_testkit::private_pg::PrivatePg;

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// Polled every 300 ms; settles 800 ms after creation; webhooks accepted.
fn quick_sim(sim_url: &str) -> Providers {
    let mut cfg = ProviderConfig::sim(sim_url);
    cfg.schedule_override = Some(Schedule::Fixed {
        delays: vec![Duration::from_millis(300)],
    });
    let verifier =
        StandardWebhooks::new(&[WEBHOOK_SECRET.to_string()], cfg.webhook_tolerance).unwrap();
    let adapter = SimAdapter::new(
        sim_url,
        None,
        Timeouts {
            connect: cfg.connect_timeout,
            total: cfg.timeout,
        },
    )
    .unwrap()
    .with_webhooks(verifier);
    let mut providers = Providers::new();
    providers.insert(
        "sim".into(),
        ProviderEntry::from_config(Arc::new(adapter), &cfg),
    );
    providers
}

/// PostgreSQL stops: `/readyz` says so, registrations and webhooks answer
/// 503 with `Retry-After` and nothing is stored (the provider will retry);
/// the engine backs off. PostgreSQL returns: the same process, never
/// restarted, is ready again, and polls and registrations work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_down_answers_503_stores_nothing_and_the_service_resumes() {
    let pg = Arc::new(blocking(PrivatePg::start).await);
    let db = testing::postgres_at(&pg.url(), 8).await;
    let mut sim_cfg = SimConfig::deterministic(Duration::from_millis(800));
    sim_cfg.webhooks.lost = 1.0;
    let app = spawn_app_on(db, sim_cfg, true, quick_sim).await;

    let (s, _) = app.post("/v1/payments", app.payment("pay_before")).await;
    assert_eq!(s, StatusCode::CREATED);
    app.wait_for_status("pay_before", "succeeded").await;
    // Registered just before the outage, due during it.
    let (s, _) = app.post("/v1/payments", app.payment("pay_across")).await;
    assert_eq!(s, StatusCode::CREATED);

    let p = pg.clone();
    blocking(move || p.stop(false)).await;

    let (s, v) = app.get("/readyz").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    assert_eq!(v["database"], "unreachable", "{v}");

    let r = app
        .http
        .post(format!("{}/v1/payments", app.base))
        .bearer_auth(TOKEN)
        .json(&app.payment("pay_refused"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unavailable", "{v}");

    let (headers, body) = super::webhooks::signed(
        WEBHOOK_SECRET,
        "msg_during_outage",
        chrono_now(),
        "sim_x",
        "succeeded",
    );
    let mut req = app.http.post(format!("{}/webhooks/sim", app.base));
    for (k, v) in &headers {
        req = req.header(*k, v);
    }
    let r = req.body(body).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "a webhook that could not be stored is not acknowledged"
    );

    // The engine keeps failing to claim meanwhile, backing off, not dying.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let p = pg.clone();
    blocking(move || p.start_again()).await;

    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (s, _) = app.get("/readyz").await;
        if s == StatusCode::OK {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never ready again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.wait_for_status("pay_across", "succeeded").await;
    let (s, _) = app.post("/v1/payments", app.payment("pay_after")).await;
    assert_eq!(s, StatusCode::CREATED);
    app.wait_for_status("pay_after", "succeeded").await;
    // Nothing of the refused requests was stored.
    assert!(app.db.store.get("pay_refused").await.unwrap().is_none());
    assert!(app
        .db
        .store
        .inbox_get("sim", "msg_during_outage")
        .await
        .unwrap()
        .is_none());
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// SIGTERM (the shutdown token) while a poll hangs at the provider: the
/// process stops within its grace period, and the poll's lease is handed
/// back at once (due now, held by nobody) instead of after a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_off_a_hung_poll_after_the_grace_and_hands_its_lease_back() {
    let db = testing::postgres(8).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let stop = CancellationToken::new();
    let mut sim_cfg = SimConfig::deterministic(Duration::from_secs(1));
    sim_cfg.faults.timeout = 1.0;
    sim_cfg.faults.hang = Duration::from_secs(30);
    let sim = Simulator::new(sim_cfg, clock.clone(), 3);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(finality_sim::server::serve(sim.clone(), l, stop.clone()));
    let mut cfg = ProviderConfig::sim(&sim_url);
    cfg.timeout = Duration::from_secs(20);
    cfg.schedule_override = Some(finality_core::Schedule::Fixed {
        delays: vec![Duration::from_millis(100)],
    });
    let adapter = SimAdapter::new(
        &sim_url,
        None,
        Timeouts {
            connect: cfg.connect_timeout,
            total: cfg.timeout,
        },
    )
    .unwrap();
    let mut providers = Providers::new();
    providers.insert(
        "sim".into(),
        ProviderEntry::from_config(Arc::new(adapter), &cfg),
    );
    let state = AppState {
        store: db.store.clone(),
        clock: clock.clone(),
        providers: Arc::new(providers),
        health: Arc::new(Health::new()),
        tokens: Arc::new(finality_server::identity::Tokens::shared(TOKEN)),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: finality_server::metrics::install(),
        replica: None,
    };
    let node_stop = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let node = tokio::spawn(finality_server::run(
        state,
        finality_server::Background {
            engine: Some(EngineConfig {
                worker_id: "stopping-node".into(),
                lease: Duration::from_secs(60),
                ..EngineConfig::default()
            }),
            inbox: None,
            events: None,
            sweep: None,
            retention: None,
            gauges: None,
            shutdown_grace: Some(Duration::from_secs(1)),
            client_timeout: None,
            max_connections: None,
            max_connections_per_address: None,
            idle_timeout: None,
            accounts_refresh: None,
            settlement_dir: None,
        },
        listener,
        node_stop.clone(),
    ));
    let plan = sim.create_priced(None, None, 100, "EUR");
    let p = finality_store::NewPayment {
        id: finality_core::money::PaymentId::parse("pay_hung").unwrap(),
        provider: "sim".into(),
        provider_ref: Some(finality_core::money::ProviderRef::parse(&plan.id).unwrap()),
        merchant_ref: None,
        account: None,
        kind: finality_core::Kind::Payment,
        amount: finality_core::money::Amount::new(
            100,
            finality_core::money::Currency::parse("EUR").unwrap(),
        )
        .unwrap(),
        metadata: json!({}),
    };
    let now = clock.now();
    db.store.register(&p, now, now).await.unwrap();
    // Wait for the poll to be in flight (leased by the node).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let v = db.store.get("pay_hung").await.unwrap().unwrap();
        if v.poll.as_ref().and_then(|p| p.locked_by.as_deref()) == Some("stopping-node") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never polled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = std::time::Instant::now();
    node_stop.cancel();
    node.await.unwrap().unwrap();
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(4), "stopped after {took:?}");
    let v = db.store.get("pay_hung").await.unwrap().unwrap();
    let poll = v.poll.unwrap();
    assert_eq!(poll.locked_by, None, "lease handed back");
    assert!(
        poll.next_poll_at.unwrap() <= clock.now(),
        "due at once, not when the lease ends: {poll:?}"
    );
    stop.cancel();
}

/// The SQLite handle's pool, to change per-connection settings.
fn sqlite_pool(db: &TestDb) -> sqlx::SqlitePool {
    match &db.backend {
        testing::Backend::Sqlite(lite) => lite.pool().clone(),
        testing::Backend::Postgres(_) | testing::Backend::Mysql(_) => {
            unreachable!("a SQLite test database")
        }
    }
}

/// Whether the simulator's webhook `id` is in the inbox.
async fn stored(app: &TestApp, id: &str) -> bool {
    app.db.store.inbox_get("sim", id).await.unwrap().is_some()
}

/// POST a signed webhook for the simulator; the status and JSON answer.
async fn send_webhook(app: &TestApp, id: &str, provider_ref: &str) -> (StatusCode, Value) {
    let (headers, body) =
        super::webhooks::signed(WEBHOOK_SECRET, id, chrono_now(), provider_ref, "succeeded");
    let mut req = app.http.post(format!("{}/webhooks/sim", app.base));
    for (k, v) in &headers {
        req = req.header(*k, v);
    }
    let r = req.body(body).send().await.unwrap();
    let s = r.status();
    (s, r.json().await.unwrap_or(Value::Null))
}

/// SQLite's disk fills up (a page limit on the file, SQLITE_FULL):
/// registrations and webhooks answer 503 naming the full disk, a refused
/// registration leaves no row behind, and everything acknowledged before is
/// there. Space comes back: the same process, never restarted, stores the
/// provider's retried webhook, takes the refused registration and settles
/// every payment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_disk_full_answers_503_writes_nothing_half_and_resumes() {
    // Capped at the file's size after migrations: registrations fill the
    // room left inside its pages, then the next page cannot be had.
    let db = testing::sqlite_with(2, |o| {
        o.journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .pragma("max_page_count", "1")
    })
    .await;
    let pool = sqlite_pool(&db);
    let mut sim_cfg = SimConfig::deterministic(Duration::from_millis(800));
    sim_cfg.webhooks.lost = 1.0;
    let app = spawn_app_on(db, sim_cfg, true, quick_sim).await;

    let mut accepted = Vec::new();
    let (refused, refused_body) = loop {
        let id = format!("pay_fill_{}", accepted.len());
        let body = app.payment(&id);
        let (s, v) = app.post("/v1/payments", body.clone()).await;
        match s {
            StatusCode::CREATED => accepted.push(id),
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(v["error"]["code"], "unavailable", "{v}");
                let msg = v["error"]["message"].as_str().unwrap_or_default();
                assert!(msg.contains("full"), "the answer names the full disk: {v}");
                break (id, body);
            }
            other => panic!("registration answered {other}: {v}"),
        }
        assert!(accepted.len() < 20_000, "the page limit never bit");
    };
    assert!(!accepted.is_empty(), "some room was left before the limit");

    // Webhooks (smaller rows) fill what room is left; each acknowledged
    // one is stored, and the first refused one is not.
    let mut n = 0;
    let refused_webhook = loop {
        n += 1;
        let id = format!("msg_disk_full_{n}");
        let (s, v) = send_webhook(&app, &id, "sim_unknown").await;
        match s {
            StatusCode::OK => assert!(stored(&app, &id).await),
            StatusCode::SERVICE_UNAVAILABLE => {
                let msg = v["error"]["message"].as_str().unwrap_or_default();
                assert!(msg.contains("full"), "the answer names the full disk: {v}");
                break id;
            }
            other => panic!("webhook answered {other}: {v}"),
        }
        assert!(n < 20_000, "webhooks never filled the file");
    };
    assert!(!stored(&app, &refused_webhook).await);
    // Nothing half-written: no payment, job or history row of the refused one.
    for table in [
        "payments WHERE id",
        "poll_jobs WHERE payment_id",
        "status_history WHERE payment_id",
    ] {
        let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {table} = ?"))
            .bind(&refused)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(n, 0, "{table} holds a row of the refused registration");
    }
    let payments: i64 = sqlx::query_scalar("SELECT count(*) FROM payments")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(payments as usize, accepted.len(), "every 201 is stored");

    // Space returns: lift the limit on both of the pool's connections.
    let (mut a, mut b) = (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
    for c in [&mut a, &mut b] {
        sqlx::query("PRAGMA max_page_count = 1073741823")
            .execute(&mut **c)
            .await
            .unwrap();
    }
    drop((a, b));

    let (s, v) = send_webhook(&app, &refused_webhook, "sim_unknown").await;
    assert_eq!(s, StatusCode::OK, "the provider's retry is stored: {v}");
    assert!(stored(&app, &refused_webhook).await);
    let (s, v) = app.post("/v1/payments", refused_body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    for id in accepted.iter().chain([&refused]) {
        app.wait_for_status(id, "succeeded").await;
    }
}

/// A SQLite file that can only be read (a read-only mount, wrong owner):
/// writes answer 503 naming it, nothing is stored, and reads still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_read_only_file_answers_503_on_writes_and_still_reads() {
    let db = testing::sqlite_with(2, |o| o.read_only(true)).await;
    let pool = sqlite_pool(&db);
    let mut sim_cfg = SimConfig::deterministic(Duration::from_millis(800));
    sim_cfg.webhooks.lost = 1.0;
    let app = spawn_app_on(db, sim_cfg, true, quick_sim).await;

    let (s, v) = app.post("/v1/payments", app.payment("pay_ro")).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("read-only"),
        "the answer names the read-only file: {v}"
    );
    let (s, v) = send_webhook(&app, "msg_read_only", "sim_unknown").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "not acknowledged: {v}");
    let (s, v) = app.get("/v1/payments/pay_ro").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "reads still answer: {v}");
    let (s, v) = app.get("/readyz").await;
    assert_eq!(s, StatusCode::OK, "the database answers reads: {v}");
    for table in ["payments", "webhook_inbox", "status_history"] {
        let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(n, 0, "{table} was written");
    }
}
