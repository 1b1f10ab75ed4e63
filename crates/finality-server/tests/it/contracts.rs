//! What the providers' published contracts say an adapter must do, end to
//! end over HTTP: each test here failed before the adapters were checked
//! against the providers' own material (see docs/PROVIDERS.md).

use super::providers::{adyen_app_with, adyen_notify, step, steps, stripe_app, STRIPE_WHSEC};
use super::webhooks::now_s;
use super::*;
use finality_providers::adyen::Capture;
use finality_providers::webhook::stripe::sign as stripe_sign;
use finality_store::InboxState;

/// Stripe's own example event (stripe-dotnet `EventUtilityTest.cs`,
/// `Resources/event_test_signature.json`): a `customer.created`.
const CUSTOMER_CREATED: &[u8] =
    include_bytes!("../../../finality-providers/testdata/stripe/customer.created.json");

/// A verified event about an object finality does not track is still a 2xx
/// (Stripe retries anything else for days, then disables the endpoint),
/// stored as `ignored` with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_verified_event_about_an_untracked_object_is_acknowledged_and_ignored() {
    let app = stripe_app(false, false).await;
    let sig = stripe_sign(STRIPE_WHSEC, now_s(), CUSTOMER_CREATED);
    let resp = app
        .http
        .post(format!("{}/webhooks/stripe", app.base))
        .header("stripe-signature", sig)
        .body(CUSTOMER_CREATED)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let ev = app
        .db
        .store
        .inbox_get("stripe", "evt_123")
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(ev.state, InboxState::Ignored);
    let reason = ev.reason.unwrap_or_default();
    assert!(reason.contains("customer.created"), "{reason}");
    // Only an unverifiable request is refused.
    let forged = stripe_sign("whsec_not_the_endpoint_secret", now_s(), CUSTOMER_CREATED);
    let resp = app
        .http
        .post(format!("{}/webhooks/stripe", app.base))
        .header("stripe-signature", forged)
        .body(CUSTOMER_CREATED)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

/// A payout id is a payout: registering it as a payment is refused with a
/// message naming the field, instead of a week of polls at the wrong
/// endpoint; the same id as a payout is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_id_prefix_must_fit_the_kind() {
    let app = stripe_app(false, false).await;
    let body = json!({"id": "po_as_payment", "provider": "stripe", "provider_ref": "po_1OaFDbEcg9tTZuTg",
                      "amount": 1999, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "provider_ref", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("payout"),
        "{v}"
    );
    let body = json!({"id": "ch_as_payment", "provider": "stripe", "provider_ref": "ch_3MmlLrLkdIwHu7ix0snN0B15",
                      "amount": 1999, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let body = json!({"id": "po_ok", "provider": "stripe", "provider_ref": "po_1OaFDbEcg9tTZuTg",
                      "kind": "payout", "amount": 1999, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

/// A chargeback reverses a succeeded payment; its reversal (the merchant
/// defended it, "This stage is not final", Adyen) is kept for review,
/// never dropped and never applied by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adyen_chargeback_reverses_and_its_reversal_is_kept_for_review() {
    let app = adyen_app_with(Duration::from_secs(3600), 10, Capture::Manual).await;
    app.register_at("adyen", "ady_late", "PSP0000000000091")
        .await;
    adyen_notify(&app, "PSP0000000000091", "", "AUTHORISATION", true).await;
    app.wait_for_status("ady_late", "processing").await;
    adyen_notify(
        &app,
        "PSP00000000000C9",
        "PSP0000000000091",
        "CAPTURE",
        true,
    )
    .await;
    app.wait_for_status("ady_late", "succeeded").await;
    adyen_notify(
        &app,
        "PSP00000000000D9",
        "PSP0000000000091",
        "CHARGEBACK",
        true,
    )
    .await;
    let v = app.wait_for_status("ady_late", "reversed").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "webhook"),
            step("processing", "succeeded", "webhook"),
            step("succeeded", "reversed", "webhook"),
        ],
        "{v}"
    );
    // The provider's own words are in the history.
    assert_eq!(
        v["history"][2]["reason"], "provider: CHARGEBACK:true",
        "{v}"
    );
    adyen_notify(
        &app,
        "PSP00000000000B9",
        "PSP0000000000091",
        "CHARGEBACK_REVERSED",
        true,
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let ev = loop {
        let ev = app
            .db
            .store
            .inbox_get("adyen", "PSP00000000000B9:CHARGEBACK_REVERSED:true")
            .await
            .unwrap()
            .expect("stored");
        if ev.state != InboxState::Received || std::time::Instant::now() > deadline {
            break ev;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(ev.state, InboxState::Review);
    let (_, v) = app.get("/v1/payments/ady_late").await;
    assert_eq!(v["status"], "reversed", "{v}");
}

fn stripe_refund_event(id: &str, refund: &str, status: &str) -> Vec<u8> {
    // The refund object as Stripe publishes it (stripe/openapi fixtures3.json).
    let mut object: Value = serde_json::from_slice(include_bytes!(
        "../../../finality-providers/testdata/stripe/refund.json"
    ))
    .unwrap();
    object["id"] = json!(refund);
    object["status"] = json!(status);
    object["payment_intent"] = json!("pi_3LateFailPaid");
    // Stripe publishes refund.created, refund.updated and refund.failed.
    let kind = if status == "failed" {
        "refund.failed"
    } else {
        "refund.updated"
    };
    json!({"id": id, "object": "event", "type": kind, "created": now_s(),
           "data": {"object": object}})
    .to_string()
    .into_bytes()
}

async fn post_stripe(app: &TestApp, body: &[u8]) -> StatusCode {
    app.http
        .post(format!("{}/webhooks/stripe", app.base))
        .header("stripe-signature", stripe_sign(STRIPE_WHSEC, now_s(), body))
        .body(body.to_vec())
        .send()
        .await
        .unwrap()
        .status()
}

/// Stripe refunds can fail after they succeeded ("After the refund fails,
/// this balance transaction describes the adjustment made on your account
/// balance that reverses the initial balance transaction"): the refund is
/// `reversed` (the money is back with the merchant), and its
/// PaymentIntent, which a full refund may have reversed, gets a review row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_refund_failing_after_success_is_reversed() {
    let app = stripe_app(false, false).await;
    // The amount of Stripe's published refund object.
    let body = json!({"id": "refund_late", "provider": "stripe", "provider_ref": "re_3LateFail",
                      "kind": "refund", "amount": 100, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let ok = stripe_refund_event("evt_refund_ok", "re_3LateFail", "succeeded");
    assert_eq!(post_stripe(&app, &ok).await, StatusCode::OK);
    app.wait_for_status("refund_late", "succeeded").await;
    let failed = stripe_refund_event("evt_refund_failed", "re_3LateFail", "failed");
    assert_eq!(post_stripe(&app, &failed).await, StatusCode::OK);
    let v = app.wait_for_status("refund_late", "reversed").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "succeeded", "webhook"),
            step("succeeded", "reversed", "webhook"),
        ],
        "{v}"
    );
    assert!(
        v["history"][1]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("refund.failed"),
        "{v}"
    );
    // The PaymentIntent it refunded gets its own review row: if a
    // charge.refunded made it reversed, the money is back.
    let pi_row = app
        .db
        .store
        .inbox_get("stripe", "evt_refund_failed:payment_intent")
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(pi_row.state, InboxState::Review);
    assert_eq!(pi_row.provider_ref.as_deref(), Some("pi_3LateFailPaid"));
}
