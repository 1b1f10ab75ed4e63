//! Signed HTTP pushes to a receiver built on the Standard Webhooks reference
//! implementation: it answers 500 for a while, then 200, and still gets
//! every event, in per-payment order, with no gaps.

use super::*;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use finality_core::{Clock, SystemClock};
use finality_relay::http::HttpSink;
use finality_relay::{PushConfig, Pusher};
use finality_testkit::testing;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[derive(Default)]
struct Receiver {
    fail_first: AtomicU32,
    got: Mutex<Vec<serde_json::Value>>,
    bad_signatures: AtomicU32,
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let wh = standardwebhooks::Webhook::new(SECRET).unwrap();
    if wh.verify(&body, &headers).is_err() {
        r.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED;
    }
    if r.fail_first.load(Ordering::SeqCst) > 0 {
        r.fail_first.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        headers["webhook-id"].to_str().unwrap(),
        v["id"].as_str().unwrap()
    );
    r.got.lock().unwrap().push(v);
    StatusCode::OK
}

async fn spawn_receiver(fail_first: u32) -> (Arc<Receiver>, String) {
    let r = Arc::new(Receiver::default());
    r.fail_first.store(fail_first, Ordering::SeqCst);
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(r.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    (r, url)
}

/// A pusher's HTTP sink to `url`, signing with [`SECRET`], for the event
/// types `types` (empty: all).
fn signing_sink(name: &str, url: &str, types: Vec<String>, clock: Arc<dyn Clock>) -> HttpSink {
    let key = standardwebhooks::Webhook::new(SECRET).unwrap();
    HttpSink::new(
        name,
        url,
        key,
        types,
        finality_relay::event::Encoding::default(),
        Duration::from_secs(5),
        clock,
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flaky_receiver_gets_every_event_in_order() {
    let db = testing::postgres(8).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (receiver, url) = spawn_receiver(25).await;
    for i in 0..30 {
        two_transitions(&*db.store, &format!("p{i:02}")).await;
    }
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    let sink = signing_sink("orders", &url, vec![], clock.clone());
    let cfg = PushConfig {
        retry: finality_core::Schedule::Exponential {
            base: Duration::from_millis(5),
            factor: 2.0,
            cap: Duration::from_millis(20),
            jitter: 0.2,
        },
        idle_check: Duration::from_millis(10),
        ..PushConfig::default()
    };
    let pusher = Pusher::new(db.store.clone(), clock, Arc::new(sink), cfg);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        pusher.push_once().await.unwrap();
        let st = db.store.destination("http:orders").await.unwrap();
        if st.delivered_seq == 60 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "stuck at {st:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        receiver.bad_signatures.load(Ordering::SeqCst),
        0,
        "every delivery verifies"
    );
    let got = receiver.got.lock().unwrap().clone();
    // No gaps: every position 1..=60 arrived (redeliveries allowed).
    let mut seqs: Vec<i64> = got.iter().map(|v| v["seq"].as_i64().unwrap()).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs, (1..=60).collect::<Vec<_>>());
    // Per payment, processing was delivered (first) before succeeded.
    let mut first_seen: std::collections::HashMap<String, Vec<String>> = Default::default();
    for v in &got {
        let list = first_seen
            .entry(v["payment_id"].as_str().unwrap().to_string())
            .or_default();
        let status = v["status"].as_str().unwrap().to_string();
        if !list.contains(&status) {
            list.push(status);
        }
    }
    for (p, order) in first_seen {
        assert_eq!(order, ["processing", "succeeded"], "order for {p}");
    }
    // Every attempt was recorded, failures with their status code.
    let attempts = db.store.deliveries("http:orders", 10_000).await.unwrap();
    assert!(
        attempts
            .iter()
            .filter(|a| a.status_code == Some(500))
            .count()
            >= 25
    );
    assert!(
        attempts
            .iter()
            .filter(|a| a.status_code == Some(200))
            .count()
            >= 60
    );
}

#[tokio::test]
async fn type_filter_skips_unwanted_events_in_order() {
    let db = testing::sqlite().await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (receiver, url) = spawn_receiver(0).await;
    for i in 0..5 {
        two_transitions(&*db.store, &format!("f{i}")).await;
    }
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    let sink = signing_sink(
        "done",
        &url,
        vec!["payment.succeeded".into()],
        clock.clone(),
    );
    let pusher = Pusher::new(
        db.store.clone(),
        clock,
        Arc::new(sink),
        PushConfig::default(),
    );
    while pusher.push_once().await.unwrap() > 0 {}
    assert_eq!(
        db.store
            .destination("http:done")
            .await
            .unwrap()
            .delivered_seq,
        10
    );
    let got = receiver.got.lock().unwrap().clone();
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|v| v["type"] == "payment.succeeded"));
}

