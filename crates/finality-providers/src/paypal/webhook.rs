//! PayPal webhooks: checked locally first (transmission time, certificate
//! host), then verified by PayPal (`verify-webhook-signature`, paced and
//! cached per transmission), then read into events.

use super::contract;
use crate::paypal::config::PaymentObject;
use crate::paypal::map::{amount_of, disputed, money, refunded_capture};
use crate::paypal::{map_event, map_refund, order_money, order_status};
use crate::webhook::{Disposition, RejectReason, WebhookError, WebhookEvent};
use finality_core::{Status, Timestamp};
use serde_json::Value;
use std::time::Duration;

/// Default of `verify_per_second` (bursts of twice as many).
pub const VERIFY_PER_SECOND: u32 = 10;

/// Verdicts remembered, by transmission: a genuine webhook replayed within
/// the tolerance (or redelivered by PayPal) is not asked about again.
pub(crate) const VERIFIED_KEPT: usize = 10_000;

/// Sources (peer addresses) remembered as having sent a delivery PayPal
/// said was genuine: PayPal's own senders, or the proxy in front.
const TRUSTED_SOURCES_KEPT: usize = 1_024;

/// PayPal's verdicts on transmissions seen lately, and the pace of asking:
/// the whole budget (`verify_per_second`), and what one source that never
/// sent a genuine delivery may spend of it (a quarter), so forgeries from
/// one address cannot keep PayPal's own deliveries waiting.
pub(crate) struct Verifications {
    /// sha256 of every header PayPal verifies and the body (the webhook id
    /// is the adapter's own) → verification_status was SUCCESS. Entries
    /// older than the tolerance are never looked up again (the
    /// transmission time check refuses them first).
    verdicts: std::sync::Mutex<lru::LruCache<[u8; 32], bool>>,
    pub(crate) limiter: governor::DefaultDirectRateLimiter,
    per_source: governor::DefaultKeyedRateLimiter<std::net::IpAddr>,
    trusted: std::sync::Mutex<lru::LruCache<std::net::IpAddr, ()>>,
}

impl Verifications {
    pub(crate) fn new(per_second: u32) -> Self {
        let rate = std::num::NonZeroU32::new(per_second).unwrap_or(std::num::NonZeroU32::MIN);
        let burst = rate.saturating_add(rate.get());
        let kept =
            std::num::NonZeroUsize::new(VERIFIED_KEPT).unwrap_or(std::num::NonZeroUsize::MIN);
        let share = std::num::NonZeroU32::new(rate.get() / 4).unwrap_or(std::num::NonZeroU32::MIN);
        let sources = std::num::NonZeroUsize::new(TRUSTED_SOURCES_KEPT)
            .unwrap_or(std::num::NonZeroUsize::MIN);
        Verifications {
            verdicts: std::sync::Mutex::new(lru::LruCache::new(kept)),
            limiter: governor::RateLimiter::direct(
                governor::Quota::per_second(rate).allow_burst(burst),
            ),
            per_source: governor::RateLimiter::keyed(
                governor::Quota::per_second(share).allow_burst(share.saturating_add(share.get())),
            ),
            trusted: std::sync::Mutex::new(lru::LruCache::new(sources)),
        }
    }

    /// Whether a delivery from `source` may spend a verification now: a
    /// source that sent a genuine one lately spends from the whole budget;
    /// any other, from its share first. `None` (no address known): the
    /// whole budget.
    pub(crate) fn may_ask(&self, source: Option<std::net::IpAddr>) -> Result<(), WebhookError> {
        if let Some(ip) = source {
            let known = {
                let mut t = self.trusted.lock().unwrap_or_else(|p| p.into_inner());
                t.get(&ip).is_some()
            };
            if !known && self.per_source.check_key(&ip).is_err() {
                return Err(WebhookError::Busy {
                    detail: format!(
                        "PayPal verification calls from {ip} are over its share of \
                         verify_per_second (an address that sent no genuine webhook lately); \
                         PayPal delivers the webhook again"
                    ),
                });
            }
        }
        if self.limiter.check().is_err() {
            return Err(WebhookError::Busy {
                detail: "PayPal verification calls are over verify_per_second; \
                         PayPal delivers the webhook again"
                    .into(),
            });
        }
        Ok(())
    }

    /// Remember that `source` sent a delivery PayPal said was genuine.
    pub(crate) fn trust(&self, source: Option<std::net::IpAddr>) {
        if let Some(ip) = source {
            let mut t = self.trusted.lock().unwrap_or_else(|p| p.into_inner());
            t.put(ip, ());
        }
    }

