//! PayPal: Orders (and Refunds) by id with an OAuth2 client-credentials
//! token, and webhooks verified the way PayPal documents it, by asking
//! PayPal (`POST /v1/notifications/verify-webhook-signature`).
//!
//! - Token: `POST /v1/oauth2/token` (`grant_type=client_credentials`, HTTP
//!   Basic with the client id and secret). Cached; refreshed when less than
//!   a fifth of its life (at most 5 minutes) is left, by one caller at a
//!   time while the others wait for its result; a 401 on a status query
//!   drops the cached token so the next query fetches a new one.
//! - Poll: `GET /v2/checkout/orders/{id}` (payments and payouts; or
//!   `GET /v2/payments/captures/{id}` with `payments = "captures"`) and
//!   `GET /v2/payments/refunds/{id}` (refunds).
//! - Lookup (captures only): a payment registered by its invoice id alone is
//!   found with Transaction Search (`GET /v1/reporting/transactions?
//!   invoice_id=…`), and its capture id recorded. Orders have no search.
//! - Webhooks: the `paypal-transmission-*` headers, the webhook id and the
//!   event are sent back to PayPal, which answers `SUCCESS` or `FAILURE`.
//!   PayPal's event id (`WH-…`) deduplicates.
//! - Event list (`catch_up`, with a webhook configured):
//!   `GET /v1/notifications/webhooks-events?start_time=…` from the newest
//!   `create_time` read, every page (`links` rel `next`) before the cursor
//!   moves; listed events are interpreted as verified webhooks are.

pub mod contract;

use crate::http::Traced;
use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::oauth::ClientCredentials;
use crate::webhook::{Disposition, RejectReason, WebhookError, WebhookEvent};
use crate::{Capabilities, EventPage, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use finality_core::{Kind, Status, Timestamp};
use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;

/// Order statuses → ours (`COMPLETED`: see [`order_status`]).
pub fn map_order(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::ORDER, status)
}

/// Refund statuses → ours.
pub fn map_refund(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::REFUND_STATUS, status)
}

/// Capture statuses → ours, for a payment tracked as its capture.
pub fn map_capture(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::CAPTURE, status)
}

/// Transaction Search's one-letter statuses → ours (S success, P pending,
/// V reversed or refunded, D denied).
pub fn map_transaction(status: &str) -> Option<Status> {
    match status {
        "S" => Some(Status::Succeeded),
        "P" => Some(Status::Processing),
        "V" => Some(Status::Reversed),
        "D" => Some(Status::Failed),
        _ => None,
    }
}

/// What a PayPal payment's id names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentObject {
    /// Checkout orders (`/v2/checkout/orders/{id}`): no search exists.
    #[default]
    Orders,
    /// Captures (`/v2/payments/captures/{id}`): findable by invoice id.
    Captures,
}

/// `[providers.NAME.paypal]`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayPalConfig {
    #[serde(default)]
    pub payments: PaymentObject,
    /// Verification calls to PayPal a second, at most (each webhook that
    /// passes the local checks costs one, on the merchant's rate limit);
    /// webhooks over it are answered 429 and PayPal delivers them again.
    /// `None`: [`VERIFY_PER_SECOND`]; 0 is taken as 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_per_second: Option<u32>,
}

/// Default of `verify_per_second` (bursts of twice as many).
pub const VERIFY_PER_SECOND: u32 = 10;

/// Verdicts remembered, by transmission: a genuine webhook replayed within
/// the tolerance (or redelivered by PayPal) is not asked about again.
const VERIFIED_KEPT: usize = 10_000;

/// PayPal's verdicts on transmissions seen lately, and the pace of asking.
struct Verifications {
    /// sha256 of every header PayPal verifies and the body (the webhook id
    /// is the adapter's own) → verification_status was SUCCESS. Entries
    /// older than the tolerance are never looked up again (the
    /// transmission time check refuses them first).
    verdicts: std::sync::Mutex<lru::LruCache<[u8; 32], bool>>,
    limiter: governor::DefaultDirectRateLimiter,
}

impl Verifications {
    fn new(per_second: u32) -> Self {
        let rate = std::num::NonZeroU32::new(per_second).unwrap_or(std::num::NonZeroU32::MIN);
        let burst = rate.saturating_add(rate.get());
        let kept =
            std::num::NonZeroUsize::new(VERIFIED_KEPT).unwrap_or(std::num::NonZeroUsize::MIN);
        Verifications {
            verdicts: std::sync::Mutex::new(lru::LruCache::new(kept)),
            limiter: governor::RateLimiter::direct(
                governor::Quota::per_second(rate).allow_burst(burst),
            ),
        }
    }

