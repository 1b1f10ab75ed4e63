//! Replay and redelivery through the API and in the console (headless
//! Chromium): a real server pushing to a real HTTP receiver, rewound to a
//! position and to a time, one event redelivered, paused and resumed;
//! only an admin may, each action is in the audit trail, and what is sent
//! again comes in feed order with nothing skipped.

use super::console::{
    browser, browser_sign_in, click, rows, shot, text, type_in, wait_text, wait_url,
};
use super::roles::{call, named_tokens, payment, ADMIN, ALICE, SERVICE};
use super::*;
use reqwest::Method;
use std::sync::Mutex;

pub(super) const DEST: &str = "http:ledger";

type Got = Arc<Mutex<Vec<Value>>>;

/// A server whose events go to a receiver that keeps every body.
pub(super) async fn spawn_pushing(backend: Backend) -> (TestApp, Got) {
    std::env::set_var("FINALITY_TEST_REPLAY_SECRET", WEBHOOK_SECRET);
    let got: Got = Arc::default();
    let keep = got.clone();
    let hook = axum::Router::new().route(
        "/events",
        axum::routing::post(move |body: axum::body::Bytes| {
            let keep = keep.clone();
            async move {
                keep.lock()
                    .unwrap()
                    .push(serde_json::from_slice::<Value>(&body).unwrap());
                "ok"
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/events", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, hook).await });
    let db = match backend {
        Backend::Postgres => testing::postgres(8).await,
        Backend::Sqlite => testing::sqlite().await,
        Backend::Mysql => testing::mysql(8).await,
    };
    let app = spawn_app_background(
        db,
        SimConfig::deterministic(Duration::from_secs(3600)),
        false,
        sim_providers,
        named_tokens(),
        |b| {
            b.events = Some(finality_relay::config::EventsConfig {
                http: vec![finality_relay::config::HttpEndpoint {
                    name: "ledger".into(),
                    url,
                    secret_env: "FINALITY_TEST_REPLAY_SECRET".into(),
                    types: Vec::new(),
                    timeout: Duration::from_secs(2),
                    concurrency: 4,
                    retry_for: Duration::from_secs(60),
                    schema: Default::default(),
                    format: Default::default(),
                }],
                ..Default::default()
            });
        },
    )
    .await;
    (app, got)
}

/// Register `id` and resolve it by hand (one event: pending → succeeded,
/// manual, with a reason and the reviewer as actor).
pub(super) async fn settle(app: &TestApp, id: &str) {
    let (s, v) = call(
        app,
        SERVICE,
        Method::POST,
        "/v1/payments",
        Some(payment(id)),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = call(
        app,
        ALICE,
        Method::POST,
        &format!("/v1/payments/{id}/resolve"),
        Some(json!({"status": "succeeded", "reason": "seen on the bank statement"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

/// Wait until the receiver holds `n` bodies.
pub(super) async fn wait_got(got: &Got, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let g = got.lock().unwrap().clone();
        if g.len() >= n {
            return g;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {} of {n} events arrived",
            g.len()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn seqs(v: &[Value]) -> Vec<i64> {
    v.iter().map(|e| e["seq"].as_i64().unwrap()).collect()
}

/// The positions sent, sorted: with several deliveries in flight (never two
/// of one payment), different payments' events may land in any order.
fn sorted(v: &[Value]) -> Vec<i64> {
    let mut s = seqs(v);
    s.sort_unstable();
    s
}

async fn audit_actions(app: &TestApp) -> Vec<(String, String)> {
    let (s, v) = call(app, ADMIN, Method::GET, "/v1/audit?limit=100", None).await;
    assert_eq!(s, StatusCode::OK);
    v["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"].as_str().unwrap().starts_with("events_"))
        .map(|r| {
            (
                r["action"].as_str().unwrap().to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_redeliver_pause_and_resume_through_the_api() {
    let (app, got) = spawn_pushing(Backend::Postgres).await;
    for i in 0..6 {
        settle(&app, &format!("pay_rp{i}")).await;
    }
    let first = wait_got(&got, 6).await;
    assert_eq!(sorted(&first), (1..=6).collect::<Vec<_>>());
    // Complete events: the payment and who settled it, why.
    let mut first = first;
    first.sort_by_key(|e| e["seq"].as_i64());
    assert_eq!(first[0]["schema"], 3);
    assert_eq!(first[0]["amount"], 1000);
    assert_eq!(first[0]["currency"], "USD");
    assert_eq!(first[0]["provider_ref"], "sim_pay_rp0");
    assert_eq!(first[0]["reason"], "seen on the bank statement");
    assert_eq!(first[0]["actor"], "alice");

    let path = |a: &str| format!("/v1/events/destinations/{DEST}/{a}");
    // Only an admin.
    let (s, _) = call(
        &app,
        ALICE,
        Method::POST,
        &path("rewind"),
        Some(json!({"to_seq": 0})),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // Bad asks, named.
    let (s, v) = call(&app, ADMIN, Method::POST, &path("rewind"), Some(json!({}))).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let (s, v) = call(
        &app,
        ADMIN,
        Method::POST,
        &path("rewind"),
        Some(json!({"to_seq": 99})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("head is 6"),
        "{v}"
    );
    let (s, v) = call(
        &app,
        ADMIN,
        Method::POST,
        "/v1/events/destinations/http:nope/rewind",
        Some(json!({"to_seq": 1})),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");

    // Rewind to position 2: 3..=6 again, in order.
    let (s, v) = call(
        &app,
        ADMIN,
        Method::POST,
        &path("rewind"),
        Some(json!({"to_seq": 2})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"destination": DEST, "from_seq": 6, "to_seq": 2, "replays": 4})
    );
    let all = wait_got(&got, 10).await;
    assert_eq!(sorted(&all[6..]), vec![3, 4, 5, 6]);
    let ids = |v: &[Value]| {
        let mut ids: Vec<String> = v
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let mut again = first.clone();
    again.sort_by_key(|e| e["seq"].as_i64());
    assert_eq!(
        ids(&all[6..]),
        ids(&again[2..]),
        "the same event ids: consumers dedupe"
    );

    // Rewind to a time: from the first event at or after event 5's time.
    let (_, feed) = call(&app, ADMIN, Method::GET, "/v1/events?after=0", None).await;
    let t5 = feed["events"][4]["occurred_at"]
        .as_str()
        .unwrap()
        .to_string();
    let from = feed["events"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["occurred_at"].as_str().unwrap() >= t5.as_str())
        .unwrap() as i64;
    let (s, v) = call(
        &app,
        ADMIN,
        Method::POST,
        &path("rewind"),
        Some(json!({"to_time": t5})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["to_seq"], from);
    let n = 10 + (6 - from) as usize;
    let all = wait_got(&got, n).await;
    assert_eq!(sorted(&all[10..]), ((from + 1)..=6).collect::<Vec<_>>());

    // Redeliver one event, once.
    let id = first[1]["id"].as_str().unwrap();
    let (s, v) = call(
        &app,
        ADMIN,
        Method::POST,
        &path("redeliver"),
        Some(json!({"event_id": id})),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let all = wait_got(&got, n + 1).await;
    assert_eq!(all[n]["id"], id);
    let (s, _) = call(
        &app,
        ADMIN,
        Method::POST,
        &path("redeliver"),
        Some(json!({"event_id": "evt_nope"})),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Pause: a new event waits, shown as backlog, nothing failing.
    let (s, v) = call(&app, ADMIN, Method::POST, &path("pause"), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["paused_by"], "root");
    // A pusher reads its stored state at least every second (STATE_CHECK):
    // a pause holds from then on.
    tokio::time::sleep(finality_relay::pusher::STATE_CHECK + Duration::from_millis(200)).await;
    settle(&app, "pay_rp_late").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        got.lock().unwrap().len(),
        n + 1,
        "nothing sent while paused"
    );
    let (_, list) = call(&app, ALICE, Method::GET, "/v1/events/destinations", None).await;
    let d = &list["destinations"][0];
    assert_eq!(
        (d["name"].as_str(), d["backlog"].as_i64()),
        (Some(DEST), Some(1)),
        "{list}"
    );
    assert_eq!(d["attempts"], 0, "a pause is not a failure");
    assert_eq!(list["redeliveries"][0]["outcome"], "delivered");
    // A rewind only moves back: past what was delivered (a position, or a
    // time after every event) it would skip the backlog, and is refused.
    for (ask, field) in [
        (json!({"to_seq": 7}), "to_seq"),
        (json!({"to_time": "2099-01-01T00:00:00Z"}), "to_time"),
    ] {
        let (s, v) = call(&app, ADMIN, Method::POST, &path("rewind"), Some(ask)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(v["error"]["field"], field, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("after position 6 the destination has delivered"),
            "{v}"
        );
    }
    let (_, list) = call(&app, ALICE, Method::GET, "/v1/events/destinations", None).await;
    assert_eq!(
        list["destinations"][0]["backlog"], 1,
        "nothing skipped: {list}"
    );
    // Resume: it arrives.
    let (s, _) = call(&app, ADMIN, Method::POST, &path("resume"), None).await;
    assert_eq!(s, StatusCode::OK);
    let all = wait_got(&got, n + 2).await;
    assert_eq!(all[n + 1]["seq"], 7);
    assert_eq!(all[n + 1]["payment_id"], "pay_rp_late");

    // Every action, accepted or refused, in the audit trail.
    let actions = audit_actions(&app).await;
    let count = |a: &str| actions.iter().filter(|(x, _)| x == a).count();
    assert_eq!(count("events_rewind"), 6, "{actions:?}");
    assert_eq!(count("events_redeliver"), 2);
    assert_eq!(count("events_pause"), 1);
    assert_eq!(count("events_resume"), 1);
    assert!(actions
        .iter()
        .any(|(a, o)| a == "events_rewind" && o.contains("rewound from 6 to 2")));
    app.stop.cancel();
}

#[tokio::test]
async fn destinations_page_in_headless_chromium() {
    let (app, got) = spawn_pushing(Backend::Sqlite).await;
    for i in 0..3 {
        settle(&app, &format!("pay_cp{i}")).await;
    }
    let first = wait_got(&got, 3).await;
    let b = browser().await;
    let c = &b.client;
    browser_sign_in(c, &app, ADMIN).await;
    c.goto(&format!("{}/console/events", app.base))
        .await
        .unwrap();
    let row = "#dest-http-ledger";
    // The receiver has all three; the cursor's commit may trail it.
    wait_text(c, &format!("{row} .delivered"), "3").await;
    assert!(text(c, &format!("{row} .state")).await.starts_with("ok"));

    click(c, &format!("{row} button[name=pause]")).await;
    wait_url(c, "flash=paused").await;
    assert!(text(c, &format!("{row} .state"))
        .await
        .contains("paused by root"));
    shot(c, "events-paused").await;
    click(c, &format!("{row} button[name=resume]")).await;
    wait_url(c, "flash=resumed").await;
    assert!(text(c, &format!("{row} .state")).await.starts_with("ok"));

    type_in(c, &format!("{row} input[name=to_seq]"), "1").await;
    click(c, &format!("{row} button[name=rewind]")).await;
    wait_url(c, "flash=rewound").await;
    let all = wait_got(&got, 5).await;
    assert_eq!(sorted(&all[3..]), vec![2, 3]);

    let id = first[0]["id"].as_str().unwrap();
    type_in(c, &format!("{row} input[name=event_id]"), id).await;
    click(c, &format!("{row} button[name=redeliver]")).await;
    wait_url(c, "flash=redelivery").await;
    let all = wait_got(&got, 6).await;
    assert_eq!(all[5]["id"], id);
    c.refresh().await.unwrap();
    assert!(text(c, "#redeliveries").await.contains(id));

    // To a time before every event: all three again.
    type_in(
        c,
        &format!("{row} input[name=to_time]"),
        "2000-01-01T00:00:00Z",
    )
    .await;
    click(c, &format!("{row} button[name=rewind]")).await;
    wait_url(c, "flash=rewound").await;
    let all = wait_got(&got, 9).await;
    assert_eq!(sorted(&all[6..]), vec![1, 2, 3]);
    shot(c, "events").await;

    // A refused action shows the API's message.
    type_in(c, &format!("{row} input[name=to_seq]"), "42").await;
    click(c, &format!("{row} button[name=rewind]")).await;
    // The refusal is answered at the form's own address.
    wait_url(c, "/rewind").await;
    assert!(text(c, "main").await.contains("not in the feed"));

    // All of it audited, under the admin's name.
    c.goto(&format!("{}/console/audit", app.base))
        .await
        .unwrap();
    let audit = text(c, "#audit").await;
    for a in [
        "events_pause",
        "events_resume",
        "events_rewind",
        "events_redeliver",
    ] {
        assert!(audit.contains(a), "{a} missing from {audit}");
    }
    assert!(rows(c, "#audit tbody tr").await >= 5);

    // A reviewer sees the page, not the actions.
    let b2 = browser().await;
    let c2 = &b2.client;
    browser_sign_in(c2, &app, ALICE).await;
    c2.goto(&format!("{}/console/events", app.base))
        .await
        .unwrap();
    text(c2, row).await;
    assert_eq!(rows(c2, &format!("{row} button")).await, 0);
    app.stop.cancel();
}
