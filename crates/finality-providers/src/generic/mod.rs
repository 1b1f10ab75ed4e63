//! The generic HTTP/JSON adapter: a provider that is not listed needs only
//! configuration. A URL template, method and headers (values from the
//! environment), a JSON pointer to the status and a map from the provider's
//! words to ours; which HTTP statuses mean "not known yet" and how other
//! errors are classified; and webhooks verified by Standard Webhooks or by
//! an HMAC of the body in a header of the provider's choosing.

use crate::http::Traced;
use crate::http::{classify_status, classify_transport, client, request_id, Timeouts};
use crate::oauth::ClientCredentials;
use crate::setup::SetupError;
use crate::webhook::standard::StandardWebhooks;
use crate::webhook::{RejectReason, WebhookError, WebhookEvent};
use crate::{Capabilities, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use finality_core::{Status, Timestamp};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

mod config;
mod money;

use config::{encode, json_escape, render};
pub use config::{
    expand_env, AnswerErrors, Encoding, ErrorKind, GenericConfig, GenericWebhook, HttpMethod,
    OAuth2Config, WebhookScheme,
};
pub use money::AmountUnit;

type HmacSha256 = Hmac<Sha256>;

pub struct GenericAdapter {
    cfg: GenericConfig,
    base_url: String,
    /// Expanded header values (secrets: never logged).
    headers: Vec<(String, String)>,
    http: reqwest::Client,
    timeouts: Timeouts,
    standard: Option<StandardWebhooks>,
    hmac_secrets: Vec<String>,
    oauth: Option<ClientCredentials>,
}

impl GenericAdapter {
    pub fn new(
        base_url: &str,
        cfg: GenericConfig,
        timeouts: Timeouts,
        webhook_secrets: Vec<String>,
        tolerance: std::time::Duration,
    ) -> Result<Self, SetupError> {
        let headers = cfg
            .headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect::<Result<Vec<_>, SetupError>>()?;
        let (standard, hmac_secrets) = match cfg.webhook.as_ref().map(|w| w.scheme) {
            Some(WebhookScheme::Standard) if !webhook_secrets.is_empty() => (
                Some(StandardWebhooks::new(&webhook_secrets, tolerance)?),
                Vec::new(),
            ),
            Some(WebhookScheme::Hmac) => (None, webhook_secrets),
            _ => (None, Vec::new()),
        };
        let base = base_url.trim_end_matches('/');
        let oauth = match &cfg.oauth2 {
            None => None,
            Some(o) => {
                let env = |var: &str| {
                    finality_core::secret::Secret::from_env(var, "oauth2")
                        .map(|s| s.expose().to_string())
                };
                Some(
                    ClientCredentials::new(
                        "the provider",
                        &o.token_url.replace("{base_url}", base),
                        &env(&o.client_id_env)?,
                        &env(&o.client_secret_env)?,
                    )
                    .with_scope(o.scope.clone()),
                )
            }
        };
        Ok(GenericAdapter {
            oauth,
            base_url: base.to_string(),
            headers,
            http: client(timeouts)?,
            timeouts,
            standard,
            hmac_secrets,
            cfg,
        })
    }

    /// The status URL, or the lookup URL while the provider's id is unknown.
    fn url(&self, t: &PollTarget<'_>) -> String {
        let template = match (t.provider_ref, &self.cfg.lookup_url) {
            (None, Some(lookup)) => lookup,
            _ => &self.cfg.url,
        };
        render(template, &self.base_url, t, encode)
    }

    /// An error code inside a 2xx answer: `Ok(None)` when the answer is a
    /// success (or carries no code), `Ok(Some(obs))` for "not known yet",
    /// `Err` classified like an HTTP error.
    fn answer_error(&self, body: &Value) -> Result<Option<Observation>, ProviderError> {
        let Some(a) = &self.cfg.answer_errors else {
            return Ok(None);
        };
        let Some(code) = body.pointer(&a.pointer).and_then(value_text) else {
            return Ok(None);
        };
        if a.ok.contains(&code) {
            return Ok(None);
        }
        if a.not_found.contains(&code) {
            return Ok(Some(Observation::new(None, format!("code {code}"))));
        }
        let words = a
            .message_pointer
            .as_deref()
            .and_then(|p| body.pointer(p))
            .and_then(value_text)
            .unwrap_or_default();
        let message = format!("error code {code} in a 2xx answer: {words}");
        Err(match a.classes.get(&code) {
            Some(ErrorKind::Permanent) => ProviderError::Permanent { message },
            Some(ErrorKind::RateLimited) => ProviderError::RateLimited {
                retry_after: None,
                message,
            },
            Some(ErrorKind::Transient) | None => ProviderError::Transient { message },
        })
    }

    fn map(&self, word: &str) -> Option<Status> {
        self.cfg.status_map.get(word).copied()
    }

    fn classify(
        &self,
        status: reqwest::StatusCode,
        headers: &reqwest::header::HeaderMap,
        body: &str,
    ) -> ProviderError {
        let default = classify_status(status, headers, body);
        match self.cfg.errors.get(&status.as_u16().to_string()) {
            None => default,
            Some(kind) => {
                let message = format!(
                    "HTTP {}: {}",
                    status.as_u16(),
                    body.chars().take(200).collect::<String>().trim()
                );
                match (kind, default) {
                    (ErrorKind::RateLimited, ProviderError::RateLimited { retry_after, .. }) => {
                        ProviderError::RateLimited {
                            retry_after,
                            message,
                        }
                    }
                    (ErrorKind::RateLimited, _) => ProviderError::RateLimited {
                        retry_after: None,
                        message,
                    },
                    (ErrorKind::Transient, _) => ProviderError::Transient { message },
                    (ErrorKind::Permanent, _) => ProviderError::Permanent { message },
                }
            }
        }
    }

    fn event_from(
        &self,
        w: &GenericWebhook,
        id: String,
        v: &Value,
    ) -> Result<WebhookEvent, WebhookError> {
        // Numbers are ids and status codes too (`{"id": 12345, "status": 2}`).
        let word = v.pointer(&w.status_pointer).and_then(value_text);
        let provider_ref = v.pointer(&w.ref_pointer).and_then(value_text);
        if provider_ref.is_none() {
            return Err(WebhookError::Unparseable {
                event_id: id,
                detail: format!("nothing at ref_pointer {}", w.ref_pointer),
            });
        }
        let merchant_ref = w
            .merchant_ref_pointer
            .as_deref()
            .and_then(|p| v.pointer(p))
            .and_then(value_text);
        Ok(WebhookEvent {
            event_id: id,
            provider_ref,
            merchant_ref,
            status: word.as_deref().and_then(|s| self.map(s)),
            provider_status: word,
            occurred_at: None,
            reported: money::read(
                v,
                w.amount_pointer.as_deref(),
                w.currency_pointer.as_deref(),
                self.cfg.amount_unit,
            ),
            disposition: Default::default(),
        })
    }
}

fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[async_trait]
impl Provider for GenericAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let url = self.url(t);
        let rid = request_id();
        let mut req = match self.cfg.method {
            HttpMethod::Get => self.http.get(&url),
            HttpMethod::Post => self.http.post(&url),
        }
        .header("x-request-id", &rid);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(template) = &self.cfg.body {
            req = req.header("content-type", "application/json").body(render(
                template,
                &self.base_url,
                t,
                json_escape,
            ));
        }
        if let Some(oauth) = &self.oauth {
            req = req.bearer_auth(oauth.bearer(&self.http, self.timeouts).await?);
        }
        let resp = req
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            if let Some(oauth) = &self.oauth {
                // Revoked or expired early: the next poll fetches a new one.
                oauth.invalidate().await;
                return Err(ProviderError::Transient {
                    message: "the provider rejected the OAuth2 token; a new one is fetched next \
                              time"
                        .into(),
                });
            }
        }
        if self.cfg.not_found.contains(&status.as_u16()) {
            return Ok(Observation::new(None, format!("http_{}", status.as_u16())));
        }
        if !status.is_success() {
            let headers = resp.headers().clone();
            let body = resp.text().await.unwrap_or_default();
            let err = self.classify(status, &headers, &body);
            tracing::debug!(request_id = %rid, payment_id = t.payment_id, error = %err, "status query failed");
            return Err(err);
        }
        let body: Value = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        if let Some(not_yet) = self.answer_error(&body)? {
            return Ok(not_yet);
        }
        let Some(word) = body.pointer(&self.cfg.status_pointer).and_then(value_text) else {
            return Err(ProviderError::Transient {
                message: format!("no status at {} in the answer", self.cfg.status_pointer),
            });
        };
        let provider_ref = match (t.provider_ref, &self.cfg.lookup_ref_pointer) {
            (None, Some(p)) => {
                let Some(id) = body.pointer(p).and_then(value_text) else {
                    return Err(ProviderError::Transient {
                        message: format!("no provider id at {p} in the lookup answer"),
                    });
                };
                Some(id)
            }
            _ => None,
        };
        Ok(Observation {
            provider_ref,
            status: self.map(&word),
            provider_status: word,
            reported: money::read(
                &body,
                self.cfg.amount_pointer.as_deref(),
                self.cfg.currency_pointer.as_deref(),
                self.cfg.amount_unit,
            ),
        })
    }

    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        match (t.provider_ref, t.merchant_ref, &self.cfg.lookup_url) {
            (Some(_), ..) | (None, Some(_), Some(_)) => None,
            (None, Some(_), None) => Some(
                "the provider's id is unknown and no lookup_url is configured to find it by \
                 merchant reference"
                    .into(),
            ),
            (None, None, _) => crate::lookup::needs_some_ref(t),
        }
    }

    async fn verify_webhook(
        &self,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let w = self
            .cfg
            .webhook
            .as_ref()
            .ok_or(WebhookError::NotConfigured)?;
        let (id, v) = match w.scheme {
            WebhookScheme::Standard => {
                let verifier = self.standard.as_ref().ok_or(WebhookError::NotConfigured)?;
                let verified = verifier.verify(headers, body, now)?;
                let v: Value =
                    serde_json::from_slice(body).map_err(|e| WebhookError::Unparseable {
                        event_id: verified.id.clone(),
                        detail: e.to_string(),
                    })?;
                (verified.id, v)
            }
            WebhookScheme::Hmac => {
                if self.hmac_secrets.is_empty() {
                    return Err(WebhookError::NotConfigured);
                }
                let name = w.header.as_deref().unwrap_or_default();
                let given = headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| {
                        WebhookError::reject(
                            RejectReason::MissingHeader,
                            format!("missing header {name}"),
                        )
                    })?;
                let given = given
                    .trim()
                    .strip_prefix(w.prefix.as_str())
                    .unwrap_or(given.trim());
                let sig = match w.encoding {
                    Encoding::Hex => hex::decode(given).ok(),
                    Encoding::Base64 => B64.decode(given).ok(),
                }
                .ok_or_else(|| {
                    WebhookError::reject(RejectReason::BadSignature, "signature is not decodable")
                })?;
                let ok = self.hmac_secrets.iter().any(|s| {
                    let mut mac = HmacSha256::new_from_slice(s.as_bytes())
                        .expect("HMAC takes keys of any length");
                    mac.update(body);
                    mac.verify_slice(&sig).is_ok()
                });
                if !ok {
                    return Err(WebhookError::reject(
                        RejectReason::BadSignature,
                        format!("no secret of {} matches", self.hmac_secrets.len()),
                    ));
                }
                let v: Value =
                    serde_json::from_slice(body).map_err(|e| WebhookError::Unparseable {
                        event_id: String::new(),
                        detail: e.to_string(),
                    })?;
                let pointer = w.event_id_pointer.as_deref().unwrap_or("/id");
                let Some(id) = v.pointer(pointer).and_then(value_text) else {
                    return Err(WebhookError::Unparseable {
                        event_id: String::new(),
                        detail: format!("nothing at event_id_pointer {pointer}"),
                    });
                };
                (id, v)
            }
        };
        Ok(vec![self.event_from(w, id, &v)?])
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        let w = self.cfg.webhook.as_ref()?;
        let v: Value = serde_json::from_slice(body).ok()?;
        v.pointer(&w.ref_pointer).and_then(value_text)
    }

    async fn check(&self) -> Result<String, ProviderError> {
        let t = PollTarget::by_provider_ref(
            "finality-credential-check",
            "finality-credential-check",
            finality_core::Kind::Payment,
        );
        match self.query_status(&t).await {
            Ok(o) => Ok(format!("status query answered ({})", o.provider_status)),
            Err(e) => Err(e),
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: true,
            webhooks: self.standard.is_some() || !self.hmac_secrets.is_empty(),
            lookup: self.cfg.lookup_url.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_expand_and_missing_ones_are_named() {
        std::env::set_var("FINALITY_GENERIC_TEST_KEY", "k123");
        assert_eq!(
            expand_env("Bearer ${FINALITY_GENERIC_TEST_KEY}").unwrap(),
            "Bearer k123"
        );
        let e = expand_env("Bearer ${FINALITY_GENERIC_TEST_UNSET}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("FINALITY_GENERIC_TEST_UNSET"), "{e}");
        assert_eq!(expand_env("plain").unwrap(), "plain");
    }
}
