//! Adyen: webhook-first. Adyen's Checkout API has no "status of this
//! payment" read, so nothing is polled: Adyen's notifications settle
//! payments, and a payment whose notification never comes reaches review
//! when its schedule runs out (each scheduled "poll" only records that no
//! notification has arrived yet; no request is made).
//!
//! Notifications (`POST /webhooks/{name}`): a JSON batch of
//! `NotificationRequestItem`s, each signed on its own: base64 HMAC-SHA256,
//! under the hex-decoded HMAC key from the Customer Area, of
//! `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success`,
//! in `additionalData.hmacSignature`, against one of the configured keys
//! (two while rotating). Adyen queues notifications per endpoint and retries
//! a batch that is not accepted, holding back everything behind it, so one
//! bad item must not stall the queue: when at least one item verifies, the
//! answer is `[accepted]` (exactly, as Adyen requires), the verified items
//! are applied, and the items that do not verify are stored as one row for
//! review (the raw body, no reference taken from them) and never applied. A body in which no item verifies is refused (401): that
//! is a wrong key or a forgery, and Adyen's retries are then what we want.
//! Notifications carry no timestamp to bound replays; the event id
//! (`pspReference:eventCode:success`) deduplicates them.

use crate::webhook::{Disposition, RejectReason, WebhookError, WebhookEvent};
use crate::{Capabilities, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use finality_core::{Status, Timestamp};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The answer Adyen requires.
pub const ACK: &str = "[accepted]";

/// How the merchant account captures: with automatic capture an
/// authorisation is the money; with manual capture it is only a hold, and
/// the `CAPTURE` notification settles the payment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capture {
    #[default]
    Automatic,
    Manual,
}

/// `[providers.NAME.adyen]`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdyenConfig {
    #[serde(default)]
    pub capture: Capture,
}

/// What a notification means: `(eventCode, success)` → status. Codes about
/// a modification of a payment name the payment in `originalReference`.
pub fn map_event(code: &str, success: bool, capture: Capture) -> Option<Status> {
    match (code, success) {
        ("AUTHORISATION", true) if capture == Capture::Manual => Some(Status::Processing),
        ("AUTHORISATION", true) => Some(Status::Succeeded),
        ("AUTHORISATION", false) => Some(Status::Failed),
        ("CANCELLATION" | "TECHNICAL_CANCEL", true) => Some(Status::Cancelled),
        ("CAPTURE", true) => Some(Status::Succeeded),
        // A capture Adyen refused at once.
        ("CAPTURE", false) => Some(Status::Failed),
        // The card scheme failed a capture Adyen had already reported as
        // CAPTURE success=true: the success is undone (Adyen, "Webhook
        // types": CAPTURE_FAILED follows a successful CAPTURE).
        ("CAPTURE_FAILED", _) => Some(Status::Reversed),
        ("REFUND", true) => Some(Status::Succeeded),
        ("REFUND", false) => Some(Status::Failed),
        // REFUND_FAILED follows a successful REFUND: the refund is undone,
        // the money came back to the merchant.
        ("REFUND_FAILED", _) => Some(Status::Reversed),
        ("CHARGEBACK" | "SECOND_CHARGEBACK", _) => Some(Status::Reversed),
        _ => None,
    }
}

/// What a verified event with no status means: kept for a human (money
/// moved in a way the status model cannot express), or plainly ignored.
fn disposition(code: &str, success: bool, status: Option<Status>) -> Disposition {
    if status.is_some() {
        return Disposition::Apply;
    }
    match code {
        "CHARGEBACK_REVERSED" | "REFUNDED_REVERSED" | "PREARBITRATION_WON" => {
            Disposition::Review(format!(
                "Adyen {code}: money returned after a chargeback or refund; the payment's status \
             cannot follow it by itself, decide by hand"
            ))
        }
        _ => Disposition::Ignore(format!(
            "Adyen {code} (success={success}) changes no status finality follows"
        )),
    }
}

