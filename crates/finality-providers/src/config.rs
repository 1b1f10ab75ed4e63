//! One provider's configuration (`[providers.NAME]` in `finality.toml`) and
//! the adapter it builds.

use crate::http::Timeouts;
use crate::sim::SimAdapter;
use crate::stripe::StripeAdapter;
use crate::webhook::standard::StandardWebhooks;
use crate::webhook::stripe::StripeSignature;
use crate::{Provider, ProviderError};
use finality_core::{RetryPolicy, Schedule};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// Which adapter speaks to this provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdapterKind {
    /// finality's own simulator.
    Sim,
    /// Stripe PaymentIntents and Refunds (`docs/PROVIDERS.md`).
    Stripe,
    /// Adyen notifications; nothing is polled (`docs/PROVIDERS.md`).
    Adyen,
    /// Any HTTP/JSON provider, described by a `generic` table.
    Generic,
    /// Bakong KHQR (`docs/PROVIDERS.md`).
    Bakong,
    /// PayPal Orders and Refunds (`docs/PROVIDERS.md`).
    #[serde(rename = "paypal")]
    PayPal,
    /// WeChat Pay API v3 (`docs/PROVIDERS.md`).
    #[serde(rename = "wechat")]
    WeChat,
    /// Alipay open platform (`docs/PROVIDERS.md`).
    Alipay,
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_connect_timeout() -> Duration {
    Duration::from_secs(3)
}
fn default_give_up_after() -> Duration {
    RetryPolicy::default().give_up_after
}
fn default_max_attempts() -> u32 {
    RetryPolicy::default().max_attempts
}
fn default_pause() -> Duration {
    Duration::from_secs(300)
}

/// `[providers.NAME]`. Secrets are never in the file: `api_key_env` names the
/// environment variable that holds the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub adapter: AdapterKind,
    pub base_url: String,
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Total time allowed for one status query.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    #[serde(default = "default_connect_timeout", with = "humantime_serde")]
    pub connect_timeout: Duration,
    #[serde(default = "Schedule::default_quick_then_exponential")]
    pub schedule: Schedule,
    #[serde(default = "default_give_up_after", with = "humantime_serde")]
    pub give_up_after: Duration,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// How long the provider is paused after a permanent error (bad
    /// credentials, bad configuration) before it is tried again.
    #[serde(default = "default_pause", with = "humantime_serde")]
    pub pause_on_permanent_error: Duration,
    /// Environment variables holding the active webhook secrets. Several may
    /// be active at once, so a secret can be rotated without downtime. Empty:
    /// webhooks for this provider are refused (404).
    #[serde(default)]
    pub webhook_secret_envs: Vec<String>,
    /// How far a webhook's signed timestamp may be from now.
    #[serde(default = "default_tolerance", with = "humantime_serde")]
    pub webhook_tolerance: Duration,
    /// A webhook that fails verification but names a tracked payment moves
    /// that payment's next poll forward, at most this many times a minute.
    #[serde(default = "default_nudges")]
    pub unverified_nudges_per_minute: u32,
    /// Calls per second to this provider across every node (a token bucket
    /// in the database); none by default.
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// The generic adapter's description of the provider's API.
    #[serde(default)]
    pub generic: Option<crate::generic::GenericConfig>,
    /// WeChat Pay's merchant id and where its keys are.
    #[serde(default)]
    pub wechat: Option<crate::wechat::WeChatConfig>,
    /// Alipay's app id and where its keys are.
    #[serde(default)]
    pub alipay: Option<crate::alipay::AlipayConfig>,
    /// Stripe: the PaymentIntent metadata key holding the merchant's
    /// reference, searched when a payment is registered without its
    /// PaymentIntent id (default `merchant_ref`).
    #[serde(default)]
    pub merchant_ref_key: Option<String>,
    /// Adyen: automatic (default) or manual capture.
    #[serde(default)]
    pub adyen: Option<crate::adyen::AdyenConfig>,
    /// PayPal: what a payment's id names (orders or captures).
    #[serde(default)]
    pub paypal: Option<crate::paypal::PayPalConfig>,
}

