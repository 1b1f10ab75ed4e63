//! OAuth2 client credentials (RFC 6749 §4.4): a token fetched with the
//! client's id and secret, cached, and refreshed before it expires. PayPal
//! uses it, and so can any provider configured through the generic adapter.
//!
//! Written here rather than with an OAuth crate: the flow is one form POST
//! and a cache, and the part that matters (one refresh for every waiting
//! poll, classified failures) is ours either way.

use crate::http::Traced;
use crate::http::{classify_status, classify_transport, request_id, Timeouts};
use crate::ProviderError;
use serde_json::Value;
use std::time::{Duration, Instant};

struct Token {
    value: String,
    refresh_at: Instant,
}

/// One client's credentials and its cached token.
pub struct ClientCredentials {
    token_url: String,
    client_id: String,
    secret: String,
    scope: Option<String>,
    /// Named in errors ("PayPal refused the client credentials").
    provider: String,
    token: tokio::sync::Mutex<Option<Token>>,
}

impl ClientCredentials {
    pub fn new(provider: &str, token_url: &str, client_id: &str, secret: &str) -> Self {
        ClientCredentials {
            token_url: token_url.to_string(),
            client_id: client_id.to_string(),
            secret: secret.to_string(),
            scope: None,
            provider: provider.to_string(),
            token: tokio::sync::Mutex::new(None),
        }
    }

    pub fn with_scope(mut self, scope: Option<String>) -> Self {
        self.scope = scope;
        self
    }

    /// A valid access token, fetched (once, for every waiting caller) when
    /// none is cached or the cached one is within a fifth of its life (at
    /// most 5 minutes) of expiring.
    pub async fn bearer(
        &self,
        http: &reqwest::Client,
        timeouts: Timeouts,
    ) -> Result<String, ProviderError> {
        let mut slot = self.token.lock().await;
        if let Some(t) = slot.as_ref() {
            if Instant::now() < t.refresh_at {
                return Ok(t.value.clone());
            }
        }
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(scope) = &self.scope {
            form.push(("scope", scope.as_str()));
        }
        let resp = http
            .post(&self.token_url)
            .basic_auth(&self.client_id, Some(&self.secret))
            .header("x-request-id", request_id())
            .form(&form)
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, timeouts))?;
        let status = resp.status();
        if !status.is_success() {
            let headers = resp.headers().clone();
            let body = resp.text().await.unwrap_or_default();
            return Err(match classify_status(status, &headers, &body) {
                ProviderError::Permanent { message } => ProviderError::Permanent {
                    message: format!(
                        "{} refused the client credentials: {message}",
                        self.provider
                    ),
                },
                other => other,
            });
        }
        let body: Value = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, timeouts))?;
        let value = body["access_token"]
            .as_str()
            .ok_or_else(|| ProviderError::Transient {
                message: format!("{} token answer without access_token", self.provider),
            })?
            .to_string();
        let life = Duration::from_secs(body["expires_in"].as_u64().unwrap_or(300));
        let margin = (life / 5).min(Duration::from_secs(300));
        *slot = Some(Token {
            value: value.clone(),
            refresh_at: Instant::now() + life.saturating_sub(margin),
        });
        Ok(value)
    }

    /// Forget the cached token (revoked or expired early: a 401): the next
    /// call fetches a new one.
    pub async fn invalidate(&self) {
        *self.token.lock().await = None;
    }
}
