//! Webhook verification and parsing. Each scheme checks the signature in
//! constant time against every active secret (so a secret can be rotated
//! without downtime) and the timestamp against a tolerance, before a single
//! byte of the body is trusted.

pub mod mac;
pub mod standard;
pub mod stripe;

use finality_core::{Reported, Status, Timestamp};

/// One event a verified webhook carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEvent {
    /// The provider's event id, the deduplication key.
    pub event_id: String,
    pub provider_ref: Option<String>,
    /// The merchant's reference, where the event names it (finds a payment
    /// registered by merchant reference alone).
    pub merchant_ref: Option<String>,
    /// Mapped status; `None` when the provider's status is not in the map.
    pub status: Option<Status>,
    pub provider_status: Option<String>,
    pub occurred_at: Option<Timestamp>,
    /// The amount, currency and account the event names: compared with the
    /// payment's when it is applied ([`finality_core::money_mismatch`]).
    pub reported: Reported,
    /// What finality does with it once it is durable.
    pub disposition: Disposition,
}

/// What happens to a verified event after it is stored. Whatever it is,
/// the provider gets its 2xx: providers retry anything else for days and
/// then disable the endpoint, so an authentic event that changes nothing
/// must never be refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Disposition {
    /// Applied through `apply` by the inbox processor (the usual case).
    #[default]
    Apply,
    /// Authentic but about nothing finality tracks (a Stripe
    /// `customer.created`, a PayPal event for another resource): stored as
    /// `ignored` with this reason.
    Ignore(String),
    /// Stored as `review` with this reason for a human, never applied (an
    /// Adyen batch item whose signature does not verify, beside items that do).
    Review(String),
    /// A settlement report is ready (Adyen's `REPORT_AVAILABLE`): stored as
    /// `ignored` (no payment changes), and the file kept to be downloaded
    /// and reconciled by the settlement fetcher.
    Report {
        /// The provider's name for the file.
        name: String,
        /// Where to download it from (checked again before any request).
        url: String,
    },
}

/// Why a webhook request was turned away (401), named for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    MissingHeader,
    BadSignature,
    StaleTimestamp,
    FutureTimestamp,
    BadTimestamp,
}

impl RejectReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::MissingHeader => "missing_header",
            RejectReason::BadSignature => "bad_signature",
            RejectReason::StaleTimestamp => "stale_timestamp",
            RejectReason::FutureTimestamp => "future_timestamp",
            RejectReason::BadTimestamp => "bad_timestamp",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// Not authentic (or not provably so): 401, nothing stored.
    #[error("rejected ({}): {detail}", reason.as_str())]
    Rejected {
        reason: RejectReason,
        detail: String,
    },
    /// Authentic but unreadable: kept as failed evidence under `event_id`.
    #[error("signed body could not be parsed: {detail}")]
    Unparseable { event_id: String, detail: String },
    /// This provider has no webhook verification configured.
    #[error("webhooks are not configured for this provider")]
    NotConfigured,
    /// Not checked now (verifying would go over a limit on calls to the
    /// provider): 429, nothing stored; the provider delivers it again.
    #[error("not verified now: {detail}")]
    Busy { detail: String },
}

impl WebhookError {
    pub(crate) fn reject(reason: RejectReason, detail: impl Into<String>) -> Self {
        WebhookError::Rejected {
            reason,
            detail: detail.into(),
        }
    }
}

/// Check a unix timestamp (seconds) against `now` and a tolerance.
pub(crate) fn check_timestamp(
    ts: i64,
    now: Timestamp,
    tolerance: std::time::Duration,
) -> Result<(), WebhookError> {
    let tol = i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX);
    let at = ts.saturating_mul(1000);
    if at < now.millis().saturating_sub(tol) {
        return Err(WebhookError::reject(
            RejectReason::StaleTimestamp,
            format!("timestamp {ts} is older than the tolerance of {tolerance:?}"),
        ));
    }
    if at > now.millis().saturating_add(tol) {
        return Err(WebhookError::reject(
            RejectReason::FutureTimestamp,
            format!("timestamp {ts} is further ahead than the tolerance of {tolerance:?}"),
        ));
    }
    Ok(())
}
