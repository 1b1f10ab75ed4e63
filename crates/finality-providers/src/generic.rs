//! The generic HTTP/JSON adapter: a provider that is not listed needs only
//! configuration. A URL template, method and headers (values from the
//! environment), a JSON pointer to the status and a map from the provider's
//! words to ours; which HTTP statuses mean "not known yet" and how other
//! errors are classified; and webhooks verified by Standard Webhooks or by
//! an HMAC of the body in a header of the provider's choosing.

use crate::http::{classify_status, classify_transport, client, request_id, Timeouts};
use crate::oauth::ClientCredentials;
use crate::webhook::standard::StandardWebhooks;
use crate::webhook::{RejectReason, WebhookError, WebhookEvent};
use crate::{Capabilities, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use finality_core::{Status, Timestamp};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use std::collections::BTreeMap;

type HmacSha256 = Hmac<Sha256>;

/// `[providers.NAME.generic]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenericConfig {
    /// `{base_url}`, `{provider_ref}`, `{payment_id}` and `{kind}` are
    /// replaced (the last three URL-encoded).
    pub url: String,
    #[serde(default = "default_method")]
    pub method: HttpMethod,
    /// Header values may name environment variables as `${VAR}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON request body for `method = "POST"` queries, with the same
    /// placeholders as `url` (replaced JSON-escaped, inside your quotes):
    /// `'{"order_no": "{provider_ref}"}'`. Sent as `application/json`.
    #[serde(default)]
    pub body: Option<String>,
    /// OAuth2 client credentials: a bearer token fetched, cached and
    /// refreshed before it expires (see docs/PROVIDERS.md).
    #[serde(default)]
    pub oauth2: Option<OAuth2Config>,
    /// Providers that answer 200 with an error code in the body (Alipay's
    /// `code`, many Asian gateways' `errcode`): how to read and classify it.
    #[serde(default)]
    pub answer_errors: Option<AnswerErrors>,
    /// JSON pointer (RFC 6901) to the status in the answer, e.g. `/data/state`.
    pub status_pointer: String,
    /// Provider status → finality status (`pending`, `processing`,
    /// `succeeded`, `failed`, `cancelled`, `reversed`). Anything else is
    /// recorded and treated as not final.
    pub status_map: BTreeMap<String, Status>,
    /// HTTP statuses that mean "not known yet" (not a failure).
    #[serde(default = "default_not_found")]
    pub not_found: Vec<u16>,
    /// Overrides of the default classification by HTTP status:
    /// `{ "409" = "transient" }` (`transient`, `rate_limited`, `permanent`).
    #[serde(default)]
    pub errors: BTreeMap<String, ErrorKind>,
    #[serde(default)]
    pub webhook: Option<GenericWebhook>,
    /// Where a payment registered by merchant reference alone is found:
    /// like `url`, with `{merchant_ref}`. Absent: such payments are not
    /// queried and reach review after their schedule.
    #[serde(default)]
    pub lookup_url: Option<String>,
    /// JSON pointer to the provider's id in the lookup answer (recorded, and
    /// used from then on); the status is read at `status_pointer`.
    #[serde(default)]
    pub lookup_ref_pointer: Option<String>,
}

/// `[providers.NAME.generic.oauth2]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Config {
    /// The token endpoint; `{base_url}` is replaced.
    pub token_url: String,
    /// Environment variables holding the client's id and secret.
    pub client_id_env: String,
    pub client_secret_env: String,
    #[serde(default)]
    pub scope: Option<String>,
}

/// `[providers.NAME.generic.answer_errors]`: an error code inside a 2xx
/// answer is classified like an HTTP error, never read as a status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerErrors {
    /// JSON pointer to the code, e.g. `/code`. An answer without it is
    /// read normally.
    pub pointer: String,
    /// Codes that mean success (e.g. `["0"]`, Alipay `["10000"]`).
    pub ok: Vec<String>,
    /// Codes that mean "not known yet" (not a failure).
    #[serde(default)]
    pub not_found: Vec<String>,
    /// Other codes' classes: `{ "20000" = "transient", "40002" = "permanent" }`.
    /// A code listed nowhere is transient (retried on the schedule,
    /// counted as an error in a row, and its words recorded).
    #[serde(default)]
    pub classes: BTreeMap<String, ErrorKind>,
    /// JSON pointer to the provider's message, for the error text.
    #[serde(default)]
    pub message_pointer: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Post,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Transient,
    RateLimited,
    Permanent,
}

fn default_method() -> HttpMethod {
    HttpMethod::Get
}

fn default_not_found() -> Vec<u16> {
    vec![404]
}

/// `[providers.NAME.generic.webhook]`; secrets come from the provider's
/// `webhook_secret_envs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenericWebhook {
    pub scheme: WebhookScheme,
    /// HMAC: the header carrying the signature.
    #[serde(default)]
    pub header: Option<String>,
    /// HMAC: how the signature is written.
    #[serde(default = "default_encoding")]
    pub encoding: Encoding,
    /// HMAC: a prefix to strip from the header value (e.g. `sha256=`).
    #[serde(default)]
    pub prefix: String,
    /// HMAC: JSON pointer to the event id (Standard Webhooks: the
    /// `webhook-id` header).
    #[serde(default)]
    pub event_id_pointer: Option<String>,
    pub ref_pointer: String,
    pub status_pointer: String,
    /// JSON pointer to the merchant's reference, if events carry it.
    #[serde(default)]
    pub merchant_ref_pointer: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookScheme {
    /// Standard Webhooks (`webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`), secrets `whsec_…`.
    Standard,
    /// HMAC-SHA256 of the raw body under the secret's bytes.
    Hmac,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    Hex,
    Base64,
}