    fn key(headers: &reqwest::header::HeaderMap, body: &[u8]) -> [u8; 32] {
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

    fn get(&self, key: &[u8; 32]) -> Option<bool> {
        let mut v = self.verdicts.lock().unwrap_or_else(|p| p.into_inner());
        v.get(key).copied()
    }

    fn put(&self, key: [u8; 32], verdict: bool) {
        let mut v = self.verdicts.lock().unwrap_or_else(|p| p.into_inner());
        v.put(key, verdict);
    }
}

/// How far back Transaction Search looks for an invoice id (PayPal allows
/// at most 31 days per request).
/// Events per page of the event list.
const EVENT_PAGE: usize = 300;

/// Pages read in one list call before giving up on reaching the end.
const EVENT_PAGES: usize = 50;

const CURSOR_GONE: &str = "PayPal no longer lists events from the cursor";

const SEARCH_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);

/// Webhook event types → ours (from their rows in [`contract::ROWS`]), and
/// whether the payment is named by the resource's order id
/// (`supplementary_data.related_ids.order_id`): the capture events.
/// `PAYMENT.CAPTURE.REFUNDED` has no status of its own: the capture's,
/// asked again, decides (see [`parse_event`]).
pub fn map_event(event_type: &str) -> (Option<Status>, bool) {
    let about_capture = event_type.starts_with("PAYMENT.CAPTURE.");
    let status = match crate::contract::lookup(contract::ROWS, contract::EVENT, event_type) {
        Some(r) => match r.action {
            crate::contract::Action::Status(s) => Some(s),
            crate::contract::Action::Review => Some(Status::NeedsReview),
            _ => None,
        },
        None => None,
    };
    (status, about_capture)
}

/// An order's status, from its captures: PayPal marks an order `COMPLETED`
/// once a capture was attempted, but the money is in
/// `purchase_units[].payments.captures[]`, and a `PENDING` (eCheck, review)
/// or `DECLINED` capture inside a completed order is not a success. A
/// completed order with no capture (intent `AUTHORIZE`) is authorised only.
pub fn order_status(order: &Value) -> (Option<Status>, String) {
    let word = order["status"].as_str().unwrap_or_default();
    if word != "COMPLETED" {
        return (map_order(word), word.to_string());
    }
    let captures: Vec<&Value> = order["purchase_units"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|u| u["payments"]["captures"].as_array().into_iter().flatten())
        .collect();
    if captures.is_empty() {
        let authorized = order["purchase_units"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|u| u["payments"]["authorizations"].is_array());
        let what = if authorized {
            "authorized, not captured"
        } else {
            "no capture"
        };
        return (Some(Status::Processing), format!("COMPLETED ({what})"));
    }
    // The least settled capture decides: all must be in for a success.
    let rank = |s: Option<Status>| match s {
        Some(Status::Failed) => 0,
        None | Some(Status::Pending | Status::Processing | Status::NeedsReview) => 1,
        Some(Status::Reversed) => 2,
        Some(Status::Cancelled) => 3,
        Some(Status::Succeeded) => 4,
    };
    let worst = captures
        .iter()
        .min_by_key(|c| rank(map_capture(c["status"].as_str().unwrap_or_default())))
        .copied()
        .unwrap_or(&Value::Null);
    let cw = worst["status"].as_str().unwrap_or_default();
    let reason = worst["status_details"]["reason"]
        .as_str()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    (map_capture(cw), format!("COMPLETED capture {cw}{reason}"))
}

/// The money one PayPal amount object names (`{"value": "10.00",
/// "currency_code": "USD"}`), in minor units; empty when absent.
fn amount_of(v: &Value) -> finality_core::Reported {
    match v["currency_code"].as_str() {
        Some(c) => finality_core::Reported::decimal(v["value"].as_str(), c),
        None => finality_core::Reported::default(),
    }
}

