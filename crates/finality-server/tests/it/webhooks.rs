//! Webhooks in, over real HTTP, on both backends. Signatures are made by the
//! Standard Webhooks reference implementation (the `standardwebhooks` crate).

use super::*;
use finality_store::InboxState;

finality_testkit::on_both_backends!(
    five_hundred_identical_webhooks_apply_once,
    late_processing_after_succeeded_is_ignored,
    webhook_before_registration_is_applied_on_registration,
    bad_signatures_are_rejected_and_store_nothing,
    signed_but_unparseable_is_kept_as_failed,
);

const HOUR: Duration = Duration::from_secs(3600);

pub(crate) fn now_s() -> i64 {
    SystemClock.now().millis() / 1000
}

/// A signed webhook request: (headers, body).
/// Header name/value pairs of one request.
type Headers = Vec<(&'static str, String)>;

pub(crate) fn signed(
    secret: &str,
    id: &str,
    ts: i64,
    provider_ref: &str,
    status: &str,
) -> (Vec<(&'static str, String)>, String) {
    let body = json!({"type": "payment.updated", "data": {"id": provider_ref, "status": status}})
        .to_string();
    let sig = standardwebhooks::Webhook::new(secret)
        .unwrap()
        .sign(id, ts, body.as_bytes())
        .unwrap();
    (
        vec![
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", sig),
        ],
        body,
    )
}

impl TestApp {
    pub(crate) async fn webhook(
        &self,
        headers: &[(&'static str, String)],
        body: &str,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .post(format!("{}/webhooks/sim", self.base))
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.unwrap();
        let s = resp.status();
        (s, resp.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn register(&self, id: &str) -> String {
        let body = self.payment(id);
        let (s, v) = self.post("/v1/payments", body.clone()).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        body["provider_ref"].as_str().unwrap().to_string()
    }
}

async fn five_hundred_identical_webhooks_apply_once(b: Backend) {
    let app = spawn_app_with(b, HOUR, false).await;
    let r = app.register("pay_dup").await;
    let (headers, body) = signed(WEBHOOK_SECRET, "msg_dup", now_s(), &r, "succeeded");
    let app = Arc::new(app);
    let sends = (0..500).map(|_| {
        let (app, headers, body) = (app.clone(), headers.clone(), body.clone());
        tokio::spawn(async move { app.webhook(&headers, &body).await })
    });
    let results = futures::future::join_all(sends).await;
    let mut received = 0;
    for r in results {
        let (s, v) = r.unwrap();
        assert_eq!(s, StatusCode::OK, "every duplicate gets 2xx: {v}");
        received += v["received"].as_u64().unwrap();
    }
    assert_eq!(received, 1, "exactly one insert was new");
    let v = app.wait_for_status("pay_dup", "succeeded").await;
    assert_eq!(v["status_source"], "webhook");
    assert_eq!(v["history"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["history"][0]["event_id"], "msg_dup");
    assert!(
        v["poll"].is_null(),
        "the settling webhook removed the poll job"
    );
    let events = app.db.store.events_after(0, 10_000).await.unwrap();
    assert_eq!(
        events.iter().filter(|e| e.payment_id == "pay_dup").count(),
        1
    );
    let ev = app
        .db
        .store
        .inbox_get("sim", "msg_dup")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.state, InboxState::Applied);

    let metrics = app.metrics().await;
    for name in [
        "finality_webhooks_received_total",
        "finality_webhooks_duplicates_total",
        "finality_webhook_ack_seconds_bucket",
        "finality_webhooks_applied_total",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }
}

async fn late_processing_after_succeeded_is_ignored(b: Backend) {
    let app = spawn_app_with(b, HOUR, false).await;
    let r = app.register("pay_ooo").await;
    let (h, body) = signed(WEBHOOK_SECRET, "msg_s", now_s(), &r, "succeeded");
    assert_eq!(app.webhook(&h, &body).await.0, StatusCode::OK);
    app.wait_for_status("pay_ooo", "succeeded").await;
    let (h, body) = signed(WEBHOOK_SECRET, "msg_p", now_s(), &r, "processing");
    assert_eq!(app.webhook(&h, &body).await.0, StatusCode::OK);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let late = loop {
        let ev = app
            .db
            .store
            .inbox_get("sim", "msg_p")
            .await
            .unwrap()
            .unwrap();
        if ev.state != InboxState::Received {
            break ev;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(late.state, InboxState::Ignored);
    let reason = late.reason.unwrap();
    assert!(
        reason.contains("already_final") && reason.contains("succeeded"),
        "{reason}"
    );
    let (_, v) = app.get("/v1/payments/pay_ooo").await;
    assert_eq!(v["status"], "succeeded");
    assert_eq!(v["history"].as_array().unwrap().len(), 1);
}

async fn webhook_before_registration_is_applied_on_registration(b: Backend) {
    let app = spawn_app_with(b, HOUR, false).await;
    let body = app.payment("pay_early");
    let r = body["provider_ref"].as_str().unwrap().to_string();
    let (h, wb) = signed(WEBHOOK_SECRET, "msg_early", now_s(), &r, "succeeded");
    let (s, v) = app.webhook(&h, &wb).await;
    assert_eq!((s, v["received"].clone()), (StatusCode::OK, json!(1)));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while app
        .db
        .store
        .inbox_get("sim", "msg_early")
        .await
        .unwrap()
        .unwrap()
        .state
        != InboxState::Orphaned
    {
        assert!(std::time::Instant::now() < deadline, "not orphaned");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (s, _) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED);
    let v = app.wait_for_status("pay_early", "succeeded").await;
    assert_eq!(v["status_source"], "webhook");
}

async fn bad_signatures_are_rejected_and_store_nothing(b: Backend) {
    let app = spawn_app_with(b, HOUR, false).await;
    let r = app.register("pay_sig").await;
    let now = now_s();
    let (good_h, good_body) = signed(WEBHOOK_SECRET, "msg_x", now, &r, "succeeded");
    let mut changed = good_body.clone().into_bytes();
    changed[5] ^= 1;
    let changed = String::from_utf8(changed).unwrap();
    let wrong = signed(
        "whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA==",
        "msg_x",
        now,
        &r,
        "succeeded",
    );
    let stale = signed(WEBHOOK_SECRET, "msg_x", now - 400, &r, "succeeded");
    let future = signed(WEBHOOK_SECRET, "msg_x", now + 400, &r, "succeeded");
    let missing: Vec<_> = good_h
        .iter()
        .filter(|(k, _)| *k != "webhook-signature")
        .cloned()
        .collect();
    let cases: Vec<(&str, Headers, String)> = vec![
        ("changed byte", good_h.clone(), changed),
        ("wrong secret", wrong.0, wrong.1),
        ("stale timestamp", stale.0, stale.1),
        ("future timestamp", future.0, future.1),
        ("missing header", missing, good_body.clone()),
    ];
    for (what, h, body) in cases {
        let (s, v) = app.webhook(&h, &body).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{what}: {v}");
        assert_eq!(v["error"]["code"], "invalid_signature");
        assert!(
            app.db
                .store
                .inbox_get("sim", "msg_x")
                .await
                .unwrap()
                .is_none(),
            "{what} stored something"
        );
    }
    // The rejected requests named a tracked payment: its next poll moved to
    // "now" (the time of the last of them), off the schedule's +1 s.
    let after = SystemClock.now().millis();
    let (_, v) = app.get("/v1/payments/pay_sig").await;
    let ms = |k: &Value| {
        chrono::DateTime::parse_from_rfc3339(k.as_str().unwrap())
            .unwrap()
            .timestamp_millis()
    };
    let (next, created) = (ms(&v["poll"]["next_poll_at"]), ms(&v["created_at"]));
    assert!(
        next != created + 1_000 && next <= after,
        "first poll was due at +1 s; the nudge made it due now"
    );
    assert_eq!(
        v["status"], "pending",
        "an unverified webhook never applies anything"
    );
    let metrics = app.metrics().await;
    assert!(metrics.contains("reason=\"bad_signature\""), "{metrics}");
    assert!(metrics.contains("reason=\"stale_timestamp\""));
    // Unknown provider, too large.
    let resp = app
        .http
        .post(format!("{}/webhooks/nope", app.base))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(post_oversized(&app.base, "/webhooks/sim").await, 413);
    // The good one still works.
    assert_eq!(app.webhook(&good_h, &good_body).await.0, StatusCode::OK);
    app.wait_for_status("pay_sig", "succeeded").await;
}

async fn signed_but_unparseable_is_kept_as_failed(b: Backend) {
    let app = spawn_app_with(b, HOUR, false).await;
    let body = "{\"not\": \"what we expect\"}";
    let sig = standardwebhooks::Webhook::new(WEBHOOK_SECRET)
        .unwrap()
        .sign("msg_bad", now_s(), body.as_bytes())
        .unwrap();
    let h = vec![
        ("webhook-id", "msg_bad".to_string()),
        ("webhook-timestamp", now_s().to_string()),
        ("webhook-signature", sig),
    ];
    let (s, v) = app.webhook(&h, body).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let ev = app
        .db
        .store
        .inbox_get("sim", "msg_bad")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.state, InboxState::Failed);
    assert!(ev.reason.unwrap().starts_with("unparseable"));
}
