//! One provider's configuration (`[providers.NAME]` in `finality.toml`) and
//! the adapter it builds.

use crate::http::Timeouts;
use crate::sim::SimAdapter;
use crate::stripe::StripeAdapter;
use crate::webhook::standard::StandardWebhooks;
use crate::webhook::stripe::StripeSignature;
use crate::{Provider, ProviderError};
use finality_core::{ConfigError, RetryPolicy, Schedule};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// Which adapter speaks to this provider, with the settings only it takes:
/// `adapter = "stripe"` beside `merchant_ref_key`, `adapter = "generic"`
/// beside a `generic` table, and so on. A setting of another adapter is an
/// unknown field, refused when the file is read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "adapter", rename_all = "snake_case")]
pub enum Adapter {
    /// finality's own simulator.
    Sim,
    /// Stripe PaymentIntents and Refunds (`docs/PROVIDERS.md`).
    Stripe {
        /// The PaymentIntent metadata key holding the merchant's reference,
        /// searched when a payment is registered without its PaymentIntent
        /// id (default `merchant_ref`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        merchant_ref_key: Option<String>,
    },
    /// Adyen notifications; nothing is polled (`docs/PROVIDERS.md`).
    Adyen {
        /// Automatic (default) or manual capture.
        #[serde(default)]
        adyen: crate::adyen::AdyenConfig,
    },
    /// Any HTTP/JSON provider, described by its `generic` table.
    Generic {
        generic: Box<crate::generic::GenericConfig>,
    },
    /// Bakong KHQR (`docs/PROVIDERS.md`).
    Bakong,
    /// PayPal Orders and Refunds (`docs/PROVIDERS.md`).
    #[serde(rename = "paypal")]
    PayPal {
        /// What a payment's id names (orders or captures).
        #[serde(default)]
        paypal: crate::paypal::PayPalConfig,
    },
    /// WeChat Pay API v3 (`docs/PROVIDERS.md`): the merchant and its keys.
    #[serde(rename = "wechat")]
    WeChat { wechat: crate::wechat::WeChatConfig },
    /// Alipay open platform (`docs/PROVIDERS.md`): the app and its keys.
    Alipay { alipay: crate::alipay::AlipayConfig },
}

/// The keys of a `[providers.NAME]` table that belong to [`Adapter`]; the
/// rest are [`Settings`].
const ADAPTER_KEYS: [&str; 7] = [
    "adapter",
    "merchant_ref_key",
    "adyen",
    "generic",
    "paypal",
    "wechat",
    "alipay",
];

impl Adapter {
    /// The adapter's name as written in the file.
    pub fn name(&self) -> &'static str {
        match self {
            Adapter::Sim => "sim",
            Adapter::Stripe { .. } => "stripe",
            Adapter::Adyen { .. } => "adyen",
            Adapter::Generic { .. } => "generic",
            Adapter::Bakong => "bakong",
            Adapter::PayPal { .. } => "paypal",
            Adapter::WeChat { .. } => "wechat",
            Adapter::Alipay { .. } => "alipay",
        }
    }
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

/// `[providers.NAME]`: the adapter with its own settings, and the settings
/// every adapter shares. Secrets are never in the file: `api_key_env` and
/// `webhook_secret_envs` name the environment variables that hold them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderConfig {
    #[serde(flatten)]
    pub adapter: Adapter,
    #[serde(flatten)]
    pub settings: Settings,
}

/// The shared settings are read as `cfg.timeout`, as if they were fields of
/// the provider's table (they are, in the file).
impl std::ops::Deref for ProviderConfig {
    type Target = Settings;
    fn deref(&self) -> &Settings {
        &self.settings
    }
}

impl std::ops::DerefMut for ProviderConfig {
    fn deref_mut(&mut self) -> &mut Settings {
        &mut self.settings
    }
}

/// Split the table by key: the adapter's keys to [`Adapter`], the rest to
/// [`Settings`], each refusing fields it does not know. (serde cannot
/// combine `flatten` with `deny_unknown_fields`, hence by hand.)
impl<'de> Deserialize<'de> for ProviderConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let table = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let (adapter, settings): (serde_json::Map<_, _>, serde_json::Map<_, _>) = table
            .into_iter()
            .partition(|(k, _)| ADAPTER_KEYS.contains(&k.as_str()));
        let adapter = Adapter::from_table(adapter).map_err(D::Error::custom)?;
        let settings: Settings =
            inner(serde_json::Value::Object(settings), "").map_err(D::Error::custom)?;
        Ok(ProviderConfig { adapter, settings })
    }
}