    pub(crate) fn key(headers: &reqwest::header::HeaderMap, body: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        // Everything PayPal is asked to verify (`verification_request`):
        // a delivery replayed with a fresh transmission time, or another
        // certificate, is another question and is asked again.
        for name in [
            "paypal-transmission-id",
            "paypal-transmission-time",
            "paypal-transmission-sig",
            "paypal-cert-url",
            "paypal-auth-algo",
        ] {
            let v = headers.get(name).map(|v| v.as_bytes()).unwrap_or_default();
            h.update((v.len() as u64).to_be_bytes());
            h.update(v);
        }
        h.update(body);
        h.finalize().into()
    }

    pub(crate) fn get(&self, key: &[u8; 32]) -> Option<bool> {
        let mut v = self.verdicts.lock().unwrap_or_else(|p| p.into_inner());
        v.get(key).copied()
    }

    pub(crate) fn put(&self, key: [u8; 32], verdict: bool) {
        let mut v = self.verdicts.lock().unwrap_or_else(|p| p.into_inner());
        v.put(key, verdict);
    }
}

/// The hosts PayPal serves its signing certificates from: a
/// `paypal-cert-url` elsewhere is not PayPal's (checked before PayPal is
/// asked to verify, so a forged webhook costs no outbound call).
pub(crate) fn paypal_cert_host(host: &str) -> bool {
    host == "paypal.com" || host.ends_with(".paypal.com")
}

/// A `paypal-*` header, or the rejection naming it.
pub(crate) fn header<'a>(
    headers: &'a reqwest::header::HeaderMap,
    name: &str,
) -> Result<&'a str, WebhookError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            WebhookError::reject(
                RejectReason::MissingHeader,
                format!("missing header {name}"),
            )
        })
}

/// What can be checked of a webhook before asking PayPal: the
/// transmission time within `tolerance` of `now`, and the certificate URL
/// on PayPal's hosts over https. Anyone can post to the endpoint; only
/// what passes costs the merchant's PayPal rate limit.
pub fn precheck(
    headers: &reqwest::header::HeaderMap,
    now: Timestamp,
    tolerance: Duration,
) -> Result<(), WebhookError> {
    let h = |name: &str| header(headers, name);
    let time = h("paypal-transmission-time")?;
    let at = chrono::DateTime::parse_from_rfc3339(time).map_err(|e| {
        WebhookError::reject(
            RejectReason::BadTimestamp,
            format!("paypal-transmission-time `{time}` is not RFC 3339: {e}"),
        )
    })?;
    crate::webhook::check_timestamp(at.timestamp(), now, tolerance)?;
    let cert = h("paypal-cert-url")?;
    let ok = url::Url::parse(cert)
        .ok()
        .filter(|u| u.scheme() == "https")
        .and_then(|u| u.host_str().map(paypal_cert_host))
        .unwrap_or(false);
    if !ok {
        return Err(WebhookError::reject(
            RejectReason::BadSignature,
            format!("paypal-cert-url `{cert}` is not an https URL on PayPal's hosts"),
        ));
    }
    // The rest PayPal is asked about: without it the answer is FAILURE,
    // so it is not asked.
    for name in [
        "paypal-transmission-id",
        "paypal-transmission-sig",
        "paypal-auth-algo",
    ] {
        if h(name)?.is_empty() {
            return Err(WebhookError::reject(
                RejectReason::MissingHeader,
                format!("header {name} is empty"),
            ));
        }
    }
    Ok(())
}

/// Whether `event` is shaped as every PayPal webhook event is (an `id`, an
/// `event_type` and a `resource` object), checked before PayPal is asked.
pub(crate) fn check_shape(event: &Value) -> Result<(), WebhookError> {
    let ok = event["id"].as_str().is_some_and(|s| !s.is_empty())
        && event["event_type"].as_str().is_some_and(|s| !s.is_empty())
        && event["resource"].is_object();
    if ok {
        Ok(())
    } else {
        Err(WebhookError::reject(
            RejectReason::BadSignature,
            "not a PayPal webhook event (an id, an event_type and a resource object)",
        ))
    }
}

