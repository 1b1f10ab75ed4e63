//! The adapter's own unit tests (Adyen's documented examples).
use super::*;

fn status_of(code: &str, success: &str, capture: Capture) -> Option<Status> {
    let mut i = item(code, success);
    i["originalReference"] = json!("9913140798220028");
    decide(&i, capture).0
}

#[test]
fn manual_capture_holds_until_captured() {
    let m = Capture::Manual;
    assert_eq!(
        status_of("AUTHORISATION", "true", m),
        Some(Status::Processing)
    );
    assert_eq!(status_of("CAPTURE", "true", m), Some(Status::Succeeded));
    assert_eq!(
        status_of("AUTHORISATION", "true", Capture::Automatic),
        Some(Status::Succeeded)
    );
}

/// FR: "Adyen will try to fix the issue and re-capture the
/// transaction": a failed capture or refund is never final on its own.
#[test]
fn failed_captures_and_refunds_are_not_final() {
    let a = Capture::Automatic;
    assert_eq!(
        status_of("CAPTURE_FAILED", "true", a),
        Some(Status::NeedsReview)
    );
    assert_eq!(
        status_of("REFUND_FAILED", "true", a),
        Some(Status::NeedsReview)
    );
    assert_eq!(
        status_of("OFFER_CLOSED", "true", a),
        Some(Status::NeedsReview)
    );
}

#[test]
fn cancel_or_refund_by_its_modification_action() {
    let mut i = item("CANCEL_OR_REFUND", "true");
    i["originalReference"] = json!("9913140798220028");
    for (action, want) in [
        (json!("cancel"), Status::Cancelled),
        (json!("refund"), Status::Reversed),
        (json!(null), Status::Cancelled),
    ] {
        i["additionalData"]["modification.action"] = action;
        assert_eq!(decide(&i, Capture::Automatic).0, Some(want));
    }
}

#[test]
fn a_recapture_is_its_own_event() {
    let mut first = item("CAPTURE", "true");
    first["eventDate"] = json!("2026-12-01T10:00:00+01:00");
    let mut again = first.clone();
    again["reason"] = json!("Transaction Recaptured");
    again["eventDate"] = json!("2026-12-02T10:00:00+01:00");
    assert_eq!(event_id(&first), "7914073381342284:CAPTURE:true");
    assert_eq!(
        event_id(&again),
        "7914073381342284:CAPTURE:true:recaptured:2026-12-02T10:00:00+01:00"
    );
}

#[test]
fn unpublished_codes_go_to_review_and_a_missing_original_reference_too() {
    let (s, d) = decide(&item("SOMETHING_NEW", "true"), Capture::Automatic);
    assert_eq!(s, None);
    assert!(matches!(d, Disposition::Review(w) if w.contains("not in Adyen's published list")));
    let (s, d) = decide(&item("CHARGEBACK", "true"), Capture::Automatic);
    assert_eq!(s, None);
    assert!(matches!(d, Disposition::Review(w) if w.contains("no originalReference")));
}

use serde_json::json;

const KEY_HEX: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

fn item(code: &str, success: &str) -> Value {
    json!({"pspReference": "7914073381342284", "originalReference": "",
           "merchantAccountCode": "TestMerchant", "merchantReference": "TestPayment-1407325143704",
           "amount": {"value": 1130, "currency": "EUR"}, "eventCode": code, "success": success,
           "additionalData": {}})
}

fn batch(items: Vec<Value>) -> Vec<u8> {
    let list: Vec<Value> = items
        .into_iter()
        .map(|i| json!({"NotificationRequestItem": i}))
        .collect();
    json!({"live": "false", "notificationItems": list})
        .to_string()
        .into_bytes()
}

fn signed(mut i: Value, key: &[u8]) -> Value {
    i["additionalData"]["hmacSignature"] = json!(sign(key, &i));
    i
}

#[test]
fn the_documented_signing_string() {
    // Adyen's documented example item and its signing string.
    assert_eq!(
        signing_string(&item("AUTHORISATION", "true")),
        "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"
    );
}

#[tokio::test]
async fn signed_items_verify_and_map() {
    let key = decode_key(KEY_HEX).unwrap();
    let a = AdyenAdapter::new(&[KEY_HEX.to_string()]).unwrap();
    let body = batch(vec![
        signed(item("AUTHORISATION", "true"), &key),
        signed(item("REFUND", "false"), &key),
    ]);
    let evs = a
        .verify_webhook(&Default::default(), &body, Timestamp(0))
        .await
        .unwrap();
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].status, Some(Status::Succeeded));
    assert_eq!(evs[0].event_id, "7914073381342284:AUTHORISATION:true");
    assert_eq!(evs[1].status, Some(Status::Failed));
}