impl Adapter {
    /// Read the adapter's keys of a provider's table: `adapter` names the
    /// variant, which takes its own keys; another adapter's key is an
    /// unknown field.
    fn from_table(mut t: serde_json::Map<String, serde_json::Value>) -> Result<Adapter, String> {
        let name = match t.remove("adapter") {
            Some(serde_json::Value::String(n)) => n,
            Some(other) => return Err(format!("adapter: expected a string, found {other}")),
            None => return Err("missing field `adapter`".into()),
        };
        let adapter = match name.as_str() {
            "sim" => Adapter::Sim,
            "bakong" => Adapter::Bakong,
            "stripe" => Adapter::Stripe {
                merchant_ref_key: may(&mut t, "merchant_ref_key")?,
            },
            "adyen" => Adapter::Adyen {
                adyen: may(&mut t, "adyen")?,
            },
            "generic" => Adapter::Generic {
                generic: need(&mut t, "generic")?,
            },
            "paypal" => Adapter::PayPal {
                paypal: may(&mut t, "paypal")?,
            },
            "wechat" => Adapter::WeChat {
                wechat: need(&mut t, "wechat")?,
            },
            "alipay" => Adapter::Alipay {
                alipay: need(&mut t, "alipay")?,
            },
            other => {
                return Err(format!(
                    "adapter: unknown adapter `{other}`, expected one of `sim`, `stripe`, \
                     `adyen`, `generic`, `bakong`, `paypal`, `wechat`, `alipay`"
                ))
            }
        };
        if let Some(key) = t.keys().next() {
            let takes = match &adapter {
                Adapter::Stripe { .. } => "`merchant_ref_key`",
                Adapter::Adyen { .. } => "an `adyen` table",
                Adapter::Generic { .. } => "a `generic` table",
                Adapter::PayPal { .. } => "a `paypal` table",
                Adapter::WeChat { .. } => "a `wechat` table",
                Adapter::Alipay { .. } => "an `alipay` table",
                Adapter::Sim | Adapter::Bakong => "nothing of its own",
            };
            return Err(format!(
                "unknown field `{key}` for the {} adapter, which takes {takes}",
                adapter.name()
            ));
        }
        Ok(adapter)
    }
}

type Table = serde_json::Map<String, serde_json::Value>;

/// A key the adapter requires.
fn need<T: serde::de::DeserializeOwned>(t: &mut Table, key: &str) -> Result<T, String> {
    match t.remove(key) {
        Some(v) => inner(v, key),
        None => Err(format!("missing field `{key}`")),
    }
}

/// A key the adapter may take, with a default.
fn may<T: serde::de::DeserializeOwned + Default>(t: &mut Table, key: &str) -> Result<T, String> {
    t.remove(key)
        .map_or_else(|| Ok(T::default()), |v| inner(v, key))
}

/// Deserialize one part of a provider's table; an error inside it reads
/// `path.inside: problem` so the file loader can name the whole field.
fn inner<T: serde::de::DeserializeOwned>(v: serde_json::Value, key: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        match (key, path.as_str()) {
            ("", ".") => message,
            ("", p) => format!("{p}: {message}"),
            (k, ".") => format!("{k}: {message}"),
            (k, p) => format!("{k}.{p}: {message}"),
        }
    })
}