/// Parse a verified PayPal event. Payments are followed as orders or as
/// captures (`payments`); refunds by their refund id. Events about anything
/// else are acknowledged and kept as ignored.
///
/// `PAYMENT.CAPTURE.REFUNDED` carries the **refund** (Payments v2 webhook
/// events; the capture is its `up` link) and comes for partial refunds as
/// well. It yields two events: the refund itself (`{id}:refund`, settling a
/// refund registered by its id), and the capture's, which this function
/// leaves for review until [`super::PayPalAdapter`] has asked PayPal whether the
/// capture is now `REFUNDED` (reversed) or `PARTIALLY_REFUNDED` (ignored).
pub fn parse_event(
    body: &[u8],
    payments: PaymentObject,
) -> Result<Vec<WebhookEvent>, WebhookError> {
    let event: Value = serde_json::from_slice(body).map_err(|e| WebhookError::Unparseable {
        event_id: String::new(),
        detail: format!("not JSON: {e}"),
    })?;
    events_of(&event, payments)
}

/// [`parse_event`] on an event already read.
pub(crate) fn events_of(
    event: &Value,
    payments: PaymentObject,
) -> Result<Vec<WebhookEvent>, WebhookError> {
    let id = event["id"].as_str().unwrap_or_default().to_string();
    if id.is_empty() {
        return Err(WebhookError::Unparseable {
            event_id: String::new(),
            detail: "event has no id".into(),
        });
    }
    let kind = event["event_type"].as_str().unwrap_or_default();
    let resource = &event["resource"];
    let (mut status, about_capture) = map_event(kind);
    let mut word = format!("{kind} {}", resource["status"].as_str().unwrap_or_default());
    if kind == "CHECKOUT.ORDER.COMPLETED" {
        let (s, w) = order_status(resource);
        status = s;
        word = format!("{kind} {w}");
    }
    let refund_resource = resource_is_refund(event);
    let merchant_ref = resource["invoice_id"]
        .as_str()
        .or(resource["purchase_units"][0]["invoice_id"].as_str());
    let provider_ref = match (about_capture, payments, refund_resource) {
        // A refund or reversal of a capture: the capture is the `up` link.
        (true, PaymentObject::Captures, true) => refunded_capture(resource),
        (true, PaymentObject::Captures, false) => resource["id"].as_str(),
        // Followed as orders: the capture names its order; a refund does
        // not (the adapter asks the capture for it).
        (true, PaymentObject::Orders, true) => None,
        (true, PaymentObject::Orders, false) => resource["supplementary_data"]["related_ids"]
            ["order_id"]
            .as_str()
            .or(resource["id"].as_str()),
        (false, ..) => resource["id"].as_str(),
    };
    let disposition = if kind == "PAYMENT.CAPTURE.REFUNDED" {
        Disposition::Review(format!(
            "PayPal refunded {} of capture {} (total refunded {}): whether the whole capture is \
             refunded could not be checked",
            money(&resource["amount"]),
            refunded_capture(resource).unwrap_or("?"),
            money(&resource["seller_payable_breakdown"]["total_refunded_amount"]),
        ))
    } else if let Some(row) = crate::contract::lookup(contract::ROWS, contract::EVENT, kind) {
        match (status, provider_ref) {
            (None, _) => Disposition::Ignore(format!("PayPal `{kind}`: {}", row.does)),
            // A dispute names the capture it is about
            // (`disputed_transactions[].seller_transaction_id`), not the
            // order: kept for a human beside the payment.
            (Some(Status::NeedsReview), _) if kind.starts_with("CUSTOMER.DISPUTE.") => {
                Disposition::Review(format!(
                    "PayPal `{kind}` ({}) about {}: {}",
                    resource["status"].as_str().unwrap_or("?"),
                    disputed(resource).unwrap_or("an unnamed transaction"),
                    row.does
                ))
            }
            _ => Disposition::Apply,
        }
    } else {
        Disposition::Review(format!(
            "PayPal event `{kind}` ({}) is not in PayPal's published lists: kept for review, \
             not applied",
            event["resource_type"]
                .as_str()
                .unwrap_or("unknown resource")
        ))
    };
    let status = match &disposition {
        Disposition::Apply => status,
        _ => None,
    };
    // The money the event is about: an order's captures, a capture's
    // amount. A refund or reversal resource's amount is not the payment's
    // (a partial refund is for less): the capture's status decides those.
    let mut reported = match kind {
        "CHECKOUT.ORDER.COMPLETED" => order_money(resource),
        "PAYMENT.CAPTURE.COMPLETED" => amount_of(&resource["amount"]),
        _ => finality_core::Reported::default(),
    };
    // The captures it names, counted by their ids (see
    // `docs/PROVIDERS.md`, PayPal money).
    reported.pieces = match kind {
        "CHECKOUT.ORDER.COMPLETED" => crate::paypal::map::order_pieces(resource),
        "PAYMENT.CAPTURE.COMPLETED"
        | "PAYMENT.CAPTURE.DECLINED"
        | "PAYMENT.CAPTURE.DENIED"
        | "PAYMENT.CAPTURE.PENDING" => crate::paypal::map::capture_piece(resource)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    };
    let mut events = vec![WebhookEvent {
        event_id: id.clone(),
        provider_ref: provider_ref.map(String::from),
        merchant_ref: merchant_ref.map(String::from),
        status,
        provider_status: Some(word),
        occurred_at: None,
        reported,
        disposition,
    }];
    if kind == "PAYMENT.CAPTURE.REFUNDED" {
        let refund_word = resource["status"].as_str().unwrap_or_default();
        events.push(WebhookEvent {
            event_id: format!("{id}:refund"),
            provider_ref: resource["id"].as_str().map(String::from),
            merchant_ref: None,
            status: map_refund(refund_word),
            provider_status: Some(format!("{kind} refund {refund_word}")),
            occurred_at: None,
            reported: amount_of(&resource["amount"]),
            disposition: Disposition::Apply,
        });
    }
    Ok(events)
}