fn names_original(code: &str) -> bool {
    matches!(
        code,
        "CANCELLATION"
            | "TECHNICAL_CANCEL"
            | "CAPTURE"
            | "CAPTURE_FAILED"
            | "CHARGEBACK"
            | "SECOND_CHARGEBACK"
            | "CHARGEBACK_REVERSED"
            | "NOTIFICATION_OF_CHARGEBACK"
            | "PREARBITRATION_WON"
    )
}

fn text<'a>(item: &'a Value, field: &str) -> &'a str {
    item[field].as_str().unwrap_or_default()
}

/// The string Adyen signs for one item.
pub fn signing_string(item: &Value) -> String {
    let value = match &item["amount"]["value"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    };
    [
        text(item, "pspReference"),
        text(item, "originalReference"),
        text(item, "merchantAccountCode"),
        text(item, "merchantReference"),
        &value,
        item["amount"]["currency"].as_str().unwrap_or_default(),
        text(item, "eventCode"),
        text(item, "success"),
    ]
    .join(":")
}

/// The `hmacSignature` Adyen would put on `item` under `key` (hex-decoded).
pub fn sign(key: &[u8], item: &Value) -> String {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(signing_string(item).as_bytes());
    B64.encode(mac.finalize().into_bytes())
}

/// Decode an HMAC key as the Customer Area shows it (hex).
pub fn decode_key(hex_key: &str) -> Result<Vec<u8>, String> {
    hex::decode(hex_key.trim()).map_err(|e| format!("Adyen HMAC key is not hex: {e}"))
}

pub struct AdyenAdapter {
    keys: Vec<Vec<u8>>,
    capture: Capture,
}

impl AdyenAdapter {
    /// `keys`: the hex HMAC keys of the webhook (none: webhooks refused).
    pub fn new(keys: &[String]) -> Result<Self, String> {
        let keys = keys
            .iter()
            .map(|k| decode_key(k))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AdyenAdapter {
            keys,
            capture: Capture::Automatic,
        })
    }

    pub fn with_config(mut self, config: &AdyenConfig) -> Self {
        self.capture = config.capture;
        self
    }

    fn verify_item(&self, item: &Value) -> bool {
        let Some(sig) = item["additionalData"]["hmacSignature"]
            .as_str()
            .and_then(|s| B64.decode(s).ok())
        else {
            return false;
        };
        let signed = signing_string(item);
        self.keys.iter().any(|k| {
            let mut mac = HmacSha256::new_from_slice(k).expect("HMAC takes keys of any length");
            mac.update(signed.as_bytes());
            mac.verify_slice(&sig).is_ok()
        })
    }
}

fn items(body: &[u8]) -> Option<Vec<Value>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let list = v["notificationItems"].as_array()?;
    Some(
        list.iter()
            .map(|i| i["NotificationRequestItem"].clone())
            .collect(),
    )
}

#[async_trait]
impl Provider for AdyenAdapter {
    /// Never called: [`Provider::unqueryable`] says every target is. Kept
    /// harmless (no request) in case it is.
    async fn query_status(&self, _t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        Ok(Observation::new(None, "awaiting_notification"))
    }