/// The settings every adapter shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub base_url: String,
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Total time allowed for one status query.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    #[serde(default = "default_connect_timeout", with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// When to poll. Unset, it follows from whether webhooks are
    /// configured: see [`Settings::schedule`].
    #[serde(default, rename = "schedule", skip_serializing_if = "Option::is_none")]
    pub schedule_override: Option<Schedule>,
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
    /// Early looks (polls brought forward by unverified webhooks) one
    /// payment gets in its life. None spends an attempt; the bound keeps
    /// a forger from spending the provider's calls on one payment.
    #[serde(default = "default_nudges_per_payment")]
    pub unverified_nudges_per_payment: u32,
    /// Calls per second to this provider across every node (a token bucket
    /// in the database); none by default.
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// With webhooks configured: this many payments in a row whose final
    /// status a poll learned, with no verified webhook between, mean the
    /// webhooks are down; the provider is then polled by the schedule of a
    /// provider without webhooks until a webhook arrives. 0: never.
    #[serde(default = "default_outage_after")]
    pub webhook_outage_after: u32,
    /// Read the provider's event list this often (at the least; less often
    /// as its newest payment ages): one call catches up every payment whose
    /// webhook was lost, and per-payment polls become the last resort (one
    /// poll at `give_up_after` before review, unless `schedule` says
    /// otherwise). Unset: no catch-up. Only for adapters with an event
    /// list (Stripe).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub catch_up: Option<Duration>,
    /// With webhooks configured: the first poll waits until this share of
    /// payments (0.5–0.99) would have had their final webhook, as learned
    /// from the last 1,000 that did (so no poll is spent while a webhook is
    /// still expected); later polls follow `schedule`. For providers whose
    /// payments settle in a known window (bank transfers, vouchers); on
    /// card-like providers it trades detection time for calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_wait_quantile: Option<f64>,
}

fn default_outage_after() -> u32 {
    5
}

impl Settings {
    /// The schedule in force: the configured one, or the default for how
    /// this provider's statuses arrive. With `catch_up`, the event list
    /// finds what webhooks missed and one poll confirms before review. With
    /// webhooks configured, polls are
    /// the safety net for a lost webhook ([`Schedule::default_webhooks_first`],
    /// chosen with `finality simulate`); without, polls are the only way
    /// and start at once ([`Schedule::default_polls_only`]).
    pub fn schedule(&self) -> Schedule {
        match &self.schedule_override {
            Some(s) => s.clone(),
            None if self.catch_up.is_some() => Schedule::Fixed {
                delays: vec![self.give_up_after],
            },
            None if !self.webhook_secret_envs.is_empty() => Schedule::default_webhooks_first(),
            None => Schedule::default_polls_only(),
        }
    }
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

fn default_nudges_per_payment() -> u32 {
    3
}

fn default_tolerance() -> Duration {
    Duration::from_secs(300)
}

impl ProviderConfig {
    /// A simulator provider at `base_url` with every default.
    pub fn sim(base_url: &str) -> Self {
        ProviderConfig {
            adapter: Adapter::Sim,
            settings: Settings {
                base_url: base_url.to_string(),
                api_key_env: None,
                timeout: default_timeout(),
                connect_timeout: default_connect_timeout(),
                schedule_override: None,
                give_up_after: default_give_up_after(),
                max_attempts: default_max_attempts(),
                pause_on_permanent_error: default_pause(),
                webhook_secret_envs: Vec::new(),
                webhook_tolerance: default_tolerance(),
                unverified_nudges_per_minute: default_nudges(),
                unverified_nudges_per_payment: default_nudges_per_payment(),
                rate_limit: None,
                webhook_outage_after: default_outage_after(),
                catch_up: None,
                webhook_wait_quantile: None,
            },
        }
    }

    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            schedule: self.schedule(),
            give_up_after: self.give_up_after,
            max_attempts: self.max_attempts,
        }
    }

    /// Check what deserialization cannot; the field is relative to the
    /// provider's table.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.schedule()
            .validate()
            .map_err(|e| ConfigError::new("schedule", e.to_string()))?;
        if let Adapter::Generic { generic } = &self.adapter {
            generic.validate().map_err(|e| e.within("generic"))?;
        }
        if let Some(r) = self.rate_limit {
            if !(r.per_second > 0.0 && r.per_second <= 1_000_000.0) {
                return Err(ConfigError::new("rate_limit.per_second", "must be > 0"));
            }
            if r.burst == 0 {
                return Err(ConfigError::new("rate_limit.burst", "must be at least 1"));
            }
        }
        if let Some(q) = self.webhook_wait_quantile {
            if !(0.5..=0.99).contains(&q) {
                return Err(ConfigError::new(
                    "webhook_wait_quantile",
                    format!("must be within 0.5..0.99 (got {q})"),
                ));
            }
            if self.webhook_secret_envs.is_empty() {
                return Err(ConfigError::new(
                    "webhook_wait_quantile",
                    "needs webhooks (webhook_secret_envs): it waits for them",
                ));
            }
        }
        if self.catch_up.is_some_and(|d| d < Duration::from_secs(1)) {
            return Err(ConfigError::new("catch_up", "must be at least 1s"));
        }
        if self.max_attempts == 0 {
            return Err(ConfigError::new("max_attempts", "must be at least 1"));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(ConfigError::new("timeout", "timeouts must be > 0"));
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ConfigError::new(
                "base_url",
                format!("`{}` is not an http(s) URL", self.base_url),
            ));
        }
        Ok(())
    }
}

