//! Stripe: PaymentIntents and Refunds by id, secret-key auth, and
//! `Stripe-Signature` webhooks.
//!
//! - Poll: `GET {base}/v1/payment_intents/{id}` (ids `pi_…`, and every
//!   `payment` or `payout`-kind payment that is not a refund) or
//!   `GET {base}/v1/refunds/{id}` (ids `re_…`, and `refund`-kind payments),
//!   with `Authorization: Bearer <secret key>`.
//! - Errors: 404 `resource_missing` is "not known yet" (not a failure);
//!   429 is rate limited (`Retry-After` honoured when sent); 401/403 and other
//!   4xx are permanent (bad key, wrong account); 5xx and timeouts transient.
//! - A PaymentIntent has no `failed` status: a declined attempt returns it to
//!   `requires_payment_method` (with `last_payment_error`), from which the
//!   customer may still pay. finality keeps it open (pending) and records the
//!   decline as the provider status; it ends as succeeded, canceled, or in
//!   review when the schedule runs out, never as failed by guess.

use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::webhook::stripe::{parse_event, StripeSignature, AUDIT_HEADERS};
use crate::webhook::{WebhookError, WebhookEvent};
use crate::{Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use finality_core::{Kind, Timestamp};
use reqwest::StatusCode;

pub use crate::webhook::stripe::map_status;

pub struct StripeAdapter {
    base_url: String,
    secret_key: String,
    http: reqwest::Client,
    timeouts: Timeouts,
    webhooks: Option<StripeSignature>,
}

impl StripeAdapter {
    pub fn new(
        base_url: &str,
        secret_key: String,
        timeouts: Timeouts,
    ) -> Result<Self, ProviderError> {
        if secret_key.trim().is_empty() {
            return Err(ProviderError::Permanent {
                message: "Stripe needs a secret key (api_key_env)".into(),
            });
        }
        Ok(StripeAdapter {
            base_url: base_url.trim_end_matches('/').to_string(),
            secret_key,
            http: client(timeouts)?,
            timeouts,
            webhooks: None,
        })
    }

    /// Accept `Stripe-Signature` webhooks signed with any of the secrets.
    pub fn with_webhooks(mut self, verifier: StripeSignature) -> Self {
        self.webhooks = Some(verifier);
        self
    }

    /// The object a payment is polled as: `(path segment, object name)`.
    fn object_for(t: &PollTarget<'_>) -> (&'static str, &'static str) {
        if t.provider_ref.starts_with("re_")
            || (t.kind == Kind::Refund && !t.provider_ref.starts_with("pi_"))
        {
            ("refunds", "refund")
        } else {
            ("payment_intents", "payment_intent")
        }
    }
}

#[derive(serde::Deserialize)]
struct ObjectBody {
    status: String,
    #[serde(default)]
    last_payment_error: Option<serde_json::Value>,
}

#[async_trait]
impl Provider for StripeAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let (path, object) = Self::object_for(t);
        let url = format!("{}/v1/{path}/{}", self.base_url, t.provider_ref);
        let rid = request_id();
        let resp = self
            .http
            .get(&url)
            .bearer_auth(&self.secret_key)
            .header("x-request-id", &rid)
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(Observation {
                status: None,
                provider_status: "resource_missing".into(),
            });
        }
        if !status.is_success() {
            let err = failure(resp).await;
            tracing::debug!(request_id = %rid, payment_id = t.payment_id, error = %err, "stripe status query failed");
            return Err(err);
        }
        let body: ObjectBody = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let provider_status = match (&body.last_payment_error, body.status.as_str()) {
            (Some(err), "requires_payment_method") => format!(
                "requires_payment_method (last_payment_error: {})",
                err["code"].as_str().unwrap_or("unknown")
            ),
            _ => body.status.clone(),
        };
        Ok(Observation {
            status: map_status(object, &body.status),
            provider_status,
        })
    }

    async fn verify_webhook(
        &self,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let verifier = self.webhooks.as_ref().ok_or(WebhookError::NotConfigured)?;
        verifier.verify(headers, body, now)?;
        Ok(vec![parse_event(body)?])
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        v["data"]["object"]["id"].as_str().map(String::from)
    }

    fn audit_headers(&self) -> &'static [&'static str] {
        AUDIT_HEADERS
    }

    /// Lists one PaymentIntent: works with a restricted read-only key.
    async fn check(&self) -> Result<String, ProviderError> {
        let url = format!("{}/v1/payment_intents?limit=1", self.base_url);
        let resp = self
            .http
            .get(&url)
            .bearer_auth(&self.secret_key)
            .header("x-request-id", request_id())
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(format!("listed PaymentIntents at {}", self.base_url));
        }
        Err(failure(resp).await)
    }

    fn capabilities(&self) -> crate::Capabilities {
        crate::Capabilities {
            poll: true,
            webhooks: self.webhooks.is_some(),
        }
    }
}