/// The money an order took: its captures' amounts added up (a completed
/// order's money is in its captures, and a capture may be for less than
/// the order), or, before any capture, its purchase units' amounts. Amounts
/// in more than one currency cannot be compared with one registration:
/// a mismatch for a human.
pub fn order_money(order: &Value) -> finality_core::Reported {
    let units: Vec<&Value> = order["purchase_units"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let captures: Vec<&Value> = units
        .iter()
        .flat_map(|u| u["payments"]["captures"].as_array().into_iter().flatten())
        .map(|c| &c["amount"])
        .collect();
    let amounts: Vec<&Value> = if captures.is_empty() {
        units.iter().map(|u| &u["amount"]).collect()
    } else {
        captures
    };
    let mut total = finality_core::Reported::default();
    for a in amounts.iter().map(|a| amount_of(a)) {
        if a.mismatch.is_some() {
            return a;
        }
        let (Some(minor), Some(c)) = (a.amount, a.currency) else {
            continue;
        };
        if total.currency.as_deref().is_some_and(|t| t != c) {
            total.mismatch = Some(format!(
                "amount_mismatch: the order's amounts are in more than one currency ({} and {c})",
                total.currency.as_deref().unwrap_or("?")
            ));
            return total;
        }
        total.amount = Some(total.amount.unwrap_or(0).saturating_add(minor));
        total.currency = Some(c);
    }
    total
}

/// The transaction a dispute is about, as PayPal names it.
fn disputed(resource: &Value) -> Option<&str> {
    resource["disputed_transactions"].as_array()?.first()?["seller_transaction_id"].as_str()
}

/// The capture a refund resource belongs to: the id at the end of its `up`
/// link (`…/v2/payments/captures/{id}`).
fn refunded_capture(resource: &Value) -> Option<&str> {
    resource["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == "up")?["href"]
        .as_str()?
        .rsplit('/')
        .next()
}

pub struct PayPalAdapter {
    base_url: String,
    /// The OAuth2 client and its cached token (one refresh at a time).
    credentials: ClientCredentials,
    /// The webhook's id at PayPal (for verification); none: no webhooks.
    webhook_id: Option<String>,
    http: reqwest::Client,
    timeouts: Timeouts,
    config: PayPalConfig,
    /// How far `paypal-transmission-time` may be from now.
    tolerance: Duration,
    verifications: Verifications,
}

/// The hosts PayPal serves its signing certificates from: a
/// `paypal-cert-url` elsewhere is not PayPal's (checked before PayPal is
/// asked to verify, so a forged webhook costs no outbound call).
fn paypal_cert_host(host: &str) -> bool {
    host == "paypal.com" || host.ends_with(".paypal.com")
}

/// A `paypal-*` header, or the rejection naming it.
fn header<'a>(
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
    Ok(())
}

impl PayPalAdapter {
    /// `credentials`: `client_id:secret`, as one secret value.
    pub fn new(
        base_url: &str,
        credentials: &str,
        webhook_id: Option<String>,
        timeouts: Timeouts,
    ) -> Result<Self, ProviderError> {
        let Some((id, secret)) = credentials
            .trim()
            .split_once(':')
            .filter(|(id, secret)| !id.trim().is_empty() && !secret.trim().is_empty())
        else {
            return Err(ProviderError::Permanent {
                message:
                    "PayPal credentials must be `client_id:secret`, neither empty (api_key_env)"
                        .into(),
            });
        };
        let base_url = base_url.trim_end_matches('/').to_string();
        Ok(PayPalAdapter {
            credentials: ClientCredentials::new(
                "PayPal",
                &format!("{base_url}/v1/oauth2/token"),
                id,
                secret,
            ),
            base_url,
            webhook_id,
            http: client(timeouts)?,
            timeouts,
            config: PayPalConfig::default(),
            tolerance: Duration::from_secs(300),
            verifications: Verifications::new(VERIFY_PER_SECOND),
        })
    }

    /// How far `paypal-transmission-time` may be from now (default 5 min).
    pub fn with_tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    pub fn with_config(mut self, config: PayPalConfig) -> Self {
        self.verifications =
            Verifications::new(config.verify_per_second.unwrap_or(VERIFY_PER_SECOND));
        self.config = config;
        self
    }

    /// Find a capture by the invoice id the merchant gave it.
    async fn find(
        &self,
        t: &PollTarget<'_>,
        invoice_id: &str,
    ) -> Result<Observation, ProviderError> {
        let fmt = |ts: Timestamp| {
            chrono::DateTime::from_timestamp_millis(ts.0)
                .unwrap_or_default()
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        };
        let end = t.due_at;
        let start = Timestamp(end.0 - i64::try_from(SEARCH_WINDOW.as_millis()).unwrap_or(0));
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("invoice_id", invoice_id)
            .append_pair("start_date", &fmt(start))
            .append_pair("end_date", &fmt(end))
            .append_pair("fields", "transaction_info")
            .finish();
        let resp = self
            .get(&format!("/v1/reporting/transactions?{query}"))
            .await?;
        if !resp.status().is_success() {
            return Err(failure(resp).await);
        }
        let body: Value = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let found: Vec<Value> = body["transaction_details"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(crate::lookup::one_of(found, |d| {
            let info = &d["transaction_info"];
            let word = info["transaction_status"].as_str().unwrap_or_default();
            (
                info["transaction_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                map_transaction(word),
                format!("transaction_status {word}"),
            )
        }))
    }

    /// `GET /v2/payments/captures/{id}`.
    async fn capture(&self, id: &str) -> Result<Value, ProviderError> {
        let resp = self.get(&format!("/v2/payments/captures/{id}")).await?;
        if !resp.status().is_success() {
            return Err(failure(resp).await);
        }
        resp.json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))
    }

    /// A valid access token (see [`ClientCredentials::bearer`]).
    async fn access_token(&self) -> Result<String, ProviderError> {
        self.credentials.bearer(&self.http, self.timeouts).await
    }

    async fn get(&self, path: &str) -> Result<reqwest::Response, ProviderError> {
        let token = self.access_token().await?;
        let resp = self
            .http
            .get(format!("{}{path}", self.base_url))
            .bearer_auth(&token)
            .header("x-request-id", request_id())
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        if resp.status() == StatusCode::UNAUTHORIZED {
            // Revoked or expired early: the next call fetches a new token.
            self.credentials.invalidate().await;
            return Err(ProviderError::Transient {
                message: "PayPal rejected the access token; a new one is fetched next time".into(),
            });
        }
        Ok(resp)
    }

    /// Ask PayPal whether it sent this webhook.
    async fn verify_with_paypal(
        &self,
        webhook_id: &str,
        headers: &reqwest::header::HeaderMap,
        event: &serde_json::value::RawValue,
    ) -> Result<bool, WebhookError> {
        let body = verification_request(webhook_id, headers, event)?;
        let unverifiable = |detail: String| {
            WebhookError::reject(
                RejectReason::BadSignature,
                format!("could not verify with PayPal: {detail}"),
            )
        };
        let token = self
            .access_token()
            .await
            .map_err(|e| unverifiable(e.to_string()))?;
        let resp = self
            .http
            .post(format!(
                "{}/v1/notifications/verify-webhook-signature",
                self.base_url
            ))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .traced()
            .send()
            .await
            .map_err(|e| unverifiable(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(unverifiable(format!("HTTP {}", resp.status().as_u16())));
        }
        let answer: Value = resp.json().await.map_err(|e| unverifiable(e.to_string()))?;
        Ok(answer["verification_status"] == "SUCCESS")
    }

    /// The verified or listed event as finality's events (a refund or
    /// reversal asks PayPal about its capture first).
    async fn interpret(&self, event: &Value) -> Result<Vec<WebhookEvent>, WebhookError> {
        let event = event.clone();
        let mut events = events_of(&event, self.config.payments)?;
        let first = &mut events[0];
        let refunded = event["event_type"] == "PAYMENT.CAPTURE.REFUNDED";
        let reversed_in_orders =
            event["event_type"] == "PAYMENT.CAPTURE.REVERSED" && first.provider_ref.is_none();
        // A refund or reversal names only its capture: ask the capture
        // whether it is wholly refunded, and (followed as orders) its order.
        if let (true, Some(capture_id)) = (
            refunded || reversed_in_orders,
            refunded_capture(&event["resource"]),
        ) {
            match self.capture(capture_id).await {
                Ok(capture) if refunded => refund_verdict(first, &capture, self.config.payments),
                Ok(capture) => {
                    first.provider_ref = capture["supplementary_data"]["related_ids"]["order_id"]
                        .as_str()
                        .map(String::from);
                }
                // Kept for review with the reason; never dropped.
                Err(e) => {
                    if let Disposition::Review(why) = &mut first.disposition {
                        why.push_str(&format!(" (asking PayPal for the capture: {e})"));
                    }
                }
            }
        }
        Ok(events)
    }

    /// Every event since `query`'s start, following `next` links (at most
    /// [`EVENT_PAGES`] pages). A start PayPal refuses (older than it keeps)
    /// is [`CURSOR_GONE`].
    async fn events_since(
        &self,
        query: &str,
        from_cursor: bool,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut items = Vec::new();
        let mut query = query.to_string();
        for _ in 0..EVENT_PAGES {
            let resp = self
                .get(&format!("/v1/notifications/webhooks-events?{query}"))
                .await?;
            let status = resp.status();
            if !status.is_success() {
                let err = failure(resp).await;
                if status == StatusCode::BAD_REQUEST
                    && from_cursor
                    && err.to_string().contains("start_time")
                {
                    return Err(ProviderError::Permanent {
                        message: format!("{CURSOR_GONE}: {err}"),
                    });
                }
                return Err(err);
            }
            let page: Value = resp
                .json()
                .await
                .map_err(|e| classify_transport(&e, self.timeouts))?;
            if let Some(events) = page["events"].as_array() {
                items.extend(events.iter().cloned());
            }
            let next = page["links"].as_array().and_then(|links| {
                links
                    .iter()
                    .find(|l| l["rel"] == "next")
                    .and_then(|l| l["href"].as_str())
            });
            // PayPal's own host in the link; its query on our base URL.
            // (Its published sample escapes `&` as `&amp;amp;`: undone.)
            match next.and_then(|h| h.split_once('?')) {
                Some((_, q)) => query = q.replace("&amp;amp;", "&").replace("&amp;", "&"),
                None => return Ok(items),
            }
        }
        Err(ProviderError::Transient {
            message: format!(
                "more than {EVENT_PAGES} pages of PayPal events since the cursor: read again"
            ),
        })
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
/// leaves for review until [`PayPalAdapter`] has asked PayPal whether the
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
fn events_of(event: &Value, payments: PaymentObject) -> Result<Vec<WebhookEvent>, WebhookError> {
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
    let reported = match kind {
        "CHECKOUT.ORDER.COMPLETED" => order_money(resource),
        "PAYMENT.CAPTURE.COMPLETED" => amount_of(&resource["amount"]),
        _ => finality_core::Reported::default(),
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

fn money(v: &Value) -> String {
    match (v["value"].as_str(), v["currency_code"].as_str()) {
        (Some(a), Some(c)) => format!("{a} {c}"),
        _ => "an unknown amount".into(),
    }
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

fn resource_is_refund(event: &Value) -> bool {
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

#[async_trait]
impl Provider for PayPalAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let r = match (t.provider_ref, t.merchant_ref) {
            (Some(r), _) => r,
            (None, Some(m)) => return self.find(t, m).await,
            (None, None) => t.require_provider_ref()?,
        };
        let r = &crate::http::segment(r);
        let (path, map): (String, fn(&str) -> Option<Status>) = match (t.kind, self.config.payments)
        {
            (Kind::Refund, _) => (format!("/v2/payments/refunds/{r}"), map_refund),
            (_, PaymentObject::Captures) => (format!("/v2/payments/captures/{r}"), map_capture),
            (_, PaymentObject::Orders) => (format!("/v2/checkout/orders/{r}"), map_order),
        };
        let resp = self.get(&path).await?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(Observation::new(None, "RESOURCE_NOT_FOUND"));
        }
        if !status.is_success() {
            return Err(failure(resp).await);
        }
        let body: Value = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        if t.kind != Kind::Refund && self.config.payments == PaymentObject::Orders {
            let (status, word) = order_status(&body);
            return Ok(Observation::new(status, word).reporting(order_money(&body)));
        }
        let word = body["status"].as_str().unwrap_or_default().to_string();
        Ok(Observation::new(map(&word), word).reporting(amount_of(&body["amount"])))
    }

    async fn verify_webhook(
        &self,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let webhook_id = self
            .webhook_id
            .as_deref()
            .ok_or(WebhookError::NotConfigured)?;
        precheck(headers, now, self.tolerance)?;
        let raw: &serde_json::value::RawValue = serde_json::from_slice(body).map_err(|e| {
            WebhookError::reject(
                RejectReason::BadSignature,
                format!("not JSON, cannot be verified: {e}"),
            )
        })?;
        let key = Verifications::key(headers, body);
        let verdict = match self.verifications.get(&key) {
            Some(v) => v,
            None => {
                if self.verifications.limiter.check().is_err() {
                    return Err(WebhookError::Busy {
                        detail: "PayPal verification calls are over verify_per_second; \
                                 PayPal delivers the webhook again"
                            .into(),
                    });
                }
                let v = self.verify_with_paypal(webhook_id, headers, raw).await?;
                self.verifications.put(key, v);
                v
            }
        };
        if !verdict {
            return Err(WebhookError::reject(
                RejectReason::BadSignature,
                "PayPal answered verification_status FAILURE",
            ));
        }
        let event: Value =
            serde_json::from_str(raw.get()).map_err(|e| WebhookError::Unparseable {
                event_id: String::new(),
                detail: format!("not JSON: {e}"),
            })?;
        self.interpret(&event).await
    }

    fn lists_events(&self) -> bool {
        // PayPal keeps events only for the webhooks an app subscribed.
        self.webhook_id.is_some()
    }

    /// `GET /v1/notifications/webhooks-events` from the cursor (the newest
    /// `create_time` read; `start_time` is inclusive, so events of that
    /// second are read again and deduplicated), newest first, following the
    /// `next` links to the end before the cursor moves (PayPal pages from
    /// the newest: a half-read window would leave its oldest events behind).
    async fn list_events(&self, cursor: Option<&str>) -> Result<EventPage, ProviderError> {
        let mut query = format!("page_size={EVENT_PAGE}");
        if let Some(c) = cursor {
            query.push_str("&start_time=");
            query.extend(url::form_urlencoded::byte_serialize(c.as_bytes()));
        }
        let (items, restarted) = match self.events_since(&query, cursor.is_some()).await {
            Err(ProviderError::Permanent { message }) if message.starts_with(CURSOR_GONE) => {
                let newest = self
                    .events_since(&format!("page_size={EVENT_PAGE}"), false)
                    .await?;
                (newest, Some(message))
            }
            other => (other?, None),
        };
        let newest = items
            .iter()
            .filter_map(|e| e["create_time"].as_str())
            .max()
            .map(String::from);
        let mut events = Vec::with_capacity(items.len());
        for item in items.iter().rev() {
            match self.interpret(item).await {
                Ok(evs) => events.extend(evs),
                Err(e) => events.push(WebhookEvent {
                    event_id: item["id"].as_str().unwrap_or("(no id)").to_string(),
                    provider_ref: item["resource"]["id"].as_str().map(String::from),
                    merchant_ref: None,
                    status: None,
                    provider_status: item["event_type"].as_str().map(String::from),
                    occurred_at: None,
                    reported: Default::default(),
                    disposition: Disposition::Review(format!("listed event unreadable: {e}")),
                }),
            }
        }
        Ok(EventPage {
            events,
            cursor: newest.or_else(|| cursor.map(String::from)),
            more: false,
            restarted,
        })
    }

    /// PayPal payouts live in the Payouts API (`/v1/payments/payouts`),
    /// which this adapter does not speak: refused at registration instead
    /// of being polled at the Orders endpoint.
    fn check_ref(&self, kind: Kind, provider_ref: &str) -> Result<(), String> {
        if kind == Kind::Payout {
            return Err(format!(
                "`{provider_ref}`: PayPal payouts (the Payouts API) are not followed by the paypal \
                 adapter; configure a generic provider for /v1/payments/payouts-item"
            ));
        }
        Ok(())
    }

    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        match (t.provider_ref, t.merchant_ref, t.kind, self.config.payments) {
            (Some(_), ..) => None,
            (None, Some(_), Kind::Payment, PaymentObject::Captures) => None,
            (None, Some(_), Kind::Payment, PaymentObject::Orders) => Some(
                "PayPal orders cannot be searched by invoice id (captures can: set \
                 [providers.NAME.paypal] payments = \"captures\")"
                    .into(),
            ),
            (None, Some(_), ..) => Some(
                "PayPal refunds and payouts cannot be searched by merchant reference; register \
                 them with PayPal's id"
                    .into(),
            ),
            (None, None, ..) => crate::lookup::needs_some_ref(t),
        }
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        let v: Value = serde_json::from_slice(body).ok()?;
        v["resource"]["supplementary_data"]["related_ids"]["order_id"]
            .as_str()
            .or(v["resource"]["id"].as_str())
            .map(String::from)
    }

    fn audit_headers(&self) -> &'static [&'static str] {
        &[
            "paypal-transmission-id",
            "paypal-transmission-time",
            "paypal-cert-url",
        ]
    }

    async fn check(&self) -> Result<String, ProviderError> {
        self.access_token().await?;
        Ok(format!("OAuth token issued by {}", self.base_url))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: true,
            webhooks: self.webhook_id.is_some(),
            lookup: self.config.payments == PaymentObject::Captures,
        }
    }
}
