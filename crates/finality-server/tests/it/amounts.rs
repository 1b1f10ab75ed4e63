//! Money counted in the provider's own pieces, through the HTTP API on
//! every backend: captures, refunds, attempts and chargebacks are summed by
//! their ids (`amounts` on the payment's resource), and the status follows
//! what moved: a partial capture whose remainder expired is `succeeded`
//! for the captured amount; a refused attempt under a merchant reference
//! is not the payment's end; a PayPal order with a completed capture
//! beside a declined one took money; Adyen's CANCEL_OR_REFUND without the
//! action reverses a captured payment; a refund named twice counts once.

use super::providers::{
    adyen_app_on, adyen_key, paypal_app_on, stripe_app_on, PAYPAL_WEBHOOK_ID, STRIPE_KEY,
    STRIPE_WHSEC,
};
use super::webhooks::now_s;
use super::*;
use finality_providers::adyen::Capture;
use finality_providers::paypal::PaymentObject;
use finality_sim::wire::{adyen_item, AdyenItem, Money};

finality_testkit::on_both_backends!(
    an_adyen_partial_capture_then_expire_is_succeeded_for_what_was_captured,
    a_refused_adyen_attempt_then_an_authorised_one_under_one_reference_is_succeeded,
    adyen_cancel_or_refund_without_its_action_reverses_a_captured_payment,
    a_paypal_order_with_a_completed_and_a_declined_capture_is_not_failed,
    a_stripe_refund_named_by_two_events_counts_once,
    a_capture_failure_beside_a_succeeded_payment_is_a_flag_the_recapture_closes,
    more_returned_than_captured_or_another_currency_is_decided_by_a_person,
    a_capture_after_the_expiry_it_should_have_preceded_is_a_flag,
);

/// One signed Adyen item posted as its own notification, with `after`
/// setting what is not in the signed string (`modification.action`,
/// `reason`, `eventDate`).
async fn post_adyen(app: &TestApp, item: AdyenItem<'_>, after: impl FnOnce(&mut Value)) {
    let mut item = adyen_item(&adyen_key(), "FinalitySimulator", item);
    after(&mut item);
    let body = json!({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]});
    let resp = app
        .http
        .post(format!("{}/webhooks/adyen", app.base))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), "[accepted]");
}

async fn adyen(app: &TestApp, item: AdyenItem<'_>, action: Option<&str>) {
    post_adyen(app, item, |i| {
        if let Some(a) = action {
            i["additionalData"]["modification.action"] = json!(a);
        }
    })
    .await;
}

async fn adyen_with(app: &TestApp, item: AdyenItem<'_>, reason: &str, date: &str) {
    post_adyen(app, item, |i| {
        i["reason"] = json!(reason);
        i["eventDate"] = json!(date);
    })
    .await;
}

fn item<'a>(
    psp: &'a str,
    original: &'a str,
    code: &'a str,
    success: bool,
    amount: i64,
) -> AdyenItem<'a> {
    AdyenItem {
        psp,
        original,
        merchant_ref: "order-amounts-1",
        code,
        success,
        money: Money {
            amount,
            currency: "EUR",
        },
    }
}