pub use finality_core::secret::Secret;

/// `var` (named by the provider's setting `what`), read by the one secret
/// reader, the error naming the provider.
fn secret(provider: &str, var: &str, what: &str) -> Result<Secret, ProviderError> {
    Secret::from_env(var, what).map_err(|e| ProviderError::Permanent {
        message: format!("provider `{provider}`: {e}"),
    })
}

/// A webhook secret: an empty one is refused saying what it would mean.
fn webhook_secret(provider: &str, var: &str) -> Result<Secret, ProviderError> {
    Secret::from_env(var, "webhook_secret_envs").map_err(|e| ProviderError::Permanent {
        message: match e {
            finality_core::secret::SecretError::Empty { .. } => {
                format!("provider `{provider}`: {e}: webhooks would be forgeable")
            }
            _ => format!("provider `{provider}`: {e}"),
        },
    })
}

/// Fewest bytes a webhook secret may have. An empty secret makes every
/// webhook forgeable (an HMAC under an empty key is public knowledge); the
/// providers' own secrets are far longer (Stripe `whsec_` 32+ characters,
/// Adyen 32-byte keys, Standard Webhooks 24–64 bytes), so anything short is
/// a truncated paste, refused at start.
pub const MIN_SECRET_BYTES: usize = 16;

/// Refuse a too-short webhook secret, naming its variable. The length that
/// counts is the key's, as the scheme decodes it: an Adyen key is hex, a
/// Standard Webhooks secret `whsec_` + base64.
fn check_secret(name: &str, cfg: &ProviderConfig, secret: &Secret) -> Result<(), ProviderError> {
    let trimmed = secret.expose().trim();
    let standard = match &cfg.adapter {
        Adapter::Sim => true,
        Adapter::Generic { generic } => {
            generic.webhook.as_ref().map(|w| w.scheme)
                == Some(crate::generic::WebhookScheme::Standard)
        }
        _ => false,
    };
    let key = if matches!(cfg.adapter, Adapter::Adyen { .. }) {
        crate::adyen::decode_key(trimmed)
    } else if standard {
        crate::webhook::standard::decode_secret(trimmed)
    } else {
        Ok(trimmed.as_bytes().to_vec())
    };
    let why = match key {
        Err(e) => e,
        Ok(k) if k.len() < MIN_SECRET_BYTES => format!(
            "holds a {}-byte key; a webhook secret needs at least {MIN_SECRET_BYTES} (truncated?)",
            k.len()
        ),
        Ok(_) => return Ok(()),
    };
    Err(ProviderError::Permanent {
        message: format!(
            "provider `{name}`: environment variable {} (webhook_secret_envs) {why}: webhooks \
             would be forgeable",
            secret.var()
        ),
    })
}

/// Build the adapter, reading its secrets from the environment (once: the
/// adapter keeps what it derives from them).
pub fn build(name: &str, cfg: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    let adapter = build_adapter(name, cfg)?;
    if cfg.catch_up.is_some() && !adapter.lists_events() {
        return Err(ProviderError::Permanent {
            message: format!(
                "provider `{name}`: catch_up is set but this adapter has no event list \
                 (Stripe has one; PayPal with webhook_secret_envs naming its webhook id); \
                 remove catch_up"
            ),
        });
    }
    Ok(adapter)
}

