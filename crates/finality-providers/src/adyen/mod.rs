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

pub mod contract;
pub mod pieces;
pub mod reports;

use crate::contract::Action;
use crate::settlement::fetch::FetchResult;
use crate::setup::SetupError;
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
    /// The merchant account notifications must name
    /// (`merchantAccountCode`): one naming another is kept for review and
    /// never applied. Unset: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant_account: Option<String>,
}

/// What one verified item means: the status it reports (if any) and what
/// becomes of it, from its row in [`contract::ROWS`]. A code Adyen has not
/// published (or published since) is kept for review, never ignored.
pub fn decide(item: &Value, capture: Capture) -> (Option<Status>, Disposition) {
    let code = text(item, "eventCode");
    let success = text(item, "success") == "true";
    let list = if success {
        contract::TRUE
    } else {
        contract::FALSE
    };
    let Some(row) = crate::contract::lookup(contract::ROWS, list, code) else {
        return (
            None,
            Disposition::Review(format!(
                "Adyen {code} (success={success}) is not in Adyen's published list of event \
                 codes: kept for review, not applied"
            )),
        );
    };
    let status = match (row.action, code) {
        (Action::Status(s), _) => s,
        (Action::Review, _) => Status::NeedsReview,
        (Action::Ignore, _) => {
            return (
                None,
                Disposition::Ignore(format!("Adyen {code} (success={success}): {}", row.does)),
            )
        }
        (Action::Depends, "AUTHORISATION") if capture == Capture::Manual => Status::Processing,
        (Action::Depends, "AUTHORISATION") => Status::Succeeded,
        (Action::Depends, "CANCEL_OR_REFUND") => {
            match item["additionalData"]["modification.action"].as_str() {
                Some("refund") => Status::Reversed,
                // Either way the merchant no longer holds the money: cancelled
                // unless money was captured, which its refund piece returns
                // in full (the counters then say reversed).
                _ => Status::Cancelled,
            }
        }
        (Action::Depends, _) => Status::NeedsReview,
    };
    if names_original(code) && text(item, "originalReference").is_empty() {
        // Adyen's own dispute examples come without it ("For certain
        // webhooks, you need to enable receiving ... the
        // originalReference", DN): no payment can be named.
        return (
            None,
            Disposition::Review(format!(
                "Adyen {code} names no originalReference, so no payment (enable it in the \
                 Customer Area): kept for review"
            )),
        );
    }
    (Some(status), Disposition::Apply)
}

/// The words recorded with an item: its code, outcome and reason, and for
/// a review what Adyen says it means.
fn words(item: &Value, status: Option<Status>) -> String {
    let code = text(item, "eventCode");
    let success = text(item, "success");
    let reason = match text(item, "reason") {
        "" | "null" => String::new(),
        r => format!(" ({r})"),
    };
    let list = if success == "true" {
        contract::TRUE
    } else {
        contract::FALSE
    };
    match (status, crate::contract::lookup(contract::ROWS, list, code)) {
        (Some(Status::NeedsReview), Some(row)) => {
            format!("{code}:{success}{reason}: {}", row.does)
        }
        _ => format!("{code}:{success}{reason}"),
    }
}

/// The deduplication key: `pspReference:eventCode:success`, as Adyen's
/// retries repeat every field. A re-capture after CAPTURE_FAILED (reason
/// `Transaction Recaptured` or `Transaction Auto-recaptured`, FR) is a new
/// fact that may carry the first CAPTURE's key: its `eventDate` keeps it
/// apart, so it is applied, not dropped as a duplicate.
pub fn event_id(item: &Value) -> String {
    let base = format!(
        "{}:{}:{}",
        text(item, "pspReference"),
        text(item, "eventCode"),
        text(item, "success")
    );
    if text(item, "reason")
        .to_ascii_lowercase()
        .contains("recaptured")
    {
        return format!("{base}:recaptured:{}", text(item, "eventDate"));
    }
    base
}

/// The money an item names (`amount.value` in minor units, `currency`),
/// and whether it is for the configured merchant account.
fn reported(item: &Value, merchant_account: Option<&str>) -> finality_core::Reported {
    let amount = &item["amount"];
    let r = finality_core::Reported {
        pieces: Vec::new(),
        amount: amount["value"].as_i64(),
        currency: amount["currency"].as_str().map(String::from),
        mismatch: None,
    };
    match merchant_account {
        Some(m) => r.with_account(
            "merchantAccountCode",
            Some(text(item, "merchantAccountCode")),
            m,
        ),
        None => r,
    }
}