/// Waits until the inbox has decided `event_id` (whatever it decided).
async fn processed(app: &TestApp, provider: &str, event_id: &str) -> finality_store::InboxEvent {
    for _ in 0..400 {
        let row = app.db.store.inbox_get(provider, event_id).await.unwrap();
        if let Some(r) = row.filter(|r| {
            !matches!(
                r.state,
                finality_store::InboxState::Received | finality_store::InboxState::Failed
            )
        }) {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{provider} {event_id} never processed");
}

async fn register(app: &TestApp, body: Value) {
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

/// Waits until the payment's `amounts.captured` is `want`.
async fn wait_captured(app: &TestApp, id: &str, want: i64) -> Value {
    for _ in 0..200 {
        let (_, v) = app.get(&format!("/v1/payments/{id}")).await;
        if v["amounts"]["captured"] == want {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (_, v) = app.get(&format!("/v1/payments/{id}")).await;
    panic!("captured never {want}: {v}");
}

/// The payment's events in the pull feed, once `done` holds for them,
/// each checked against the published JSON Schema (`docs/event.schema.json`).
async fn events_of(app: &TestApp, id: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/event.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut evs = Vec::new();
    for _ in 0..400 {
        let (s, v) = app.get("/v1/events?limit=1000").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        evs = v["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["payment_id"] == id)
            .cloned()
            .collect();
        if done(&evs) {
            for e in &evs {
                let errors: Vec<String> = validator.iter_errors(e).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{e}: {errors:?}");
            }
            return evs;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{id}'s events never as expected: {evs:#?}");
}

/// The types of `evs`, in feed order.
fn types(evs: &[Value]) -> Vec<&str> {
    evs.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Adyen's partial capture (Adyen, Capture: "You can capture the full
/// authorised amount or a partial amount"), 5.00 of 11.30, then EXPIRE
/// ("The remaining uncaptured amount expired", W): succeeded for 500.
async fn an_adyen_partial_capture_then_expire_is_succeeded_for_what_was_captured(b: Backend) {
    let app = adyen_app_on(b, Duration::from_secs(3600), 10, Capture::Manual).await;
    register(
        &app,
        json!({"id": "pay_partial", "provider": "adyen", "provider_ref": "7914073381342284",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    adyen(
        &app,
        item("7914073381342284", "", "AUTHORISATION", true, 1130),
        None,
    )
    .await;
    app.wait_for_status("pay_partial", "processing").await;
    adyen(
        &app,
        item("8825408195409505", "7914073381342284", "CAPTURE", true, 500),
        None,
    )
    .await;
    let v = app.wait_for_status("pay_partial", "succeeded").await;
    let last = &v["history"][1];
    assert!(
        last["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("counted: captured 500 of 1130 EUR"),
        "{v}"
    );
    adyen(
        &app,
        item("7914073381342284", "", "EXPIRE", true, 630),
        None,
    )
    .await;
    let ev = processed(&app, "adyen", "7914073381342284:EXPIRE:true").await;
    let (_, v) = app.get("/v1/payments/pay_partial").await;
    assert_eq!(v["status"], "succeeded", "{v} {ev:?}");
    assert_eq!(v["amounts"]["authorised"], 1130, "{v}");
    assert_eq!(v["amounts"]["captured"], 500, "{v}");
    assert_eq!(v["amounts"]["currency"], "EUR", "{v}");
    let pieces = v["amounts"]["pieces"].as_array().unwrap();
    assert_eq!(pieces.len(), 2, "{v}");
    // The status events carry the counters after each transition; the
    // expiry moved no counter, so it is no event.
    let evs = events_of(&app, "pay_partial", |e| e.len() >= 2).await;
    assert_eq!(
        types(&evs),
        ["payment.processing", "payment.succeeded"],
        "{evs:#?}"
    );
    assert_eq!(
        evs[0]["amounts"],
        json!({"currency": "EUR", "authorised": 1130, "captured": 0, "refunded": 0,
               "disputed": 0, "dispute_reversed": 0}),
        "{evs:#?}"
    );
    assert_eq!(evs[1]["amounts"]["captured"], 500, "{evs:#?}");
    assert_eq!(evs[1]["amounts"]["authorised"], 1130, "{evs:#?}");
    assert_eq!(evs[1]["schema"], 3, "{evs:#?}");
    assert!(
        pieces.contains(&json!({"kind": "capture", "id": "8825408195409505",
        "state": "succeeded", "amount": 500, "currency": "EUR"})),
        "{v}"
    );
}

/// A shopper's first card is refused, the second authorised, under one
/// merchant reference (each attempt its own pspReference): the payment
/// registered by that reference ends succeeded, with both attempts listed.
async fn a_refused_adyen_attempt_then_an_authorised_one_under_one_reference_is_succeeded(
    b: Backend,
) {
    let app = adyen_app_on(b, Duration::from_secs(3600), 10, Capture::Automatic).await;
    register(
        &app,
        json!({"id": "pay_retry", "provider": "adyen", "merchant_ref": "order-amounts-1",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    adyen(
        &app,
        item("8535296650153317", "", "AUTHORISATION", false, 1130),
        None,
    )
    .await;
    let ev = processed(&app, "adyen", "8535296650153317:AUTHORISATION:false").await;
    let why = ev.reason.clone().unwrap_or_default();
    assert!(why.contains("stays open for the shopper's retry"), "{ev:?}");
    let (_, v) = app.get("/v1/payments/pay_retry").await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(
        v["provider_ref"],
        Value::Null,
        "the refused attempt is not adopted: {v}"
    );
    adyen(
        &app,
        item("8835296650153328", "", "AUTHORISATION", true, 1130),
        None,
    )
    .await;
    let v = app.wait_for_status("pay_retry", "succeeded").await;
    assert_eq!(v["provider_ref"], "8835296650153328", "{v}");
    assert_eq!(v["amounts"]["authorised"], 1130, "{v}");
    assert_eq!(v["amounts"]["captured"], 1130, "{v}");
    let failed: Vec<&Value> = v["amounts"]["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["state"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{v}");
    assert_eq!(failed[0]["id"], "8535296650153317", "{v}");
}

/// CANCEL_OR_REFUND without `modification.action`: either way the merchant
/// no longer holds the money ("The reversed amount is always the full
/// payment amount", Checkout API /reversals); a captured payment is
/// reversed, not left succeeded.
async fn adyen_cancel_or_refund_without_its_action_reverses_a_captured_payment(b: Backend) {
    let app = adyen_app_on(b, Duration::from_secs(3600), 10, Capture::Automatic).await;
    register(
        &app,
        json!({"id": "pay_cor", "provider": "adyen", "provider_ref": "9913140798220028",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    adyen(
        &app,
        item("9913140798220028", "", "AUTHORISATION", true, 1130),
        None,
    )
    .await;
    app.wait_for_status("pay_cor", "succeeded").await;
    adyen(
        &app,
        item(
            "8412534564722331",
            "9913140798220028",
            "CANCEL_OR_REFUND",
            true,
            1130,
        ),
        None,
    )
    .await;
    let v = app.wait_for_status("pay_cor", "reversed").await;
    assert_eq!(v["amounts"]["refunded"], 1130, "{v}");
    assert_eq!(v["amounts"]["captured"], 1130, "{v}");
}

/// PayPal's order with two captures, one `COMPLETED` ("The funds for this
/// captured payment were credited to the payee's PayPal account") and one
/// `DECLINED` ("The funds could not be captured"): money was captured, so
/// it is succeeded, not failed.
async fn a_paypal_order_with_a_completed_and_a_declined_capture_is_not_failed(b: Backend) {
    let app = paypal_app_on(b, false, None, PaymentObject::Orders, 60).await;
    register(
        &app,
        json!({"id": "pay_pp2", "provider": "paypal", "provider_ref": "5O190127TN364715T",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    let capture = |id: &str, status: &str| json!({"id": id, "status": status, "amount": {"currency_code": "EUR", "value": "11.30"}});
    let order = json!({"id": "5O190127TN364715T", "status": "COMPLETED", "intent": "CAPTURE",
        "purchase_units": [{"amount": {"currency_code": "EUR", "value": "11.30"},
            "payments": {"captures": [capture("3C679366HH908993F", "DECLINED"),
                                      capture("8MC585209K746392H", "COMPLETED")]}}]});
    let time = SystemClock.now().to_rfc3339();
    let (event, headers) = finality_sim::wire::paypal_event_of(
        "WH-2CAP",
        "CHECKOUT.ORDER.COMPLETED",
        &order,
        PAYPAL_WEBHOOK_ID,
        &time,
    );
    let mut req = app
        .http
        .post(format!("{}/webhooks/paypal", app.base))
        .body(event);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v = app.wait_for_status("pay_pp2", "succeeded").await;
    assert_eq!(v["amounts"]["captured"], 1130, "{v}");
    assert_eq!(v["amounts"]["pieces"].as_array().unwrap().len(), 2, "{v}");
    // The declined capture's own event later changes nothing.
    let (event, headers) = finality_sim::wire::paypal_event_of(
        "WH-2CAP-D",
        "PAYMENT.CAPTURE.DENIED",
        &json!({"id": "3C679366HH908993F", "status": "DECLINED",
                "amount": {"currency_code": "EUR", "value": "11.30"},
                "supplementary_data": {"related_ids": {"order_id": "5O190127TN364715T"}}}),
        PAYPAL_WEBHOOK_ID,
        &time,
    );
    let mut req = app
        .http
        .post(format!("{}/webhooks/paypal", app.base))
        .body(event);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    assert_eq!(req.send().await.unwrap().status(), StatusCode::OK);
    processed(&app, "paypal", "WH-2CAP-D").await;
    let (_, v) = app.get("/v1/payments/pay_pp2").await;
    assert_eq!(v["status"], "succeeded", "{v}");
    assert_eq!(v["amounts"]["captured"], 1130, "{v}");
}

/// Stripe's `charge.refunded` lists the charge's refunds (`refunds.data[]`
/// where the API version expands them): a second event naming the first
/// refund again beside a new one counts the first once. 4.00 then 3.00 of
/// 10.00 refunded is 7.00, the payment still succeeded.
async fn a_stripe_refund_named_by_two_events_counts_once(b: Backend) {
    let app = stripe_app_on(b, false, false, STRIPE_KEY, 60).await;
    register(
        &app,
        json!({"id": "pay_refunds", "provider": "stripe", "provider_ref": "pi_3Refunds1",
               "amount": 1000, "currency": "EUR"}),
    )
    .await;
    let refund = |id: &str, amount: i64| {
        json!({"id": id, "object": "refund", "amount": amount, "currency": "eur",
               "status": "succeeded", "charge": "ch_3Refunds1"})
    };
    let post = |event: &str, refunds: Vec<Value>, total: i64| {
        let body = json!({"id": event, "object": "event", "type": "charge.refunded",
            "created": now_s(), "data": {"object": {
                "id": "ch_3Refunds1", "object": "charge", "amount": 1000,
                "amount_captured": 1000, "amount_refunded": total, "currency": "eur",
                "captured": true, "refunded": total == 1000, "status": "succeeded",
                "payment_intent": "pi_3Refunds1",
                "refunds": {"object": "list", "data": refunds}}}})
        .to_string();
        let sig = finality_providers::webhook::stripe::sign(STRIPE_WHSEC, now_s(), body.as_bytes());
        let req = app
            .http
            .post(format!("{}/webhooks/stripe", app.base))
            .header("stripe-signature", sig)
            .body(body);
        async move {
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
        }
    };
    // The payment succeeds first (its PaymentIntent event).
    let (s, v) = app
        .post(
            "/v1/payments/pay_refunds/resolve",
            json!({"status": "succeeded", "reason": "test: paid", "actor": "ana"}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    post("evt_refund_1", vec![refund("re_1", 400)], 400).await;
    wait_captured(&app, "pay_refunds", 1000).await;
    post(
        "evt_refund_2",
        vec![refund("re_2", 300), refund("re_1", 400)],
        700,
    )
    .await;
    processed(&app, "stripe", "evt_refund_2").await;
    // The same refund named again by a third event: still counted once.
    post("evt_refund_3", vec![refund("re_1", 400)], 700).await;
    processed(&app, "stripe", "evt_refund_3").await;
    let (_, v) = app.get("/v1/payments/pay_refunds").await;
    assert_eq!(v["amounts"]["refunded"], 700, "{v}");
    assert_eq!(v["amounts"]["captured"], 1000, "{v}");
    assert_eq!(v["status"], "succeeded", "{v}");
    // A ledger hears of each partial refund without a GET: the status
    // stayed, so each is a `payment.amounts` event with the counters
    // after it; the third event moved nothing and is none.
    let evs = events_of(&app, "pay_refunds", |e| e.len() >= 3).await;
    assert_eq!(
        types(&evs),
        ["payment.succeeded", "payment.amounts", "payment.amounts"],
        "{evs:#?}"
    );
    assert_eq!(
        evs[0]["amounts"],
        Value::Null,
        "nothing counted yet: {evs:#?}"
    );
    for (e, refunded) in evs[1..].iter().zip([400, 700]) {
        assert_eq!(e["status"], "succeeded", "{e}");
        assert_eq!(e["previous_status"], "succeeded", "{e}");
        assert_eq!(e["source"], "webhook", "{e}");
        assert_eq!(e["amounts"]["captured"], 1000, "{e}");
        assert_eq!(e["amounts"]["refunded"], refunded, "{e}");
    }
    processed(&app, "stripe", "evt_refund_3").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let evs = events_of(&app, "pay_refunds", |_| true).await;
    assert_eq!(evs.len(), 3, "a refund named again is no event: {evs:#?}");
}

/// Automatic capture: the payment succeeded on its authorisation; Adyen
/// then reports the capture failed ("Adyen will try to fix the issue and
/// re-capture the transaction", FR). That is a flag on the succeeded
/// payment, in its resource and in `GET /v1/flags`, which the re-capture
/// ("eventCode CAPTURE, success true, reason Transaction Recaptured", FR)
/// closes by itself. A second failure's flag is resolved by a person,
/// audited.
async fn a_capture_failure_beside_a_succeeded_payment_is_a_flag_the_recapture_closes(b: Backend) {
    let app = adyen_app_on(b, Duration::from_secs(3600), 10, Capture::Automatic).await;
    register(
        &app,
        json!({"id": "pay_flag", "provider": "adyen", "provider_ref": "7914073381342284",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    adyen(
        &app,
        item("7914073381342284", "", "AUTHORISATION", true, 1130),
        None,
    )
    .await;
    app.wait_for_status("pay_flag", "succeeded").await;
    let failed = item(
        "8825408195409505",
        "7914073381342284",
        "CAPTURE_FAILED",
        true,
        1130,
    );
    adyen_with(&app, failed, "Capture Failed", "2026-12-01T09:00:00+01:00").await;
    processed(&app, "adyen", "8825408195409505:CAPTURE_FAILED:true").await;
    let (_, v) = app.get("/v1/payments/pay_flag").await;
    assert_eq!(v["status"], "succeeded", "{v}");
    let flags = v["flags"].as_array().unwrap();
    assert_eq!(flags.len(), 1, "{v}");
    assert_eq!(flags[0]["closed_at"], Value::Null, "{v}");
    assert_eq!(flags[0]["piece"], "capture:7914073381342284", "{v}");
    assert!(
        flags[0]["reason"]
            .as_str()
            .unwrap()
            .contains("CAPTURE_FAILED"),
        "{v}"
    );
    let (s, open) = app.get("/v1/flags").await;
    assert_eq!(s, StatusCode::OK, "{open}");
    assert_eq!(open["flags"].as_array().unwrap().len(), 1, "{open}");
    assert_eq!(open["flags"][0]["payment_id"], "pay_flag", "{open}");

    // The re-capture closes it, with the report that did.
    let recapture = item(
        "8825408195409505",
        "7914073381342284",
        "CAPTURE",
        true,
        1130,
    );
    adyen_with(
        &app,
        recapture,
        "Transaction Recaptured",
        "2026-12-02T09:00:00+01:00",
    )
    .await;
    processed(
        &app,
        "adyen",
        "8825408195409505:CAPTURE:true:recaptured:2026-12-02T09:00:00+01:00",
    )
    .await;
    let (_, v) = app.get("/v1/payments/pay_flag").await;
    let flag = &v["flags"][0];
    assert_eq!(flag["closed_by"], "provider", "{v}");
    assert!(
        flag["resolution"]
            .as_str()
            .unwrap()
            .contains("Transaction Recaptured"),
        "{v}"
    );
    let (_, open) = app.get("/v1/flags").await;
    assert_eq!(open["flags"].as_array().unwrap().len(), 0, "{open}");
    assert_eq!(v["status"], "succeeded", "{v}");

    // Another failure, which no re-capture follows: a person resolves it.
    let again = item(
        "8825408195409999",
        "7914073381342284",
        "CAPTURE_FAILED",
        true,
        1130,
    );
    adyen_with(&app, again, "Capture Failed", "2026-12-03T09:00:00+01:00").await;
    processed(&app, "adyen", "8825408195409999:CAPTURE_FAILED:true").await;
    let (_, open) = app.get("/v1/flags").await;
    let id = open["flags"][0]["id"].as_i64().expect("an open flag");
    let (s, v) = app
        .post(
            &format!("/v1/payments/pay_flag/flags/{id}/resolve"),
            json!({"actor": "ana"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "reason", "{v}");
    let (s, v) = app
        .post(
            "/v1/payments/pay_flag/flags/999999/resolve",
            json!({"reason": "x", "actor": "ana"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (s, v) = app
        .post(
            &format!("/v1/payments/pay_flag/flags/{id}/resolve"),
            json!({"reason": "settled in the Customer Area", "actor": "ana"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["closed_by"], "ana", "{v}");
    assert_eq!(v["resolution"], "settled in the Customer Area", "{v}");
    let (_, open) = app.get("/v1/flags").await;
    assert_eq!(open["flags"].as_array().unwrap().len(), 0, "{open}");
    let audit = app
        .db
        .store
        .audit_list(&finality_store::review::AuditFilter {
            payment_id: Some("pay_flag".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        audit
            .iter()
            .any(|a| a.entry.action == "resolve_flag" && a.entry.outcome == "resolved"),
        "{audit:?}"
    );
    // Each flag raised and closed is an event of its own, with the flag as
    // it was then, beside the status event.
    let evs = events_of(&app, "pay_flag", |e| e.len() >= 5).await;
    assert_eq!(
        types(&evs),
        [
            "payment.succeeded",
            "payment.flagged",
            "payment.flag_resolved",
            "payment.flagged",
            "payment.flag_resolved"
        ],
        "{evs:#?}"
    );
    assert_eq!(evs[0]["amounts"]["captured"], 1130, "{evs:#?}");
    assert_eq!(evs[0]["flag"], Value::Null, "{evs:#?}");
    assert_eq!(
        evs[1]["flag"]["piece"], "capture:7914073381342284",
        "{evs:#?}"
    );
    assert_eq!(evs[1]["flag"]["closed_at"], Value::Null, "{evs:#?}");
    assert_eq!(evs[2]["flag"]["id"], evs[1]["flag"]["id"], "{evs:#?}");
    assert_eq!(evs[2]["flag"]["closed_by"], "provider", "{evs:#?}");
    assert_eq!(evs[2]["source"], "webhook", "{evs:#?}");
    assert_eq!(evs[4]["flag"]["id"], id, "{evs:#?}");
    assert_eq!(evs[4]["flag"]["closed_by"], "ana", "{evs:#?}");
    assert_eq!(evs[4]["source"], "manual", "{evs:#?}");
    for e in &evs[1..] {
        assert_eq!(e["status"], "succeeded", "{e}");
        assert_eq!(e["previous_status"], "succeeded", "{e}");
    }
}

/// A chargeback took the whole 11.30 back, then a refund of it is reported
/// too: more returned than captured is never summed silently; it is a
/// flag on the reversed payment naming both amounts. A refund in another
/// currency than the payment's is one too.
async fn more_returned_than_captured_or_another_currency_is_decided_by_a_person(b: Backend) {
    let app = adyen_app_on(b, Duration::from_secs(3600), 10, Capture::Automatic).await;
    register(
        &app,
        json!({"id": "pay_over", "provider": "adyen", "provider_ref": "7914073381342284",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    adyen(
        &app,
        item("7914073381342284", "", "AUTHORISATION", true, 1130),
        None,
    )
    .await;
    app.wait_for_status("pay_over", "succeeded").await;
    adyen(
        &app,
        item(
            "9915555555555555",
            "7914073381342284",
            "CHARGEBACK",
            true,
            1130,
        ),
        None,
    )
    .await;
    app.wait_for_status("pay_over", "reversed").await;
    adyen(
        &app,
        item(
            "8412534564722331",
            "7914073381342284",
            "CANCEL_OR_REFUND",
            true,
            1130,
        ),
        Some("refund"),
    )
    .await;
    processed(&app, "adyen", "8412534564722331:CANCEL_OR_REFUND:true").await;
    let (_, v) = app.get("/v1/payments/pay_over").await;
    assert_eq!(v["status"], "reversed", "{v}");
    let reason = v["flags"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("over_refund: refunded 1130 and lost to disputes 1130 of 1130 captured"),
        "{v}"
    );
    // Another currency: kept apart, both named.
    let usd = AdyenItem {
        money: Money {
            amount: 500,
            currency: "USD",
        },
        ..item(
            "8412534564729999",
            "7914073381342284",
            "CANCEL_OR_REFUND",
            true,
            500,
        )
    };
    adyen(&app, usd, Some("refund")).await;
    let ev = processed(&app, "adyen", "8412534564729999:CANCEL_OR_REFUND:true").await;
    assert_eq!(ev.state, finality_store::InboxState::Review, "{ev:?}");
    let (_, v) = app.get("/v1/payments/pay_over").await;
    assert_eq!(
        v["amounts"]["refunded"], 1130,
        "the USD refund is not summed: {v}"
    );
    let reasons: Vec<&str> = v["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["reason"].as_str())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("500 USD") && r.contains("EUR")),
        "{reasons:?}"
    );
}

/// Reordered: Adyen's EXPIRE of the remainder is delivered before the
/// partial CAPTURE (after an outage, say). The payment was already
/// cancelled, which is final; the capture's money is counted and is a
/// flag ("money may have moved"), never "ignored: already final".
async fn a_capture_after_the_expiry_it_should_have_preceded_is_a_flag(b: Backend) {
    let app = adyen_app_on(b, Duration::from_secs(3600), 10, Capture::Manual).await;
    register(
        &app,
        json!({"id": "pay_late", "provider": "adyen", "provider_ref": "7914073381342284",
               "amount": 1130, "currency": "EUR"}),
    )
    .await;
    adyen(
        &app,
        item("7914073381342284", "", "AUTHORISATION", true, 1130),
        None,
    )
    .await;
    app.wait_for_status("pay_late", "processing").await;
    adyen(
        &app,
        item("7914073381342284", "", "EXPIRE", true, 630),
        None,
    )
    .await;
    app.wait_for_status("pay_late", "cancelled").await;
    adyen(
        &app,
        item("8825408195409505", "7914073381342284", "CAPTURE", true, 500),
        None,
    )
    .await;
    let ev = processed(&app, "adyen", "8825408195409505:CAPTURE:true").await;
    assert_eq!(ev.state, finality_store::InboxState::Review, "{ev:?}");
    let (_, v) = app.get("/v1/payments/pay_late").await;
    assert_eq!(v["status"], "cancelled", "{v}");
    assert_eq!(v["amounts"]["captured"], 500, "{v}");
    let reason = v["flags"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("money may have moved"), "{v}");
    assert_eq!(v["flags"][0]["closed_at"], Value::Null, "{v}");
}
