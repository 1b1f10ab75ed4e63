//! The adapter for finality's own simulator (`finality sim serve`), which
//! speaks a small JSON status API: `GET /v1/payments/{ref}` answers
//! `{"id", "status"}` with `pending | processing | succeeded | failed |
//! canceled | reversed`.

use crate::http::Traced;
use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::webhook::standard::{StandardWebhooks, AUDIT_HEADERS};
use crate::webhook::{WebhookError, WebhookEvent};
use crate::{Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use finality_core::{Status, Timestamp};
use reqwest::StatusCode;

/// The simulator's status vocabulary → finality's. Anything else is unknown.
pub const STATUS_MAP: &[(&str, Status)] = &[
    ("pending", Status::Pending),
    ("processing", Status::Processing),
    ("succeeded", Status::Succeeded),
    ("failed", Status::Failed),
    ("canceled", Status::Cancelled),
    ("reversed", Status::Reversed),
];

pub fn map_status(s: &str) -> Option<Status> {
    STATUS_MAP.iter().find(|(k, _)| *k == s).map(|(_, v)| *v)
}

pub struct SimAdapter {
    webhooks: Option<StandardWebhooks>,
    base_url: String,
    api_key: Option<String>,
    http: reqwest::Client,
    timeouts: Timeouts,
}

impl SimAdapter {
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        timeouts: Timeouts,
    ) -> Result<Self, ProviderError> {
        Ok(SimAdapter {
            webhooks: None,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            http: client(timeouts)?,
            timeouts,
        })
    }

    /// Accept webhooks signed (Standard Webhooks) with any of `secrets`.
    pub fn with_webhooks(mut self, verifier: StandardWebhooks) -> Self {
        self.webhooks = Some(verifier);
        self
    }
}

/// The simulator's webhook body: `{"type", "data": {"id", "status"}}`.
#[derive(serde::Deserialize)]
struct WebhookBody {
    data: WebhookData,
}

#[derive(serde::Deserialize)]
struct WebhookData {
    id: String,
    status: String,
    #[serde(default)]
    merchant_ref: Option<String>,
    /// Minor units and currency, when the simulator says (as real
    /// providers do): compared with the registration.
    #[serde(default)]
    amount: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
}

impl SimAdapter {
    fn parse(&self, id: &str, ts: i64, body: &[u8]) -> Result<WebhookEvent, WebhookError> {
        let b: WebhookBody =
            serde_json::from_slice(body).map_err(|e| WebhookError::Unparseable {
                event_id: id.to_string(),
                detail: e.to_string(),
            })?;
        Ok(WebhookEvent {
            event_id: id.to_string(),
            provider_ref: Some(b.data.id),
            merchant_ref: b.data.merchant_ref,
            status: map_status(&b.data.status),
            provider_status: Some(b.data.status),
            occurred_at: Some(Timestamp(ts.saturating_mul(1000))),
            reported: finality_core::Reported {
                pieces: Vec::new(),
                amount: b.data.amount,
                currency: b.data.currency,
                mismatch: None,
            },
            disposition: Default::default(),
        })
    }
}

#[derive(serde::Deserialize)]
struct StatusBody {
    id: String,
    status: String,
    #[serde(default)]
    amount: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
}

#[derive(serde::Deserialize)]
struct SearchBody {
    data: Vec<StatusBody>,
}

#[async_trait]
impl Provider for SimAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let url = match (t.provider_ref, t.merchant_ref) {
            (Some(r), _) => format!("{}/v1/payments/{}", self.base_url, crate::http::segment(r)),
            (None, Some(m)) => format!(
                "{}/v1/payments?merchant_ref={}",
                self.base_url,
                url::form_urlencoded::byte_serialize(m.as_bytes()).collect::<String>()
            ),
            (None, None) => return Err(t.no_reference()),
        };
        let rid = request_id();
        let mut req = self.http.get(&url).header("x-request-id", &rid);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            // Not known to the provider (yet): not a failure, not final.
            return Ok(Observation::new(None, "not_found"));
        }
        if !status.is_success() {
            let err = failure(resp).await;
            tracing::debug!(request_id = %rid, payment_id = t.payment_id, error = %err, "sim status query failed");
            return Err(err);
        }
        if t.provider_ref.is_none() {
            let found: SearchBody = resp
                .json()
                .await
                .map_err(|e| classify_transport(&e, self.timeouts))?;
            return Ok(crate::lookup::one_of(found.data, |b| {
                (b.id, map_status(&b.status), b.status)
            }));
        }
        let body: StatusBody = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let reported = finality_core::Reported {
            pieces: Vec::new(),
            amount: body.amount,
            currency: body.currency,
            mismatch: None,
        };
        Ok(Observation::new(map_status(&body.status), body.status).reporting(reported))
    }

    /// A body's own word on its environment, where it says one
    /// (`"livemode"`, as Stripe's events do); the simulator's own
    /// webhooks say none.
    fn body_live(&self, body: &[u8]) -> Option<bool> {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        v["livemode"].as_bool()
    }

    async fn verify_webhook(
        &self,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let verifier = self.webhooks.as_ref().ok_or(WebhookError::NotConfigured)?;
        let v = verifier.verify(headers, body, now)?;
        Ok(vec![self.parse(&v.id, v.timestamp, body)?])
    }

    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        crate::lookup::needs_some_ref(t)
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        serde_json::from_slice::<WebhookBody>(body)
            .ok()
            .map(|b| b.data.id)
    }

    fn audit_headers(&self) -> &'static [&'static str] {
        AUDIT_HEADERS
    }

    async fn check(&self) -> Result<String, ProviderError> {
        let url = format!("{}/v1/payments/finality-credential-check", self.base_url);
        let mut req = self.http.get(&url).header("x-request-id", request_id());
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if status.is_success() || status == StatusCode::NOT_FOUND {
            return Ok(format!(
                "status API answered {} at {}",
                status.as_u16(),
                self.base_url
            ));
        }
        Err(failure(resp).await)
    }

    fn capabilities(&self) -> crate::Capabilities {
        crate::Capabilities {
            poll: true,
            webhooks: self.webhooks.is_some(),
            lookup: true,
        }
    }
}
