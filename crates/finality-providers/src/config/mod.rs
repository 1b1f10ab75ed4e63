//! One provider's configuration (`[providers.NAME]` in `finality.toml`) and
//! the adapter it builds.

mod account;
mod build;
mod table;

pub use account::{secret_ref, AccountSpec};
pub use build::{build, build_account, MIN_SECRET_BYTES};
pub use table::TableError;

use finality_core::{ConfigError, RetryPolicy, Schedule};
use serde::{Deserialize, Serialize};
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
pub(crate) const ADAPTER_KEYS: [&str; 7] = [
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

    /// The settlement report this adapter fetches by machine: its
    /// documented zone, ready hour and report. `None`: reports are
    /// imported by hand (`finality reconcile`).
    pub fn settlement_defaults(&self) -> Option<crate::settlement::fetch::Defaults> {
        match self {
            Adapter::Stripe { .. } => Some(crate::stripe::report_run::DEFAULTS),
            Adapter::WeChat { .. } => Some(crate::wechat::bill::DEFAULTS),
            Adapter::Alipay { .. } => Some(crate::alipay::bill::DEFAULTS),
            Adapter::Adyen { .. } => Some(crate::adyen::reports::DEFAULTS),
            Adapter::PayPal { .. } => Some(crate::paypal::sftp::DEFAULTS),
            _ => None,
        }
    }
}

pub(crate) fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

pub(crate) fn default_connect_timeout() -> Duration {
    Duration::from_secs(3)
}

pub(crate) fn default_give_up_after() -> Duration {
    RetryPolicy::default().give_up_after
}

pub(crate) fn default_max_attempts() -> u32 {
    RetryPolicy::default().max_attempts
}

pub(crate) fn default_pause() -> Duration {
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

/// A provider's environment: real money or its test system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Live,
    Test,
}

impl Mode {
    /// `true` for live, as the providers' own fields say it.
    pub fn is_live(self) -> bool {
        self == Mode::Live
    }
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
    /// Which of the provider's environments this table is for: a webhook
    /// whose body says it is of the other one (Stripe `livemode`, Adyen
    /// `live`) is acknowledged and kept as ignored, never applied. Unset:
    /// Stripe's follows from its secret key (`sk_live_…`/`rk_live_…` live,
    /// `sk_test_…`/`rk_test_…` test); other adapters' is not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// With webhooks configured: the first poll waits until this share of
    /// payments (0.5–0.99) would have had their final webhook, as learned
    /// from the last 1,000 that did (so no poll is spent while a webhook is
    /// still expected); later polls follow `schedule`. For providers whose
    /// payments settle in a known window (bank transfers, vouchers); on
    /// card-like providers it trades detection time for calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_wait_quantile: Option<f64>,
    /// The provider's accounts known from the file (`[[providers.NAME.accounts]]`);
    /// more can be added at run time. A payment names one with `account`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<AccountSpec>,
    /// Fetch each day's settlement report and reconcile it, on the
    /// provider's documented schedule (docs/RECONCILIATION.md). Unset:
    /// reports are imported by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settlement: Option<crate::settlement::fetch::SettlementConfig>,
}

pub(crate) fn default_outage_after() -> u32 {
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

pub(crate) fn default_burst() -> u32 {
    1
}

pub(crate) fn default_nudges() -> u32 {
    60
}

pub(crate) fn default_nudges_per_payment() -> u32 {
    3
}

pub(crate) fn default_tolerance() -> Duration {
    Duration::from_secs(300)
}

impl ProviderConfig {
    /// The schedule `[providers.NAME.settlement]` makes for this adapter,
    /// when set.
    pub fn settlement_schedule(
        &self,
    ) -> Result<Option<crate::settlement::fetch::ReportSchedule>, ConfigError> {
        let Some(s) = &self.settlement else {
            return Ok(None);
        };
        let defaults = self.adapter.settlement_defaults().ok_or_else(|| {
            ConfigError::new(
                "settlement",
                format!(
                    "the {} adapter fetches no report (Stripe, Adyen, WeChat Pay, Alipay and \
                     PayPal do; import others with `finality reconcile`)",
                    self.adapter.name()
                ),
            )
        })?;
        let adyen = matches!(self.adapter, Adapter::Adyen { .. });
        let creds = (&s.user, &s.password_env, &s.api_key_env);
        let field = match creds {
            (Some(_), _, _) if !adyen => Some("user"),
            (_, Some(_), _) if !adyen => Some("password_env"),
            (_, _, Some(_)) if !adyen => Some("api_key_env"),
            (Some(_), Some(_), None) | (None, None, Some(_)) => None,
            _ if adyen => Some("user"),
            _ => None,
        };
        if let Some(f) = field {
            let why = if adyen {
                "Adyen's reports are downloaded as the report user: set `user` and \
                 `password_env`, or `api_key_env` (its API key), not both"
            } else {
                "only Adyen's reports are downloaded with their own credentials; this \
                 adapter uses its own"
            };
            return Err(ConfigError::new(f, why).within("settlement"));
        }
        let paypal = matches!(self.adapter, Adapter::PayPal { .. });
        match (&s.sftp, paypal) {
            (Some(_), false) => {
                return Err(
                    ConfigError::new("sftp", "only PayPal's reports are fetched over SFTP")
                        .within("settlement"),
                )
            }
            (None, true) => {
                return Err(ConfigError::new(
                    "sftp",
                    "PayPal's settlement report is on its SFTP server: set \
                     [providers.NAME.settlement.sftp] (host, user, host_key, password_env or \
                     private_key_env)",
                )
                .within("settlement"))
            }
            (Some(sftp), true) => {
                crate::settlement::sftp::parse_host_key(&sftp.host_key).map_err(|e| {
                    ConfigError::new("host_key", e.to_string())
                        .within("sftp")
                        .within("settlement")
                })?;
                if sftp.password_env.is_some() == sftp.private_key_env.is_some() {
                    return Err(ConfigError::new(
                        "password_env",
                        "set one of password_env and private_key_env",
                    )
                    .within("sftp")
                    .within("settlement"));
                }
            }
            (None, false) => {}
        }
        s.schedule(defaults)
            .map(Some)
            .map_err(|e| e.within("settlement"))
    }

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
                settlement: None,
                catch_up: None,
                mode: None,
                webhook_wait_quantile: None,
                accounts: Vec::new(),
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
        self.settlement_schedule()?;
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
        let mut ids = std::collections::HashSet::new();
        for (i, a) in self.accounts.iter().enumerate() {
            a.validate(self)
                .map_err(|e| e.within(&format!("accounts[{i}]")))?;
            if !ids.insert(a.id.as_str()) {
                return Err(ConfigError::new(
                    format!("accounts[{i}].id"),
                    format!("account `{}` is listed twice", a.id),
                ));
            }
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