/// Codes that name the payment in `originalReference` (their own
/// `pspReference` is the modification's or the dispute's).
fn names_original(code: &str) -> bool {
    matches!(
        code,
        "CANCELLATION"
            | "TECHNICAL_CANCEL"
            | "CANCEL_OR_REFUND"
            | "CAPTURE"
            | "CAPTURE_FAILED"
            | "AUTHORISATION_ADJUSTMENT"
            | "AUTORESCUE"
            | "CANCEL_AUTORESCUE"
            | "MANUAL_REVIEW_ACCEPT"
            | "MANUAL_REVIEW_REJECT"
            | "CHARGEBACK"
            | "SECOND_CHARGEBACK"
            | "CHARGEBACK_REVERSED"
            | "NOTIFICATION_OF_CHARGEBACK"
            | "NOTIFICATION_OF_FRAUD"
            | "REQUEST_FOR_INFORMATION"
            | "DISPUTE_DEFENSE_PERIOD_ENDED"
            | "INFORMATION_SUPPLIED"
            | "ISSUER_COMMENTS"
            | "ISSUER_RESPONSE_TIMEFRAME_EXPIRED"
            | "PREARBITRATION_OPEN"
            | "PREARBITRATION_WON"
            | "PREARBITRATION_LOST"
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
pub fn decode_key(hex_key: &str) -> Result<Vec<u8>, SetupError> {
    hex::decode(hex_key.trim()).map_err(|e| SetupError::Undecodable {
        what: "Adyen HMAC key",
        expected: "hex",
        detail: e.to_string(),
    })
}

pub struct AdyenAdapter {
    keys: Vec<Vec<u8>>,
    capture: Capture,
    merchant_account: Option<String>,
    reports: Option<reports::ReportAccess>,
}

impl AdyenAdapter {
    /// `keys`: the hex HMAC keys of the webhook (none: webhooks refused).
    pub fn new(keys: &[String]) -> Result<Self, SetupError> {
        let keys = keys
            .iter()
            .map(|k| decode_key(k))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AdyenAdapter {
            keys,
            capture: Capture::Automatic,
            merchant_account: None,
            reports: None,
        })
    }

    pub fn with_config(mut self, config: &AdyenConfig) -> Self {
        self.capture = config.capture;
        self.merchant_account = config.merchant_account.clone();
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
                let psp = text(i, "pspReference");
                let (provider_ref, merchant_ref) = if names_original(code) {
                    (text(i, "originalReference"), "")
                } else {
                    (psp, text(i, "merchantReference"))
                };
                let some = |v: &str| (!v.is_empty()).then(|| v.to_string());
                let (status, disposition) = decide(i, self.capture);
                let disposition = self.announced(i, disposition);
                WebhookEvent {
                    event_id: event_id(i),
                    provider_ref: some(provider_ref),
                    merchant_ref: some(merchant_ref),
                    status,
                    provider_status: Some(words(i, status)),
                    occurred_at: None,
                    reported: finality_core::Reported {
                        pieces: pieces::pieces(i, self.capture),
                        ..reported(i, self.merchant_account.as_deref())
                    },
                    disposition,
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
                reported: Default::default(),
                disposition: Disposition::Review(format!(
                    "{bad} of {} items' hmacSignature matches no configured key, beside items \
                     that do: stored, not applied",
                    verified.len()
                )),
            });
        }
        Ok(events)
    }

    fn announces_reports(&self) -> bool {
        self.reports.is_some()
    }

    async fn fetch_announced(&self, name: &str, url: &str, dest: &std::path::Path) -> FetchResult {
        self.fetch_announced_report(name, url, dest).await
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

    /// Every NotificationRequestItem names its merchant account
    /// (`merchantAccountCode`, one of the HMAC-signed fields); the first
    /// routes the request.
    /// The notification's `live`: "Informs about the origin of the
    /// notification. The value is true when originating from the live
    /// environment, false for the test environment." (Adyen API Explorer,
    /// Webhooks; a string, `"true"` or `"false"`, in Adyen's examples.)
    fn body_live(&self, body: &[u8]) -> Option<bool> {
        let v: Value = serde_json::from_slice(body).ok()?;
        match &v["live"] {
            Value::String(s) if s == "true" => Some(true),
            Value::String(s) if s == "false" => Some(false),
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn webhook_account(&self, body: &[u8]) -> Option<String> {
        items(body)?
            .first()
            .map(|i| text(i, "merchantAccountCode").to_string())
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
mod tests;
