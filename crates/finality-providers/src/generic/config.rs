//! `[providers.NAME.generic]`: what a provider's API looks like, as
//! configuration, and its validation (each error names the field).

use finality_core::ConfigError;
use finality_core::Status;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

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
    /// JSON pointer to the amount in the answer (`/data/amount`): a success
    /// (or reversal) is then checked against the registered money, as
    /// every adapter's is, and one for other money goes to review. Without
    /// it `config check` warns that success is not money-checked.
    #[serde(default)]
    pub amount_pointer: Option<String>,
    /// JSON pointer to the amount's ISO 4217 currency (`/data/currency`).
    #[serde(default)]
    pub currency_pointer: Option<String>,
    /// How the provider writes amounts, in answers and webhooks alike.
    #[serde(default)]
    pub amount_unit: super::money::AmountUnit,
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
    /// JSON pointers to the event's amount and currency, written in the
    /// table's `amount_unit` (see [`GenericConfig::amount_pointer`]).
    #[serde(default)]
    pub amount_pointer: Option<String>,
    #[serde(default)]
    pub currency_pointer: Option<String>,
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
    /// Why `config check` warns about a generic provider: nothing it says
    /// about a success is compared with the registered money.
    pub fn money_unchecked(&self) -> Option<String> {
        let poll = self.amount_pointer.is_none();
        let webhook = self
            .webhook
            .as_ref()
            .is_some_and(|w| w.amount_pointer.is_none());
        let (tables, what) = match (poll, webhook) {
            (false, false) => return None,
            (true, true) => ("[generic] or [generic.webhook]", "a success"),
            (true, false) => ("[generic]", "a success read by a status query"),
            (false, true) => ("[generic.webhook]", "a success a webhook reports"),
        };
        Some(format!(
            "no amount_pointer in {tables}: {what} is not checked against the registered amount"
        ))
    }

    /// Returns the offending field (relative to the `generic` table) and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let names = |t: &str| t.contains("{provider_ref}") || t.contains("{payment_id}");
        if !names(&self.url) && !self.body.as_deref().is_some_and(names) {
            return Err(ConfigError::new(
                "url",
                "must contain {provider_ref} or {payment_id} (or the body must, for POST)",
            ));
        }
        match (&self.lookup_url, &self.lookup_ref_pointer) {
            (Some(u), Some(p)) => {
                if !u.contains("{merchant_ref}") {
                    return Err(ConfigError::new(
                        "lookup_url",
                        "must contain {merchant_ref}",
                    ));
                }
                if !p.starts_with('/') {
                    return Err(ConfigError::new(
                        "lookup_ref_pointer",
                        "a JSON pointer starts with /",
                    ));
                }
            }
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "lookup_ref_pointer",
                    "lookup_url needs lookup_ref_pointer (where the provider's id is)",
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "lookup_url",
                    "lookup_ref_pointer needs a lookup_url",
                ))
            }
            (None, None) => {}
        }
        if !self.status_pointer.starts_with('/') {
            return Err(ConfigError::new(
                "status_pointer",
                "a JSON pointer starts with /",
            ));
        }
        if let Some(body) = &self.body {
            if self.method != HttpMethod::Post {
                return Err(ConfigError::new(
                    "body",
                    "a request body needs method = \"POST\"",
                ));
            }
            // The template must be JSON once its placeholders are filled.
            let probe = render(
                body,
                "x",
                &crate::PollTarget::by_provider_ref("x", "x", finality_core::Kind::Payment),
                json_escape,
            );
            if serde_json::from_str::<Value>(&probe).is_err() {
                return Err(ConfigError::new(
                    "body",
                    format!("`{body}` is not JSON with its placeholders filled"),
                ));
            }
        }
        if let Some(a) = &self.answer_errors {
            if !a.pointer.starts_with('/') {
                return Err(ConfigError::new(
                    "answer_errors.pointer",
                    "a JSON pointer starts with /",
                ));
            }
            if a.ok.is_empty() {
                return Err(ConfigError::new(
                    "answer_errors.ok",
                    "name the code(s) that mean success",
                ));
            }
        }
        if let Some(o) = &self.oauth2 {
            if !(o.token_url.starts_with("http://")
                || o.token_url.starts_with("https://")
                || o.token_url.starts_with("{base_url}"))
            {
                return Err(ConfigError::new(
                    "oauth2.token_url",
                    format!("`{}` is not an http(s) URL", o.token_url),
                ));
            }
        }
        if self.status_map.is_empty() {
            return Err(ConfigError::new(
                "status_map",
                "map at least one provider status",
            ));
        }
        for code in self.errors.keys() {
            if code
                .parse::<u16>()
                .map_or(true, |c| !(400..600).contains(&c))
            {
                return Err(ConfigError::new(
                    "errors",
                    format!("`{code}` is not an HTTP error status"),
                ));
            }
        }
        super::money::validate(
            "",
            self.amount_pointer.as_deref(),
            self.currency_pointer.as_deref(),
            self.amount_unit,
        )?;
        if let Some(w) = &self.webhook {
            super::money::validate(
                "webhook.",
                w.amount_pointer.as_deref(),
                w.currency_pointer.as_deref(),
                self.amount_unit,
            )?;
            if w.scheme == WebhookScheme::Hmac {
                if w.header.is_none() {
                    return Err(ConfigError::new(
                        "webhook.header",
                        "the hmac scheme needs a header",
                    ));
                }
                if w.event_id_pointer.is_none() {
                    return Err(ConfigError::new(
                        "webhook.event_id_pointer",
                        "the hmac scheme needs a pointer to the event id",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Replace `${VAR}` with the variable's value; a missing one is an error
/// that names it (never the value).
pub fn expand_env(value: &str) -> Result<String, crate::setup::SetupError> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| crate::setup::SetupError::Unclosed(value.to_string()))?;
        let var = &after[..end];
        out.push_str(finality_core::secret::Secret::from_env(var, "a ${VAR} reference")?.expose());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A value in a URL: one path segment's encoding, valid in a query too.
pub(super) fn encode(s: &str) -> String {
    crate::http::segment(s)
}

/// A value as the inside of a JSON string.
pub(super) fn json_escape(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// `template` with a target's values, each escaped by `esc` (URL-encoding
/// for URLs, JSON-escaping for bodies): the one place placeholders are
/// filled, for queries and for validating a template.
pub(super) fn render(
    template: &str,
    base_url: &str,
    t: &crate::PollTarget<'_>,
    esc: fn(&str) -> String,
) -> String {
    template
        .replace("{base_url}", base_url)
        .replace("{provider_ref}", &esc(t.provider_ref.unwrap_or_default()))
        .replace("{merchant_ref}", &esc(t.merchant_ref.unwrap_or_default()))
        .replace("{payment_id}", &esc(t.payment_id))
        .replace("{kind}", t.kind.as_str())
}