    async fn verify_webhook(
        &self,
        _headers: &reqwest::header::HeaderMap,
        body: &[u8],
        _now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        if self.keys.is_empty() {
            return Err(WebhookError::NotConfigured);
        }
        let Some(items) = items(body) else {
            // Without items there is nothing signed to check: not provably
            // Adyen's, so refused rather than kept.
            return Err(WebhookError::reject(
                RejectReason::MissingHeader,
                "no notificationItems[].NotificationRequestItem in the body",
            ));
        };
        let verified: Vec<bool> = items.iter().map(|i| self.verify_item(i)).collect();
        if !verified.contains(&true) {
            return Err(WebhookError::reject(
                RejectReason::BadSignature,
                format!(
                    "no item's hmacSignature matches any of {} keys",
                    self.keys.len()
                ),
            ));
        }
        let mut events: Vec<WebhookEvent> = items
            .iter()
            .zip(&verified)
            .filter(|(_, ok)| **ok)
            .map(|(i, _)| {
                let code = text(i, "eventCode");
                let success = text(i, "success") == "true";
                let psp = text(i, "pspReference");
                let (provider_ref, merchant_ref) = if names_original(code) {
                    (text(i, "originalReference"), "")
                } else {
                    (psp, text(i, "merchantReference"))
                };
                let some = |v: &str| (!v.is_empty()).then(|| v.to_string());
                let status = map_event(code, success, self.capture);
                WebhookEvent {
                    event_id: format!("{psp}:{code}:{success}"),
                    provider_ref: some(provider_ref),
                    merchant_ref: some(merchant_ref),
                    status,
                    provider_status: Some(format!("{code}:{success}")),
                    occurred_at: None,
                    disposition: disposition(code, success, status),
                }
            })
            .collect();
        // Items that do not verify are kept as one row per request for a
        // human (the raw body is on it), under an id derived from the body,
        // never applied and carrying no reference: an item replayed beside
        // forged ones cannot make the forged ones look like anything.
        let bad = verified.iter().filter(|ok| !**ok).count();
        if bad > 0 {
            use sha2::Digest;
            events.push(WebhookEvent {
                event_id: format!("unverified:{}", hex::encode(&Sha256::digest(body)[..16])),
                provider_ref: None,
                merchant_ref: None,
                status: None,
                provider_status: None,
                occurred_at: None,
                disposition: Disposition::Review(format!(
                    "{bad} of {} items' hmacSignature matches no configured key, beside items \
                     that do: stored, not applied",
                    verified.len()
                )),
            });
        }
        Ok(events)
    }

    fn unqueryable(&self, _t: &PollTarget<'_>) -> Option<String> {
        Some(
            "Adyen is webhook-only (it has no status read to poll) and no notification \
             arrived"
                .into(),
        )
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        items(body)?
            .first()
            .map(|i| text(i, "pspReference").to_string())
            .filter(|s| !s.is_empty())
    }

    fn ack(&self) -> Option<&'static str> {
        Some(ACK)
    }

    async fn check(&self) -> Result<String, ProviderError> {
        if self.keys.is_empty() {
            return Err(ProviderError::Permanent {
                message: "Adyen is webhook-only and no HMAC key is set (webhook_secret_envs)"
                    .into(),
            });
        }
        Ok(format!(
            "webhook-only: nothing to call; {} HMAC key(s) loaded",
            self.keys.len()
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: false,
            webhooks: !self.keys.is_empty(),
            lookup: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_capture_holds_until_captured() {
        let m = Capture::Manual;
        assert_eq!(
            map_event("AUTHORISATION", true, m),
            Some(Status::Processing)
        );
        assert_eq!(map_event("CAPTURE", true, m), Some(Status::Succeeded));
        assert_eq!(map_event("CAPTURE_FAILED", true, m), Some(Status::Reversed));
        assert_eq!(
            map_event("AUTHORISATION", true, Capture::Automatic),
            Some(Status::Succeeded)
        );
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

    /// Failures after success are mapped (finality then records `reversed`),
    /// and chargeback reversals are kept for review, never dropped.
    #[tokio::test]
    async fn late_failures_and_chargebacks() {
        let key = decode_key(KEY_HEX).unwrap();
        let a = AdyenAdapter::new(&[KEY_HEX.to_string()]).unwrap();
        let body = batch(vec![
            signed(item("CAPTURE_FAILED", "true"), &key),
            signed(item("REFUND_FAILED", "true"), &key),
            signed(item("CHARGEBACK", "true"), &key),
            signed(item("CHARGEBACK_REVERSED", "true"), &key),
            signed(item("REPORT_AVAILABLE", "true"), &key),
        ]);
        let evs = a
            .verify_webhook(&Default::default(), &body, Timestamp(0))
            .await
            .unwrap();
        assert_eq!(evs[0].status, Some(Status::Reversed));
        assert_eq!(evs[1].status, Some(Status::Reversed));
        assert_eq!(evs[2].status, Some(Status::Reversed));
        assert!(
            matches!(&evs[3].disposition, Disposition::Review(w) if w.contains("CHARGEBACK_REVERSED"))
        );
        assert!(
            matches!(&evs[4].disposition, Disposition::Ignore(w) if w.contains("REPORT_AVAILABLE"))
        );
    }
}