/// A partial refund of a succeeded payment is a `payment.amounts` event
/// (schema 3, the default): sent with its counters to a destination of
/// schema 3, passed over (its cursor moving past it) for one pinned to
/// schema 2, which gets the status event in schema 2's shape only.
#[tokio::test]
async fn events_that_are_not_a_status_change_go_to_schema_3_destinations_only() {
    use finality_core::amounts::{Piece, PieceKind, PieceState};
    use finality_testkit::conformance::inbox_event;
    let db = testing::sqlite().await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    register(&*db.store, "pay_n", Timestamp(T0.0 + 3_600_000)).await;
    let piece = |kind, id: &str, amount| Piece {
        kind,
        id: id.into(),
        state: PieceState::Succeeded,
        amount,
        currency: "USD".into(),
    };
    let mut paid = inbox_event("evt_paid", "ref_pay_n", Status::Succeeded);
    paid.reported.pieces = vec![piece(PieceKind::Capture, "ch_1", 1250)];
    let mut refunded = inbox_event("evt_refund", "ref_pay_n", Status::Succeeded);
    refunded.reported.pieces = vec![
        piece(PieceKind::Capture, "ch_1", 1250),
        piece(PieceKind::Refund, "re_1", 400),
    ];
    for ev in [paid, refunded] {
        db.store.inbox_insert(&[ev], T0).await.unwrap();
        for ev in db
            .store
            .inbox_claim(T0, 10, Timestamp(T0.0 + 60_000))
            .await
            .unwrap()
        {
            db.store.inbox_process(&ev, T0).await.unwrap();
        }
    }
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    let mut got = Vec::new();
    for schema in [
        finality_relay::event::Schema::V3,
        finality_relay::event::Schema::V2,
    ] {
        let (receiver, url) = spawn_receiver(0).await;
        let name = format!("s{}", u8::from(schema));
        let sink = HttpSink::new(
            &name,
            &url,
            standardwebhooks::Webhook::new(SECRET).unwrap(),
            vec![],
            finality_relay::event::Encoding {
                schema,
                ..Default::default()
            },
            Duration::from_secs(5),
            clock.clone(),
        )
        .unwrap();
        let pusher = Pusher::new(
            db.store.clone(),
            clock.clone(),
            Arc::new(sink),
            PushConfig::default(),
        );
        while pusher.push_once().await.unwrap() > 0 {}
        let cursor = db
            .store
            .destination(&format!("http:{name}"))
            .await
            .unwrap()
            .delivered_seq;
        assert_eq!(cursor, 2, "{schema:?}: past every event");
        got.push(receiver.got.lock().unwrap().clone());
    }
    let types = |evs: &[Value]| -> Vec<String> {
        evs.iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(types(&got[0]), ["payment.succeeded", "payment.amounts"]);
    assert_eq!(got[0][0]["amounts"]["captured"], 1250);
    assert_eq!(got[0][0]["amounts"]["refunded"], 0);
    assert_eq!(got[0][1]["amounts"]["refunded"], 400);
    assert_eq!(got[0][1]["status"], "succeeded");
    assert_eq!(got[0][1]["previous_status"], "succeeded");
    assert_eq!(types(&got[1]), ["payment.succeeded"]);
    assert_eq!(got[1][0]["schema"], 2);
    assert!(got[1][0].get("amounts").is_none(), "{}", got[1][0]);
}

/// Hostile: a destination that answers 307 to another address does not
/// get the signed event forwarded there (reqwest used to follow it); the
/// failed delivery names the `Location`, and the event waits in the feed.
#[tokio::test]
async fn hostile_a_redirecting_destination_gets_no_forwarded_event() {
    let db = testing::sqlite().await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (elsewhere, to) = spawn_receiver(0).await;
    let app = axum::Router::new().fallback(move || {
        let to = to.clone();
        async move { (StatusCode::TEMPORARY_REDIRECT, [("location", to)], "moved") }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    two_transitions(&*db.store, "r1").await;
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    let sink = signing_sink("moved", &url, vec![], clock.clone());
    let pusher = Pusher::new(
        db.store.clone(),
        clock,
        Arc::new(sink),
        PushConfig::default(),
    );
    pusher.push_once().await.unwrap();
    let st = db.store.destination("http:moved").await.unwrap();
    assert_eq!(st.delivered_seq, 0, "{st:?}");
    let err = st.last_error.unwrap_or_default();
    assert!(
        err.contains("HTTP 307: redirect to http://") && err.contains("not followed"),
        "{err}"
    );
    assert!(
        elsewhere.got.lock().unwrap().is_empty(),
        "the event was forwarded"
    );
}

/// Hostile: a push signing secret with no key (`whsec_`) or a short one
/// would make every receiver's signature check pass for anyone: refused.
#[test]
fn hostile_push_secrets_have_a_length_floor() {
    for s in ["whsec_", "whsec_dGVzdA==", "not-base64!"] {
        assert!(finality_relay::check_push_secret(s).is_err(), "{s}");
    }
    assert!(finality_relay::check_push_secret(SECRET).is_ok());
}

/// A database failover that lost the last commits, with the pusher kept
/// running: the promoted standby had positions 1..=4 and the destination's
/// cursor at 2; position 5 and 6 (the processing and succeeded of `pf03`,
/// delivered already) and the cursor's advance were lost. The provider's
/// truth makes `pf03` succeed again (by a poll, from pending) and another
/// payment moves: the new history gives positions 5 and 6 to them. The
/// pusher, which still holds the old history in memory, resends from the
/// divergence, the re-derived transition under the id the consumer saw;
/// a consumer deduplicating by id takes each transition once, and the
/// cursor never passes the head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_that_lost_commits_is_resent_from_the_divergence() {
    use finality_core::{Source, Status, Timestamp};
    use sqlx::Connection;
    let db = testing::postgres(8).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (receiver, url) = spawn_receiver(0).await;
    for id in ["pf01", "pf02", "pf03"] {
        two_transitions(&*db.store, id).await;
    }
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    let sink = signing_sink("orders", &url, vec![], clock.clone());
    let cfg = PushConfig {
        idle_check: Duration::from_millis(10),
        ..PushConfig::default()
    };
    let pusher = Pusher::new(db.store.clone(), clock, Arc::new(sink), cfg);
    let until = |seq: i64| {
        let (pusher, store) = (&pusher, db.store.clone());
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                pusher.push_once().await.unwrap();
                let st = store.destination("http:orders").await.unwrap();
                if st.delivered_seq == seq {
                    return;
                }
                assert!(std::time::Instant::now() < deadline, "stuck at {st:?}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    until(6).await;
    let before: Vec<serde_json::Value> = receiver.got.lock().unwrap().clone();
    assert_eq!(before.len(), 6);

    // The standby's state, applied as replication applies it.
    let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
    for sql in [
        "SET session_replication_role = replica",
        "DELETE FROM outbox WHERE feed_seq > 4",
        "UPDATE payments SET status = 'pending', finalized_at = NULL WHERE id = 'pf03'",
        "DELETE FROM status_history WHERE payment_id = 'pf03'",
        "UPDATE event_destinations SET delivered_seq = 2",
        "UPDATE feed_state SET last_seq = 4, \
         epoch_origin = split_part(epoch_origin, '/', 1) || '/00000001-old'",
    ] {
        sqlx::query(sql).execute(&mut c).await.unwrap();
    }
    drop(c);
    // Before the new history gives a position: the pusher, holding the
    // old events 3..=6 in memory, cannot move its cursor past the head (4).
    until(4).await;
    // The new history: pf03 polled straight to succeeded; pf04 registered.
    let polled = finality_store::Report {
        payment_id: "pf03".into(),
        status: Status::Succeeded,
        source: Source::StatusQuery,
        event_id: None,
        observed_at: T0,
        reason: None,
        actor: None,
    };
    db.store.apply(&polled, Timestamp(T0.0 + 9)).await.unwrap();
    finality_testkit::conformance::register(&*db.store, "pf04", T0).await;
    let manual =
        finality_store::Report::manual("pf04", Status::Failed, "declined".into(), "ops".into(), T0);
    db.store.apply(&manual, Timestamp(T0.0 + 9)).await.unwrap();
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    until(6).await;

    let got: Vec<serde_json::Value> = receiver.got.lock().unwrap().clone();
    // What a consumer deduplicating by id took: each transition once.
    let mut taken = std::collections::HashMap::new();
    for v in &got {
        taken
            .entry(v["id"].as_str().unwrap().to_string())
            .or_insert_with(|| {
                (
                    v["payment_id"].as_str().unwrap().to_string(),
                    v["status"].as_str().unwrap().to_string(),
                )
            });
    }
    let mut per: Vec<(String, String)> = taken.into_values().collect();
    per.sort();
    assert_eq!(
        per,
        [
            ("pf01", "processing"),
            ("pf01", "succeeded"),
            ("pf02", "processing"),
            ("pf02", "succeeded"),
            ("pf03", "processing"),
            ("pf03", "succeeded"),
            ("pf04", "failed"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
        "{got:#?}"
    );
    // The re-derived success is the one delivered before, by its id.
    let succeeded = |v: &serde_json::Value| v["payment_id"] == "pf03" && v["status"] == "succeeded";
    let old = before.iter().find(|v| succeeded(v)).unwrap();
    assert!(
        got[6..]
            .iter()
            .any(|v| succeeded(v) && v["id"] == old["id"]),
        "{got:#?}"
    );
    // Resent from the divergence (position 3 on), nothing before it.
    assert!(
        got[6..].iter().all(|v| v["seq"].as_i64().unwrap() > 2),
        "{got:#?}"
    );
}