/// Adyen holds back its per-endpoint queue behind a refused batch: one
/// bad item is kept for review, the rest is applied and acknowledged.
#[tokio::test]
async fn one_bad_item_is_kept_for_review_not_refused() {
    let key = decode_key(KEY_HEX).unwrap();
    let a = AdyenAdapter::new(&[KEY_HEX.to_string()]).unwrap();
    let mut tampered = signed(item("AUTHORISATION", "false"), &key);
    tampered["success"] = json!("true");
    let body = batch(vec![signed(item("AUTHORISATION", "true"), &key), tampered]);
    let evs = a
        .verify_webhook(&Default::default(), &body, Timestamp(0))
        .await
        .unwrap();
    assert_eq!(evs[0].disposition, Disposition::Apply);
    assert_eq!(evs[0].status, Some(Status::Succeeded));
    assert_eq!(evs.len(), 2);
    assert!(matches!(&evs[1].disposition, Disposition::Review(w) if w.starts_with("1 of 2")));
    assert_eq!(
        (evs[1].status, evs[1].provider_ref.as_deref()),
        (None, None)
    );
    assert!(evs[1].event_id.starts_with("unverified:"));
    // Nothing verifies: refused, Adyen retries.
    let other = decode_key("00").unwrap();
    let body = batch(vec![signed(item("AUTHORISATION", "true"), &other)]);
    assert!(matches!(
        a.verify_webhook(&Default::default(), &body, Timestamp(0))
            .await,
        Err(WebhookError::Rejected {
            reason: RejectReason::BadSignature,
            ..
        })
    ));
}

/// Failures after success wait for a human (or Adyen's retry), never
/// `reversed`; chargebacks reverse; their reversals and unknown
/// outcomes are kept for review, never dropped.
#[tokio::test]
async fn late_failures_and_chargebacks() {
    let key = decode_key(KEY_HEX).unwrap();
    let a = AdyenAdapter::new(&[KEY_HEX.to_string()]).unwrap();
    let with_original = |code: &str| {
        let mut i = item(code, "true");
        i["originalReference"] = json!("9913140798220028");
        signed(i, &key)
    };
    let body = batch(vec![
        with_original("CAPTURE_FAILED"),
        signed(item("REFUND_FAILED", "true"), &key),
        with_original("CHARGEBACK"),
        with_original("CHARGEBACK_REVERSED"),
        signed(item("REPORT_AVAILABLE", "true"), &key),
    ]);
    let evs = a
        .verify_webhook(&Default::default(), &body, Timestamp(0))
        .await
        .unwrap();
    assert_eq!(evs[0].status, Some(Status::NeedsReview));
    assert!(evs[0]
        .provider_status
        .as_deref()
        .unwrap()
        .contains("Adyen usually re-captures"));
    assert_eq!(evs[1].status, Some(Status::NeedsReview));
    assert_eq!(evs[2].status, Some(Status::Reversed));
    assert_eq!(evs[3].status, Some(Status::NeedsReview));
    assert!(
        matches!(&evs[4].disposition, Disposition::Ignore(w) if w.contains("REPORT_AVAILABLE"))
    );
    assert_eq!(
        (evs[2].reported.amount, evs[2].reported.currency.as_deref()),
        (Some(1130), Some("EUR"))
    );
    // The chargeback is counted as a dispute by its pspReference.
    let kinds: Vec<_> = evs[2].reported.pieces.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![finality_core::amounts::PieceKind::Dispute]);
}

#[tokio::test]
async fn another_merchant_account_is_a_mismatch() {
    let key = decode_key(KEY_HEX).unwrap();
    let a = AdyenAdapter::new(&[KEY_HEX.to_string()])
        .unwrap()
        .with_config(&AdyenConfig {
            capture: Capture::Automatic,
            merchant_account: Some("OurMerchant".into()),
        });
    let body = batch(vec![signed(item("AUTHORISATION", "true"), &key)]);
    let evs = a
        .verify_webhook(&Default::default(), &body, Timestamp(0))
        .await
        .unwrap();
    assert_eq!(
        evs[0].reported.mismatch.as_deref(),
        Some(
            "account_mismatch: the provider reports merchantAccountCode `TestMerchant`, \
             configured `OurMerchant`"
        )
    );
}