fn build_adapter(name: &str, cfg: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    let api_key = cfg
        .api_key_env
        .as_deref()
        .map(|var| secret(name, var, "api_key_env"))
        .transpose()?;
    let timeouts = Timeouts {
        connect: cfg.connect_timeout,
        total: cfg.timeout,
    };
    let mut secrets = Vec::new();
    for var in &cfg.webhook_secret_envs {
        // PayPal's entry is the webhook's id at PayPal, checked by PayPal.
        let secret = if matches!(cfg.adapter, Adapter::PayPal { .. }) {
            secret(name, var, "the PayPal webhook id")?
        } else {
            let secret = webhook_secret(name, var)?;
            check_secret(name, cfg, &secret)?;
            secret
        };
        secrets.push(secret.expose().to_string());
    }
    let permanent = |e: String| ProviderError::Permanent {
        message: format!("provider `{name}`: {e}"),
    };
    let env = |var: &str, what: &str| secret(name, var, what);
    match &cfg.adapter {
        Adapter::Sim => {
            let mut a = SimAdapter::new(
                &cfg.base_url,
                api_key.map(|k| k.expose().to_string()),
                timeouts,
            )?;
            if !secrets.is_empty() {
                let v =
                    StandardWebhooks::new(&secrets, cfg.webhook_tolerance).map_err(permanent)?;
                a = a.with_webhooks(v);
            }
            Ok(Arc::new(a))
        }
        Adapter::Generic { generic } => Ok(Arc::new(
            crate::generic::GenericAdapter::new(
                &cfg.base_url,
                (**generic).clone(),
                timeouts,
                secrets,
                cfg.webhook_tolerance,
            )
            .map_err(permanent)?,
        )),
        Adapter::Alipay { alipay: a } => Ok(Arc::new(
            crate::alipay::AlipayAdapter::new(
                &cfg.base_url,
                a,
                env(&a.private_key_env, "alipay.private_key_env")?.expose(),
                env(&a.alipay_public_key_env, "alipay.alipay_public_key_env")?.expose(),
                timeouts,
            )
            .map_err(permanent)?,
        )),
        Adapter::WeChat { wechat: w } => {
            if !w.platform_keys.is_empty() && w.platform_serial.is_none() {
                // Otherwise the first key would answer for every serial,
                // and a serial no key is named for would not be refused.
                return Err(permanent(
                    "wechat.platform_keys needs wechat.platform_serial (the serial of \
                     platform_public_key_env's key)"
                        .into(),
                ));
            }
            let mut a = crate::wechat::WeChatAdapter::new(
                &cfg.base_url,
                w,
                env(&w.private_key_env, "wechat.private_key_env")?.expose(),
                env(&w.platform_public_key_env, "wechat.platform_public_key_env")?.expose(),
                env(&w.api_v3_key_env, "wechat.api_v3_key_env")?.expose(),
                timeouts,
                cfg.webhook_tolerance,
            )
            .map_err(permanent)?;
            for (serial, var) in &w.platform_keys {
                a = a
                    .with_platform_key(serial, env(var, "wechat.platform_keys")?.expose())
                    .map_err(permanent)?;
            }
            Ok(Arc::new(a))
        }
        Adapter::PayPal { paypal } => {
            let credentials = api_key.ok_or_else(|| {
                permanent("the PayPal adapter needs api_key_env (`client_id:secret`)".into())
            })?;
            // PayPal verifies its own webhooks: what is configured is the
            // webhook's id there, not a secret.
            let webhook_id = secrets.into_iter().next();
            Ok(Arc::new(
                crate::paypal::PayPalAdapter::new(
                    &cfg.base_url,
                    credentials.expose(),
                    webhook_id,
                    timeouts,
                )?
                .with_config(paypal.clone())
                .with_tolerance(cfg.webhook_tolerance),
            ))
        }
        Adapter::Bakong => {
            let token = api_key.ok_or_else(|| {
                permanent("the Bakong adapter needs api_key_env (the bearer token)".into())
            })?;
            Ok(Arc::new(crate::bakong::BakongAdapter::new(
                &cfg.base_url,
                token.expose().to_string(),
                timeouts,
            )?))
        }
        Adapter::Adyen { adyen } => Ok(Arc::new(
            crate::adyen::AdyenAdapter::new(&secrets)
                .map_err(permanent)?
                .with_config(adyen),
        )),
        Adapter::Stripe { merchant_ref_key } => {
            let key = api_key.ok_or_else(|| {
                permanent("the Stripe adapter needs api_key_env (the secret key)".into())
            })?;
            let mut a = StripeAdapter::new(&cfg.base_url, key.expose().to_string(), timeouts)?;
            if let Some(k) = merchant_ref_key {
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
