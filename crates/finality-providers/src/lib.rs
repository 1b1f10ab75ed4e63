//! Provider adapters: how finality asks a payment provider for the status of
//! one operation, and how the answer (or the failure) is classified.
//!
//! An adapter maps the provider's own status vocabulary onto finality's
//! canonical statuses; an unknown provider status is recorded and treated as
//! not final. Failures are data ([`ProviderError`]), never swallowed.
//!
//! # Layout
//! - [`config`]: one provider's `[providers.NAME]` table ([`config::Adapter`], a
//!   tagged enum holding each adapter's own settings, and the shared
//!   [`config::Settings`]), secrets ([`config::Secret`]) and [`config::build`].
//! - [`contract`]: every published status and event code of each adapter,
//!   what finality does with it, and the provider sentence behind it.
//! - [`http`]: the shared HTTP client (timeouts, request ids) and the
//!   classification of HTTP failures.
//! - [`sim`]: the adapter for finality's own simulator.
//! - [`stripe`]: Stripe PaymentIntents and Refunds.
//! - [`adyen`]: Adyen notifications (webhook-only).
//! - [`bakong`]: Bakong KHQR, polled in bulk.
//! - [`paypal`]: PayPal Orders and Refunds (OAuth2), webhooks verified by PayPal.
//! - [`wechat`]: WeChat Pay v3 (signed requests, encrypted notifications).
//! - [`alipay`]: Alipay trade query and RSA2-signed notifications.
//! - [`generic`]: any HTTP/JSON provider, from configuration alone.
//! - [`lookup`]: finding a payment by the merchant's reference.
//! - [`oauth`]: OAuth2 client credentials, cached (PayPal, generic).
//! - [`webhook`]: webhook verifiers (Standard Webhooks, Stripe) and events.
//! - [`setup`]: why an adapter cannot be built ([`setup::SetupError`]) and
//!   why it refuses a registration ([`setup::Refused`]).
#![forbid(unsafe_code)]

pub mod adyen;
pub mod alipay;
pub mod bakong;
pub mod config;
pub mod contract;
pub mod generic;
pub mod http;
pub mod lookup;
pub mod oauth;
pub mod paypal;
pub mod settlement;
pub mod setup;
pub mod sim;
pub mod stripe;
pub mod webhook;
pub mod wechat;

use async_trait::async_trait;
use finality_core::{ErrorClass, Kind, Reported, Status};
use std::time::Duration;

/// What to ask about.
#[derive(Debug, Clone, Copy)]
pub struct PollTarget<'a> {
    pub payment_id: &'a str,
    /// The provider's id; `None` while only the merchant's reference is
    /// known. The engine only hands an adapter a target without it when
    /// [`Provider::unqueryable`] said the adapter can find it.
    pub provider_ref: Option<&'a str>,
    /// The merchant's own reference, when the payment was registered with it.
    pub merchant_ref: Option<&'a str>,
    pub kind: Kind,
    /// Counted polls before this one (for adapters that vary by attempt,
    /// and for the benchmark's provider, which answers by it).
    pub attempt: u32,
    /// The `next_poll_at` this poll was scheduled for (lateness).
    pub due_at: finality_core::Timestamp,
}

impl<'a> PollTarget<'a> {
    /// A target known by the provider's id (tests, checks, the benchmark).
    pub fn by_provider_ref(payment_id: &'a str, provider_ref: &'a str, kind: Kind) -> Self {
        PollTarget {
            payment_id,
            provider_ref: Some(provider_ref),
            merchant_ref: None,
            kind,
            attempt: 0,
            due_at: finality_core::Timestamp(0),
        }
    }

    /// The provider's id, for adapters that can only query by it. The
    /// engine never calls such an adapter without one (see
    /// [`Provider::unqueryable`]); if it did, the error says so plainly.
    pub fn require_provider_ref(&self) -> Result<&'a str, ProviderError> {
        self.provider_ref.ok_or_else(|| self.no_reference())
    }

    /// The error for a target with no reference an adapter can use.
    pub fn no_reference(&self) -> ProviderError {
        ProviderError::Transient {
            message: format!(
                "payment {} has no provider reference and this adapter cannot find one",
                self.payment_id
            ),
        }
    }
}

/// A provider's answer to a status query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The mapped status; `None` when the provider's status is not in the
    /// adapter's map (kept as evidence, treated as not final).
    pub status: Option<Status>,
    /// The provider's own word for it, recorded on the attempt.
    pub provider_status: String,
    /// The provider's id for the operation, when the query was made by
    /// merchant reference and the answer names it: the engine records it so
    /// later polls and webhooks use it.
    pub provider_ref: Option<String>,
    /// The amount, currency and account the answer names: a final status
    /// counts only if they are the registered ones
    /// ([`finality_core::money_mismatch`]).
    pub reported: Reported,
}