/// The capture's verdict on a refund event: its status (`REFUNDED`: the
/// whole capture is refunded; `PARTIALLY_REFUNDED`: the payment stands) and
/// its order, for payments followed as orders.
pub fn refund_verdict(ev: &mut WebhookEvent, capture: &Value, payments: PaymentObject) {
    let word = capture["status"].as_str().unwrap_or_default();
    match word {
        "REFUNDED" => {
            ev.status = Some(Status::Reversed);
            ev.disposition = Disposition::Apply;
        }
        "PARTIALLY_REFUNDED" => {
            ev.disposition = Disposition::Ignore(
                "partial refund: the capture is PARTIALLY_REFUNDED, the payment stays succeeded"
                    .into(),
            );
        }
        other => {
            ev.disposition = Disposition::Review(format!(
                "PayPal refunded part of a capture whose status is now `{other}`: decide by hand"
            ));
        }
    }
    if payments == PaymentObject::Orders {
        if let Some(order) = capture["supplementary_data"]["related_ids"]["order_id"].as_str() {
            ev.provider_ref = Some(order.to_string());
        }
    }
    if let Some(w) = &mut ev.provider_status {
        w.push_str(&format!(" (capture {word})"));
    }
}

pub(crate) fn resource_is_refund(event: &Value) -> bool {
    event["resource_type"] == "refund"
        || event["resource"]["links"].as_array().is_some_and(|l| {
            l.iter().any(|l| {
                l["href"].as_str().is_some_and(|h| h.contains("/refunds/")) && l["rel"] == "self"
            })
        })
}

/// The body of `POST /v1/notifications/verify-webhook-signature`, as PayPal
/// documents it (notifications_webhooks_v1 `verify-webhook-signature`):
/// the five transmission headers, the webhook's id, and `webhook_event`,
/// which is the event **exactly as received**: PayPal checks its signature
/// over the bytes it sent, and a re-serialised event (keys sorted, spacing
/// changed) answers `FAILURE`.
pub fn verification_request(
    webhook_id: &str,
    headers: &reqwest::header::HeaderMap,
    event: &serde_json::value::RawValue,
) -> Result<String, WebhookError> {
    #[derive(serde::Serialize)]
    struct Request<'a> {
        auth_algo: &'a str,
        cert_url: &'a str,
        transmission_id: &'a str,
        transmission_sig: &'a str,
        transmission_time: &'a str,
        webhook_id: &'a str,
        webhook_event: &'a serde_json::value::RawValue,
    }
    let h = |name: &str| header(headers, name);
    serde_json::to_string(&Request {
        auth_algo: h("paypal-auth-algo")?,
        cert_url: h("paypal-cert-url")?,
        transmission_id: h("paypal-transmission-id")?,
        transmission_sig: h("paypal-transmission-sig")?,
        transmission_time: h("paypal-transmission-time")?,
        webhook_id,
        webhook_event: event,
    })
    .map_err(|e| WebhookError::reject(RejectReason::BadSignature, e.to_string()))
}