/// `rate_limit = { per_second = 50, burst = 10 }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    pub per_second: f64,
    /// Calls allowed at once after a quiet spell (the bucket's size).
    #[serde(default = "default_burst")]
    pub burst: u32,
}

fn default_burst() -> u32 {
    1
}

fn default_nudges() -> u32 {
    60
}

fn default_tolerance() -> Duration {
    Duration::from_secs(300)
}

impl ProviderConfig {
    /// A simulator provider at `base_url` with every default.
    pub fn sim(base_url: &str) -> Self {
        ProviderConfig {
            adapter: AdapterKind::Sim,
            base_url: base_url.to_string(),
            api_key_env: None,
            timeout: default_timeout(),
            connect_timeout: default_connect_timeout(),
            schedule: Schedule::default_quick_then_exponential(),
            give_up_after: default_give_up_after(),
            max_attempts: default_max_attempts(),
            pause_on_permanent_error: default_pause(),
            webhook_secret_envs: Vec::new(),
            webhook_tolerance: default_tolerance(),
            unverified_nudges_per_minute: default_nudges(),
            rate_limit: None,
            generic: None,
            wechat: None,
            alipay: None,
            merchant_ref_key: None,
            adyen: None,
            paypal: None,
        }
    }

    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            schedule: self.schedule.clone(),
            give_up_after: self.give_up_after,
            max_attempts: self.max_attempts,
        }
    }

    /// Check what deserialization cannot: returns the offending field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.schedule
            .validate()
            .map_err(|e| ("schedule", e.to_string()))?;
        match (&self.generic, self.adapter) {
            (None, AdapterKind::Generic) => {
                return Err((
                    "generic",
                    "the generic adapter needs a [providers.NAME.generic] table".into(),
                ))
            }
            (Some(g), AdapterKind::Generic) => g
                .validate()
                .map_err(|(field, why)| ("generic", format!("{field}: {why}")))?,
            (Some(_), _) => {
                return Err((
                    "generic",
                    "only the generic adapter takes a generic table".into(),
                ))
            }
            (None, _) => {}
        }
        if self.adapter == AdapterKind::WeChat && self.wechat.is_none() {
            return Err((
                "wechat",
                "the wechat adapter needs a [providers.NAME.wechat] table (mchid, serial_no, key variables)"
                    .into(),
            ));
        }
        if self.adapter == AdapterKind::Alipay && self.alipay.is_none() {
            return Err((
                "alipay",
                "the alipay adapter needs a [providers.NAME.alipay] table (app_id, key variables)"
                    .into(),
            ));
        }
        if self.merchant_ref_key.is_some() && self.adapter != AdapterKind::Stripe {
            return Err((
                "merchant_ref_key",
                "only the stripe adapter keeps the merchant reference in metadata".into(),
            ));
        }
        if self.adyen.is_some() && self.adapter != AdapterKind::Adyen {
            return Err((
                "adyen",
                "only the adyen adapter takes an adyen table".into(),
            ));
        }
        if self.paypal.is_some() && self.adapter != AdapterKind::PayPal {
            return Err((
                "paypal",
                "only the paypal adapter takes a paypal table".into(),
            ));
        }
        if let Some(r) = self.rate_limit {
            if !(r.per_second > 0.0 && r.per_second <= 1_000_000.0) {
                return Err(("rate_limit.per_second", "must be > 0".into()));
            }
            if r.burst == 0 {
                return Err(("rate_limit.burst", "must be at least 1".into()));
            }
        }
        if self.max_attempts == 0 {
            return Err(("max_attempts", "must be at least 1".into()));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(("timeout", "timeouts must be > 0".into()));
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err((
                "base_url",
                format!("`{}` is not an http(s) URL", self.base_url),
            ));
        }
        Ok(())
    }
}