impl Observation {
    /// An answer that names no provider id (the usual case).
    pub fn new(status: Option<Status>, provider_status: impl Into<String>) -> Self {
        Observation {
            status,
            provider_status: provider_status.into(),
            provider_ref: None,
            reported: Reported::default(),
        }
    }

    /// The same answer with the money it reports.
    pub fn reporting(mut self, reported: Reported) -> Self {
        self.reported = reported;
        self
    }
}

/// A failed status query, classified. The class decides what the engine does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("rate limited: {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("transient: {message}")]
    Transient { message: String },
    #[error("permanent: {message}")]
    Permanent { message: String },
    /// The provider refused the request about this one payment (a 4xx
    /// other than 401/403/408/429): see [`ErrorClass::Refused`].
    #[error("refused: {message}")]
    Refused { message: String },
}

impl ProviderError {
    pub fn class(&self) -> ErrorClass {
        match self {
            ProviderError::RateLimited { .. } => ErrorClass::RateLimited,
            ProviderError::Transient { .. } => ErrorClass::Transient,
            ProviderError::Permanent { .. } => ErrorClass::Permanent,
            ProviderError::Refused { .. } => ErrorClass::Refused,
        }
    }
}

/// One payment provider, as the poll engine sees it.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Ask for the current status of one operation. Implementations enforce
    /// their own connect and total timeouts.
    async fn query_status(&self, target: &PollTarget<'_>) -> Result<Observation, ProviderError>;

    /// Why this target cannot be asked about, if it cannot: the engine then
    /// makes no call and the payment reaches review after its schedule with
    /// this reason (a webhook or a human can still settle it). The default:
    /// a target is queryable when the provider's id is known.
    fn unqueryable(&self, target: &PollTarget<'_>) -> Option<String> {
        target.provider_ref.is_none().then(|| {
            "the provider's id is unknown and this adapter cannot look a payment up by \
             merchant reference"
                .to_string()
        })
    }

    /// Whether `provider_ref` is an id this adapter can ask about for an
    /// operation of `kind`, checked at registration (422 naming the field).
    /// The default accepts any id.
    fn check_ref(&self, _kind: Kind, _provider_ref: &str) -> Result<(), setup::Refused> {
        Ok(())
    }

    /// Whether the provider takes an operation of `amount` at all, where it
    /// documents a bound (checked at registration, 422 naming `amount`): a
    /// payment it could never have made is a caller's mistake, not a
    /// week of polls. The default: finality's own bound only
    /// ([`finality_core::money::Amount::MAX_MINOR`]).
    fn check_amount(&self, _amount: &finality_core::money::Amount) -> Result<(), setup::Refused> {
        Ok(())
    }

    /// Verify a webhook request and parse its events. Async because some
    /// providers verify by asking them (PayPal). The default: this provider
    /// accepts no webhooks.
    async fn verify_webhook(
        &self,
        _headers: &reqwest::header::HeaderMap,
        _body: &[u8],
        _now: finality_core::Timestamp,
    ) -> Result<Vec<webhook::WebhookEvent>, webhook::WebhookError> {
        Err(webhook::WebhookError::NotConfigured)
    }

    /// [`Provider::verify_webhook`] for a delivery from `source` (the
    /// peer's address; `None` when unknown), for adapters whose
    /// verification spends a budget every sender shares (PayPal asks
    /// PayPal): one address cannot spend it all. The default ignores the
    /// source.
    async fn verify_webhook_from(
        &self,
        _source: Option<std::net::IpAddr>,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: finality_core::Timestamp,
    ) -> Result<Vec<webhook::WebhookEvent>, webhook::WebhookError> {
        self.verify_webhook(headers, body, now).await
    }

    /// The provider reference an *unverified* body claims to be about, so a
    /// rejected webhook can still hurry that payment's next poll. Never
    /// used to apply anything.
    fn peek_ref(&self, _body: &[u8]) -> Option<String> {
        None
    }

    /// Whether a body says it is of the provider's live environment
    /// (`Some(true)`) or its test one (`Some(false)`): Stripe's event
    /// `livemode`, Adyen's notification `live`. `None`: the body does not
    /// say, or the provider has no such field.
    fn body_live(&self, _body: &[u8]) -> Option<bool> {
        None
    }

    /// The environment this adapter's own credentials are for, where they
    /// say it (Stripe's secret key prefix). `None`: they do not.
    fn key_live(&self) -> Option<bool> {
        None
    }

    /// The account an *unverified* body says it is for (Stripe Connect's
    /// event `account`, Adyen's `merchantAccountCode`, Alipay's
    /// `auth_app_id` or `app_id`), so it is verified with that account's
    /// secret. `None`: the provider's own (or the body names none).
    fn webhook_account(&self, _body: &[u8]) -> Option<String> {
        None
    }

    /// Fetch `day`'s report into `dest` and check it by what the provider
    /// gives to check it by.
    async fn fetch_report(
        &self,
        _day: &settlement::fetch::ReportDay,
        _dest: &std::path::Path,
    ) -> Result<settlement::fetch::Fetched, settlement::fetch::FetchError> {
        Err(settlement::fetch::FetchError::Unsupported)
    }

    /// Whether, as one of a provider's accounts, this adapter fetches that
    /// account's own reports (a Stripe connected account's Connect report
    /// type, an Alipay merchant's bill by its `app_auth_token`, a WeChat
    /// Pay sub-merchant's bill by `sub_mchid`), so the fetcher runs it
    /// beside the provider's own. `false`: an account's reports are the
    /// provider's (one SFTP folder, one announced stream).
    fn account_reports(&self) -> bool {
        false
    }

    /// Whether this adapter's reports are announced one by one (Adyen's
    /// `REPORT_AVAILABLE`, as [`webhook::Disposition::Report`]) and fetched
    /// with [`Provider::fetch_announced`], rather than made per day.
    fn announces_reports(&self) -> bool {
        false
    }

    /// Fetch the announced report `name` from `url` into `dest`, checked
    /// as the provider allows.
    async fn fetch_announced(
        &self,
        _name: &str,
        _url: &str,
        _dest: &std::path::Path,
    ) -> settlement::fetch::FetchResult {
        Err(settlement::fetch::FetchError::Unsupported)
    }

    /// Most payments one bulk status request can ask about; 0 when the
    /// provider has no bulk query. Above 1, the engine coalesces due polls
    /// of this provider into [`Provider::query_status_bulk`] calls.
    fn bulk_limit(&self) -> usize {
        0
    }

    /// Ask about several payments in one request: one result per target,
    /// in order. `Err`: the request as a whole failed.
    async fn query_status_bulk(
        &self,
        _targets: &[PollTarget<'_>],
    ) -> Result<Vec<Result<Observation, ProviderError>>, ProviderError> {
        Err(ProviderError::Permanent {
            message: "this adapter has no bulk query".into(),
        })
    }

    /// Whether [`Provider::list_events`] works: the provider keeps a list of
    /// what changed that one call can read many payments' news from.
    fn lists_events(&self) -> bool {
        false
    }

    /// Read the provider's events after `cursor` (from its newest events
    /// when `None`), oldest first. One call, however many payments it
    /// answers: the catch-up that makes per-payment polls a last resort.
    async fn list_events(&self, _cursor: Option<&str>) -> Result<EventPage, ProviderError> {
        Err(ProviderError::Permanent {
            message: "this adapter cannot list events".into(),
        })
    }

    /// The exact body the provider requires in the 2xx answer to a
    /// webhook, if it requires one (Adyen: `[accepted]`).
    fn ack(&self) -> Option<&'static str> {
        None
    }

    /// Header names worth keeping with an inbox row for audit.
    fn audit_headers(&self) -> &'static [&'static str] {
        &[]
    }

    /// Prove the configured credentials work with one harmless read, for
    /// `finality providers check` (setup and on-call). `Ok` says what
    /// answered.
    async fn check(&self) -> Result<String, ProviderError> {
        Err(ProviderError::Permanent {
            message: "this adapter has no credential check".into(),
        })
    }

    /// What this adapter can do with the configuration it was given.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: true,
            webhooks: false,
            lookup: false,
        }
    }
}

/// One page of a provider's event list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventPage {
    /// Oldest first, parsed as the same provider's webhooks are.
    pub events: Vec<webhook::WebhookEvent>,
    /// Where the next read starts, to be saved once `events` are durable;
    /// `None`: where this read started.
    pub cursor: Option<String>,
    /// More events wait past this page: read again at once.
    pub more: bool,
    /// Set when the provider no longer knew the cursor (older than its
    /// retention) and the read started again from its newest events: the
    /// events in between are left to the per-payment polls.
    pub restarted: Option<String>,
}

/// What an adapter can do: poll a status API, accept webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub poll: bool,
    /// Payments registered by merchant reference alone can be found (for
    /// payments; some providers cannot for refunds, see docs/PROVIDERS.md).
    pub lookup: bool,
    /// Webhooks are accepted (the adapter verifies them and a secret is set).
    pub webhooks: bool,
}
