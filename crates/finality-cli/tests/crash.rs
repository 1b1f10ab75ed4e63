//! Kill the server between the inbox insert and the apply (a fault point
//! aborts the process as kill -9 would): after a restart the event is
//! applied exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "crash-test-token-0123456789";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

use finality_testkit::free_port;

fn serve(config: &std::path::Path, fault: Option<&str>) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_finality"));
    cmd.args(["--config", config.to_str().unwrap(), "serve"])
        .env("FINALITY_API_TOKEN", TOKEN)
        .env("CRASH_TEST_WHSEC", SECRET)
        .env_remove("FINALITY_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(f) = fault {
        cmd.env("FINALITY_FAULT_POINT", f);
    }
    cmd.spawn().unwrap()
}

/// Wait (at most 30 s) for a process that should abort at its fault point.
/// One still running means the fault point never fired (the binary was
/// built without the `fault-points` feature): it is killed and the test
/// fails saying so, rather than hanging.
async fn wait_aborted(mut child: Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not abort at its fault point within 30 s (fault points compiled out?)");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_healthy(http: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn crash_between_inbox_insert_and_apply_applies_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[server]
listen = "127.0.0.1:{port}"
[database]
url = "sqlite://{db}"
[providers.sim]
adapter = "sim"
base_url = "http://127.0.0.1:9"        # nothing listens: polls fail, webhooks decide
webhook_secret_envs = ["CRASH_TEST_WHSEC"]
schedule = {{ kind = "fixed", delays = ["1h"] }}
"#,
            db = dir.path().join("f.db").display()
        ),
    )
    .unwrap();
    let http = reqwest::Client::new();

    let first = serve(&config, Some("after_inbox_insert"));
    wait_healthy(&http, &base).await;
    let reg = http
        .post(format!("{base}/v1/payments"))
        .bearer_auth(TOKEN)
        .json(&json!({"id": "pay_crash", "provider": "sim", "provider_ref": "sim_crash", "amount": 700, "currency": "EUR"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reg.status(), 201);

    let body =
        json!({"type": "payment.updated", "data": {"id": "sim_crash", "status": "succeeded"}})
            .to_string();
    let ts = chrono::Utc::now().timestamp();
    let sig = standardwebhooks::Webhook::new(SECRET)
        .unwrap()
        .sign("msg_crash", ts, body.as_bytes())
        .unwrap();
    let send = || {
        http.post(format!("{base}/webhooks/sim"))
            .header("webhook-id", "msg_crash")
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig.clone())
            .body(body.clone())
            .send()
    };
    let sent = send().await;
    let status = wait_aborted(first).await;
    assert!(sent.is_err(), "the process dies before it can answer");
    assert!(!status.success(), "aborted at the fault point");

    let mut second = serve(&config, None);
    wait_healthy(&http, &base).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let v: Value = loop {
        let v: Value = http
            .get(format!("{base}/v1/payments/pay_crash"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["status"] == "succeeded" {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "the stored webhook was never applied: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(v["status_source"], "webhook");
    assert_eq!(v["history"].as_array().unwrap().len(), 1);
    // The provider retries (it never got its 2xx): a duplicate, acknowledged.
    let again: Value = send().await.unwrap().json().await.unwrap();
    assert_eq!(again, json!({"received": 0, "duplicates": 1}));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let v: Value = http
        .get(format!("{base}/v1/payments/pay_crash"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["history"].as_array().unwrap().len(),
        1,
        "applied exactly once"
    );
    second.kill().unwrap();
    let _ = second.wait();
}

/// Counts verified deliveries by `webhook-id`.
#[derive(Default)]
struct Receiver {
    got: std::sync::Mutex<Vec<String>>,
}

async fn receive(
    axum::extract::State(r): axum::extract::State<std::sync::Arc<Receiver>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::http::StatusCode {
    if standardwebhooks::Webhook::new(SECRET)
        .unwrap()
        .verify(&body, &headers)
        .is_err()
    {
        return axum::http::StatusCode::UNAUTHORIZED;
    }
    let id = headers["webhook-id"].to_str().unwrap().to_string();
    r.got.lock().unwrap().push(id);
    axum::http::StatusCode::OK
}

#[tokio::test]
async fn crash_between_delivery_and_recording_redelivers_once() {
    let receiver = std::sync::Arc::new(Receiver::default());
    let app = axum::Router::new()
        .route("/events", axum::routing::post(receive))
        .with_state(receiver.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/events", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[server]
listen = "127.0.0.1:{port}"
[database]
url = "sqlite://{db}"
[providers.sim]
adapter = "sim"
base_url = "http://127.0.0.1:9"
schedule = {{ kind = "fixed", delays = ["1h"] }}
[[events.http]]
name = "recv"
url = "{hook}"
secret_env = "CRASH_TEST_WHSEC"
"#,
            db = dir.path().join("f.db").display()
        ),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let first = serve(&config, Some("after_event_delivery"));
    wait_healthy(&http, &base).await;
    let reg = http
        .post(format!("{base}/v1/payments"))
        .bearer_auth(TOKEN)
        .json(&json!({"id": "pay_ev", "provider": "sim", "provider_ref": "sim_ev", "amount": 700, "currency": "EUR"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reg.status(), 201);
    let resolved = http
        .post(format!("{base}/v1/payments/pay_ev/resolve"))
        .bearer_auth(TOKEN)
        .json(&json!({"status": "succeeded", "reason": "bank statement", "actor": "test"}))
        .send()
        .await;
    // The resolve commits before it answers, and the pusher may deliver its
    // event and abort the process (the fault point) before the answer is
    // written, on a loaded machine: then the connection closes unanswered
    // and the delivery below is what shows the resolve was committed.
    match resolved {
        Ok(r) => assert_eq!(r.status(), 200),
        Err(e) => assert!(e.is_request() && !e.is_timeout(), "{e}"),
    }
    // The pusher delivers, then dies before recording the success.
    let status = wait_aborted(first).await;
    assert!(!status.success(), "aborted at the fault point");
    let got = receiver.got.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "delivered once before the crash");

    let mut second = serve(&config, None);
    let deadline = Instant::now() + Duration::from_secs(30);
    while receiver.got.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "never redelivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let got = receiver.got.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "exactly one redelivery: {got:?}");
    assert_eq!(got[0], got[1], "the same event id both times");
    second.kill().unwrap();
    let _ = second.wait();
}