/// Fewest bytes a webhook secret may have. An empty secret makes every
/// webhook forgeable (an HMAC under an empty key is public knowledge); the
/// providers' own secrets are far longer (Stripe `whsec_` 32+ characters,
/// Adyen 32-byte keys, Standard Webhooks 24–64 bytes), so anything short is
/// a truncated paste, refused at start.
pub const MIN_SECRET_BYTES: usize = 16;

/// Refuse an empty or too-short webhook secret, naming its variable. The
/// length that counts is the key's, as the scheme decodes it: an Adyen key
/// is hex, a Standard Webhooks secret `whsec_` + base64.
fn check_secret(
    name: &str,
    var: &str,
    cfg: &ProviderConfig,
    value: &str,
) -> Result<(), ProviderError> {
    let trimmed = value.trim();
    let standard = cfg.adapter == AdapterKind::Sim
        || cfg
            .generic
            .as_ref()
            .and_then(|g| g.webhook.as_ref())
            .map(|w| w.scheme)
            == Some(crate::generic::WebhookScheme::Standard);
    let key = if cfg.adapter == AdapterKind::Adyen {
        crate::adyen::decode_key(trimmed)
    } else if standard {
        crate::webhook::standard::decode_secret(trimmed)
    } else {
        Ok(trimmed.as_bytes().to_vec())
    };
    let why = match key {
        _ if trimmed.is_empty() => "is empty".to_string(),
        Err(e) => e,
        Ok(k) if k.len() < MIN_SECRET_BYTES => format!(
            "holds a {}-byte key; a webhook secret needs at least {MIN_SECRET_BYTES} (truncated?)",
            k.len()
        ),
        Ok(_) => return Ok(()),
    };
    Err(ProviderError::Permanent {
        message: format!(
            "provider `{name}`: environment variable {var} (webhook_secret_envs) {why}: webhooks \
             would be forgeable"
        ),
    })
}

