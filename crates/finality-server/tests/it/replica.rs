//! Reads served by a real streaming replica: a private primary, a standby
//! made from it with `pg_basebackup -R` on a port of its own, replay paused
//! to make it lag, and the standby stopped mid-test.

use super::roles::call;
use super::*;
use finality_server::identity::{ApiToken, Role};
use finality_server::replica::Replica;
use finality_testkit::private_pg::PrivatePg;

/// The token that registers payments (and reads them back).
const WRITER: &str = "writer-token-0123456789";
/// The token that reads and never writes.
const READER: &str = "reader-token-0123456789";
/// Past this lag reads go to the primary.
const MAX_LAG: Duration = Duration::from_secs(3);

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn get_as(app: &TestApp, token: &str, path: &str) -> (StatusCode, Value) {
    call(app, token, reqwest::Method::GET, path, None).await
}

async fn register(app: &TestApp, id: &str) {
    let body = Some(app.payment(id));
    let (s, v) = call(app, WRITER, reqwest::Method::POST, "/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

async fn wait_status(app: &TestApp, id: &str, status: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, v) = get_as(app, WRITER, &format!("/v1/payments/{id}")).await;
        if v["status"] == status {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never {status}: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `/readyz`'s `replica` object once its `state` is `want` (at most 20 s).
async fn replica_state(app: &TestApp, want: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, v) = app.get("/readyz").await;
        if v["replica"]["state"] == want {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "replica never {want}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `finality_api_reads_total{from=…}` as `/metrics` renders it now.
async fn reads_from(app: &TestApp, from: &str) -> u64 {
    let text = app.metrics().await;
    let prefix = format!("finality_api_reads_total{{from=\"{from}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

fn ids(page: &Value) -> Vec<String> {
    page["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

/// Every position of the feed read through the API (as `token`).
async fn feed_seqs(app: &TestApp, token: &str) -> Vec<i64> {
    let (s, page) = get_as(app, token, "/v1/events?after=0&limit=1000").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect()
}

/// Every position of the feed as the primary has it.
async fn primary_seqs(app: &TestApp) -> Vec<i64> {
    let feed = app.db.store.feed_after(0, 1000).await.unwrap();
    feed.iter().map(|e| e.seq).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_go_to_a_streaming_replica_and_back_to_the_primary_when_it_lags_or_stops() {
    let primary = blocking(PrivatePg::start).await;
    let db = testing::postgres_at(&primary.url(), 8).await;
    let primary = Arc::new(primary);
    let p = primary.clone();
    let standby = Arc::new(blocking(move || p.replica()).await);
    let replica = Replica::connect(
        &primary.url(),
        &standby.url(),
        4,
        Duration::from_secs(30),
        MAX_LAG,
    )
    .unwrap();
    let tokens = Tokens::named(vec![
        ApiToken::new("writer", Role::Admin, WRITER),
        ApiToken::new("reader", Role::Reviewer, READER),
    ])
    .unwrap();
    let app = spawn_app_replica(
        db,
        SimConfig::deterministic(Duration::from_millis(500)),
        true,
        sim_providers,
        tokens,
        |_| {},
        Some(replica),
    )
    .await;
    let ready = replica_state(&app, "serving").await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["replica"]["reads_from"], "replica");

    // Registered and read back at once by the caller that wrote it: from
    // the primary (its own write), 200 every time.
    let (before_r, before_p) = (
        reads_from(&app, "replica").await,
        reads_from(&app, "primary").await,
    );
    for i in 0..5 {
        let id = format!("pay_rw_{i}");
        register(&app, &id).await;
        let (s, v) = get_as(&app, WRITER, &format!("/v1/payments/{id}")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["id"], id.as_str());
    }
    assert!(reads_from(&app, "primary").await >= before_p + 5);
    // Another caller's reads are the replica's.
    let (s, _) = get_as(&app, READER, "/v1/payments?limit=500").await;
    assert_eq!(s, StatusCode::OK);
    assert!(reads_from(&app, "replica").await > before_r);

    // Replay paused: the replica falls behind. Another caller's list,
    // read on the replica, does not have a payment registered since;
    // its own read of that payment is found on the primary.
    let standby_pool = sqlx::PgPool::connect(&standby.url()).await.unwrap();
    sqlx::query("SELECT pg_wal_replay_pause()")
        .execute(&standby_pool)
        .await
        .unwrap();
    register(&app, "pay_unseen").await;
    let (s, stale) = get_as(&app, READER, "/v1/payments?limit=500").await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        !ids(&stale).contains(&"pay_unseen".to_string()),
        "the list came from the paused replica: {stale}"
    );
    let (s, v) = get_as(&app, READER, "/v1/payments/pay_unseen").await;
    assert_eq!(
        s,
        StatusCode::OK,
        "not on the replica yet, found on the primary: {v}"
    );
    // The feed read on the lagging replica is a prefix of the primary's:
    // no position skipped, none the primary has not committed.
    let on_replica = feed_seqs(&app, READER).await;
    let on_primary = primary_seqs(&app).await;
    assert!(
        on_primary.starts_with(&on_replica),
        "{on_replica:?} is not a prefix of {on_primary:?}"
    );

    // Past MAX_LAG reads go to the primary, and /readyz says so.
    let ready = replica_state(&app, "lagging").await;
    assert_eq!(ready["status"], "degraded");
    assert_eq!(ready["replica"]["reads_from"], "primary");
    assert!(ready["replica"]["lag_seconds"].as_f64().unwrap() > MAX_LAG.as_secs_f64());
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("finality_replica_serving 0"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("replica"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (_, fresh) = get_as(&app, READER, "/v1/payments?limit=500").await;
    assert!(ids(&fresh).contains(&"pay_unseen".to_string()), "{fresh}");

    // Replay resumed: serving again, caught up.
    sqlx::query("SELECT pg_wal_replay_resume()")
        .execute(&standby_pool)
        .await
        .unwrap();
    standby_pool.close().await;
    replica_state(&app, "serving").await;
    let before_r = reads_from(&app, "replica").await;
    let (_, caught_up) = get_as(&app, READER, "/v1/payments?limit=500").await;
    assert!(ids(&caught_up).contains(&"pay_unseen".to_string()));
    assert!(reads_from(&app, "replica").await > before_r);

    // A long-polling reader on the replica wakes for a new event (the
    // replica relays no NOTIFY).
    let head = *feed_seqs(&app, READER).await.last().unwrap_or(&0);
    let reader = {
        let (http, base) = (app.http.clone(), app.base.clone());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let v: Value = http
                .get(format!("{base}/v1/events?after={head}&wait=20s"))
                .bearer_auth(READER)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (v, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    register(&app, "pay_fed").await;
    let (page, waited) = reader.await.unwrap();
    let events = page["events"].as_array().unwrap();
    assert!(!events.is_empty(), "woke with nothing after {waited:?}");
    assert!(waited < Duration::from_secs(15), "{waited:?}");
    assert!(events[0]["seq"].as_i64().unwrap() > head);

    // Everything settled; the whole feed read through the replica is the
    // primary's, position for position.
    for id in ["pay_unseen", "pay_fed"] {
        wait_status(&app, id, "succeeded").await;
    }
    tokio::time::sleep(MAX_LAG).await;
    let on_primary = primary_seqs(&app).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let on_replica = feed_seqs(&app, READER).await;
        if on_replica == on_primary {
            break;
        }
        assert!(on_primary.starts_with(&on_replica), "{on_replica:?}");
        assert!(std::time::Instant::now() < deadline, "{on_replica:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The standby stops mid-test: reads go to the primary and keep working.
    let s2 = standby.clone();
    blocking(move || s2.stop(false)).await;
    let ready = replica_state(&app, "down").await;
    assert_eq!(ready["status"], "degraded");
    assert_eq!(ready["replica"]["reads_from"], "primary");
    let before_p = reads_from(&app, "primary").await;
    let (s, v) = get_as(&app, READER, "/v1/payments/pay_fed").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _) = get_as(&app, READER, "/v1/stats/providers").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(feed_seqs(&app, READER).await, on_primary);
    assert!(reads_from(&app, "primary").await >= before_p + 3);
    // A new registration and its read work as before.
    register(&app, "pay_after_stop").await;
    wait_status(&app, "pay_after_stop", "succeeded").await;
}
