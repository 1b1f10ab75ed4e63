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

use crate::http::Traced;
use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::oauth::ClientCredentials;
use crate::paypal::map::{amount_of, refunded_capture};
use crate::paypal::webhook::{events_of, Verifications};
use crate::webhook::{Disposition, RejectReason, WebhookError, WebhookEvent};
use crate::{Capabilities, EventPage, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
pub use config::{PayPalConfig, PaymentObject};
use finality_core::{Kind, Status, Timestamp};
pub use map::{
    map_capture, map_event, map_order, map_refund, map_transaction, order_money, order_status,
};
use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;
pub use webhook::{parse_event, precheck, refund_verdict, verification_request, VERIFY_PER_SECOND};

mod config;
mod map;
pub mod sftp;

mod webhook;

pub mod contract;

/// How far back Transaction Search looks for an invoice id (PayPal allows
/// at most 31 days per request).
/// Events per page of the event list.
pub(crate) const EVENT_PAGE: usize = 300;

/// Pages read in one list call before giving up on reaching the end.
pub(crate) const EVENT_PAGES: usize = 50;

pub(crate) const CURSOR_GONE: &str = "PayPal no longer lists events from the cursor";

pub(crate) const SEARCH_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);

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
    /// The SFTP server of the daily settlement report, when fetched.
    sftp: Option<crate::settlement::sftp::SftpAccess>,
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
            sftp: None,
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

#[async_trait]
impl Provider for PayPalAdapter {
    async fn fetch_report(
        &self,
        day: &crate::settlement::fetch::ReportDay,
        dest: &std::path::Path,
    ) -> crate::settlement::fetch::FetchResult {
        self.fetch_stl(day, dest).await
    }

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
        self.verify_webhook_from(None, headers, body, now).await
    }

    /// Every local check first (transmission time, certificate host, the
    /// headers PayPal is asked about, the event's shape); then a verdict
    /// remembered for this transmission; only then a call to PayPal, paced
    /// by `verify_per_second`, of which a source that sent no genuine
    /// delivery lately may spend a quarter.
    async fn verify_webhook_from(
        &self,
        source: Option<std::net::IpAddr>,
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
        let event: Value =
            serde_json::from_str(raw.get()).map_err(|e| WebhookError::Unparseable {
                event_id: String::new(),
                detail: format!("not JSON: {e}"),
            })?;
        webhook::check_shape(&event)?;
        let key = Verifications::key(headers, body);
        let verdict = match self.verifications.get(&key) {
            Some(v) => v,
            None => {
                self.verifications.may_ask(source)?;
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
        self.verifications.trust(source);
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
    fn check_ref(&self, kind: Kind, provider_ref: &str) -> Result<(), crate::setup::Refused> {
        if kind == Kind::Payout {
            return Err(crate::setup::Refused::NotFollowed {
                reference: provider_ref.to_string(),
                what: "PayPal payouts (the Payouts API) are not followed by the paypal adapter; \
                       configure a generic provider for /v1/payments/payouts-item",
            });
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