fn default_encoding() -> Encoding {
    Encoding::Hex
}

impl GenericConfig {
    /// Returns the offending field (relative to the `generic` table) and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let names = |t: &str| t.contains("{provider_ref}") || t.contains("{payment_id}");
        if !names(&self.url) && !self.body.as_deref().is_some_and(names) {
            return Err((
                "url",
                "must contain {provider_ref} or {payment_id} (or the body must, for POST)".into(),
            ));
        }
        match (&self.lookup_url, &self.lookup_ref_pointer) {
            (Some(u), Some(p)) => {
                if !u.contains("{merchant_ref}") {
                    return Err(("lookup_url", "must contain {merchant_ref}".into()));
                }
                if !p.starts_with('/') {
                    return Err(("lookup_ref_pointer", "a JSON pointer starts with /".into()));
                }
            }
            (Some(_), None) => {
                return Err((
                    "lookup_ref_pointer",
                    "lookup_url needs lookup_ref_pointer (where the provider's id is)".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(("lookup_url", "lookup_ref_pointer needs a lookup_url".into()))
            }
            (None, None) => {}
        }
        if !self.status_pointer.starts_with('/') {
            return Err(("status_pointer", "a JSON pointer starts with /".into()));
        }
        if let Some(body) = &self.body {
            if self.method != HttpMethod::Post {
                return Err(("body", "a request body needs method = \"POST\"".into()));
            }
            // The template must be JSON once its placeholders are filled.
            let probe = fill(body, "x", json_escape);
            if serde_json::from_str::<Value>(&probe).is_err() {
                return Err((
                    "body",
                    format!("`{body}` is not JSON with its placeholders filled"),
                ));
            }
        }
        if let Some(a) = &self.answer_errors {
            if !a.pointer.starts_with('/') {
                return Err((
                    "answer_errors.pointer",
                    "a JSON pointer starts with /".into(),
                ));
            }
            if a.ok.is_empty() {
                return Err((
                    "answer_errors.ok",
                    "name the code(s) that mean success".into(),
                ));
            }
        }
        if let Some(o) = &self.oauth2 {
            if !(o.token_url.starts_with("http://")
                || o.token_url.starts_with("https://")
                || o.token_url.starts_with("{base_url}"))
            {
                return Err((
                    "oauth2.token_url",
                    format!("`{}` is not an http(s) URL", o.token_url),
                ));
            }
        }
        if self.status_map.is_empty() {
            return Err(("status_map", "map at least one provider status".into()));
        }
        for code in self.errors.keys() {
            if code
                .parse::<u16>()
                .map_or(true, |c| !(400..600).contains(&c))
            {
                return Err(("errors", format!("`{code}` is not an HTTP error status")));
            }
        }
        if let Some(w) = &self.webhook {
            if w.scheme == WebhookScheme::Hmac {
                if w.header.is_none() {
                    return Err(("webhook.header", "the hmac scheme needs a header".into()));
                }
                if w.event_id_pointer.is_none() {
                    return Err((
                        "webhook.event_id_pointer",
                        "the hmac scheme needs a pointer to the event id".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Replace `${VAR}` with the variable's value; a missing one is an error
/// that names it (never the value).
pub fn expand_env(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed ${{ in `{value}`"))?;
        let var = &after[..end];
        out.push_str(
            &std::env::var(var).map_err(|_| format!("environment variable {var} is not set"))?,
        );
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A value as the inside of a JSON string.
fn json_escape(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Fill every placeholder of `template` with `value` escaped by `esc`
/// (validation probe).
fn fill(template: &str, value: &str, esc: impl Fn(&str) -> String) -> String {
    [
        "{base_url}",
        "{provider_ref}",
        "{merchant_ref}",
        "{payment_id}",
        "{kind}",
    ]
    .iter()
    .fold(template.to_string(), |t, p| t.replace(p, &esc(value)))
}

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
    ) -> Result<Self, String> {
        let headers = cfg
            .headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect::<Result<Vec<_>, String>>()?;
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
                    std::env::var(var)
                        .ok()
                        .filter(|v| !v.trim().is_empty())
                        .ok_or_else(|| {
                            format!("environment variable {var} (oauth2) is not set or empty")
                        })
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
            http: client(timeouts).map_err(|e| e.to_string())?,
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
        self.render(template, t, encode)
    }

    /// `template` with the target's values, each escaped by `esc`.
    fn render(&self, template: &str, t: &PollTarget<'_>, esc: fn(&str) -> String) -> String {
        template
            .replace("{base_url}", &self.base_url)
            .replace("{provider_ref}", &esc(t.provider_ref.unwrap_or_default()))
            .replace("{merchant_ref}", &esc(t.merchant_ref.unwrap_or_default()))
            .replace("{payment_id}", &esc(t.payment_id))
            .replace("{kind}", t.kind.as_str())
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
            req = req
                .header("content-type", "application/json")
                .body(self.render(template, t, json_escape));
        }
        if let Some(oauth) = &self.oauth {
            req = req.bearer_auth(oauth.bearer(&self.http, self.timeouts).await?);
        }
        let resp = req
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
        let e = expand_env("Bearer ${FINALITY_GENERIC_TEST_UNSET}").unwrap_err();
        assert!(e.contains("FINALITY_GENERIC_TEST_UNSET"), "{e}");
        assert_eq!(expand_env("plain").unwrap(), "plain");
    }
}