/// Build the adapter, reading its secret from the environment.
pub fn build(name: &str, cfg: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    let api_key = match &cfg.api_key_env {
        Some(var) => Some(std::env::var(var).map_err(|_| ProviderError::Permanent {
            message: format!(
                "provider `{name}`: environment variable {var} (api_key_env) is not set"
            ),
        })?),
        None => None,
    };
    let timeouts = Timeouts {
        connect: cfg.connect_timeout,
        total: cfg.timeout,
    };
    let mut secrets = Vec::new();
    for var in &cfg.webhook_secret_envs {
        let value = std::env::var(var).map_err(|_| ProviderError::Permanent {
            message: format!(
                "provider `{name}`: environment variable {var} (webhook_secret_envs) is not set"
            ),
        })?;
        // PayPal's entry is the webhook's id at PayPal, checked by PayPal.
        if cfg.adapter != AdapterKind::PayPal {
            check_secret(name, var, cfg, &value)?;
        } else if value.trim().is_empty() {
            return Err(ProviderError::Permanent {
                message: format!("provider `{name}`: environment variable {var} (the PayPal webhook id) is empty"),
            });
        }
        secrets.push(value);
    }
    if let (Some(var), Some(key)) = (&cfg.api_key_env, &api_key) {
        if key.trim().is_empty() {
            return Err(ProviderError::Permanent {
                message: format!(
                    "provider `{name}`: environment variable {var} (api_key_env) is empty"
                ),
            });
        }
    }
    let permanent = |e: String| ProviderError::Permanent {
        message: format!("provider `{name}`: {e}"),
    };
    match cfg.adapter {
        AdapterKind::Sim => {
            let mut a = SimAdapter::new(&cfg.base_url, api_key, timeouts)?;
            if !secrets.is_empty() {
                let v =
                    StandardWebhooks::new(&secrets, cfg.webhook_tolerance).map_err(permanent)?;
                a = a.with_webhooks(v);
            }
            Ok(Arc::new(a))
        }
        AdapterKind::Generic => {
            let g = cfg
                .generic
                .clone()
                .ok_or_else(|| permanent("the generic adapter needs a generic table".into()))?;
            Ok(Arc::new(
                crate::generic::GenericAdapter::new(
                    &cfg.base_url,
                    g,
                    timeouts,
                    secrets,
                    cfg.webhook_tolerance,
                )
                .map_err(permanent)?,
            ))
        }
        AdapterKind::Alipay => {
            let a = cfg
                .alipay
                .as_ref()
                .ok_or_else(|| permanent("the alipay adapter needs an alipay table".into()))?;
            let env = |var: &str| {
                std::env::var(var)
                    .map_err(|_| permanent(format!("environment variable {var} is not set")))
            };
            Ok(Arc::new(
                crate::alipay::AlipayAdapter::new(
                    &cfg.base_url,
                    a,
                    &env(&a.private_key_env)?,
                    &env(&a.alipay_public_key_env)?,
                    timeouts,
                )
                .map_err(permanent)?,
            ))
        }
        AdapterKind::WeChat => {
            let w = cfg
                .wechat
                .as_ref()
                .ok_or_else(|| permanent("the wechat adapter needs a wechat table".into()))?;
            let env = |var: &str| {
                std::env::var(var)
                    .map_err(|_| permanent(format!("environment variable {var} is not set")))
            };
            let mut a = crate::wechat::WeChatAdapter::new(
                &cfg.base_url,
                w,
                &env(&w.private_key_env)?,
                &env(&w.platform_public_key_env)?,
                &env(&w.api_v3_key_env)?,
                timeouts,
                cfg.webhook_tolerance,
            )
            .map_err(permanent)?;
            if !w.platform_keys.is_empty() && w.platform_serial.is_none() {
                // Otherwise the first key would answer for every serial,
                // and a serial no key is named for would not be refused.
                return Err(permanent(
                    "wechat.platform_keys needs wechat.platform_serial (the serial of \
                     platform_public_key_env's key)"
                        .into(),
                ));
            }
            for (serial, var) in &w.platform_keys {
                a = a.with_platform_key(serial, &env(var)?).map_err(permanent)?;
            }
            Ok(Arc::new(a))
        }
        AdapterKind::PayPal => {
            let credentials = api_key.ok_or_else(|| {
                permanent("the PayPal adapter needs api_key_env (`client_id:secret`)".into())
            })?;
            // PayPal verifies its own webhooks: what is configured is the
            // webhook's id there, not a secret.
            let webhook_id = secrets.into_iter().next();
            Ok(Arc::new(
                crate::paypal::PayPalAdapter::new(
                    &cfg.base_url,
                    &credentials,
                    webhook_id,
                    timeouts,
                )?
                .with_config(cfg.paypal.clone().unwrap_or_default()),
            ))
        }
        AdapterKind::Bakong => {
            let token = api_key.ok_or_else(|| {
                permanent("the Bakong adapter needs api_key_env (the bearer token)".into())
            })?;
            Ok(Arc::new(crate::bakong::BakongAdapter::new(
                &cfg.base_url,
                token,
                timeouts,
            )?))
        }
        AdapterKind::Adyen => Ok(Arc::new(
            crate::adyen::AdyenAdapter::new(&secrets)
                .map_err(permanent)?
                .with_config(&cfg.adyen.clone().unwrap_or_default()),
        )),
        AdapterKind::Stripe => {
            let key = api_key.ok_or_else(|| {
                permanent("the Stripe adapter needs api_key_env (the secret key)".into())
            })?;
            let mut a = StripeAdapter::new(&cfg.base_url, key, timeouts)?;
            if let Some(k) = &cfg.merchant_ref_key {
                a = a.with_merchant_ref_key(k);
            }
            if !secrets.is_empty() {
                let v = StripeSignature::new(secrets, cfg.webhook_tolerance).map_err(permanent)?;
                a = a.with_webhooks(v);
            }
            Ok(Arc::new(a))
        }
    }
}
