//! What the simulator drew for one payment: its outcome, when it settles,
//! its money and the events its provider would send.

use finality_core::Timestamp;

/// How a payment ends at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed,
    Cancelled,
    /// Stays `processing` forever: finality must send it to review.
    Never,
}

impl Outcome {
    pub(crate) fn wire(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "canceled",
            Outcome::Never => "processing",
        }
    }
}

/// One event in the provider's own log (what an event-list API serves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimEvent {
    pub at: Timestamp,
    pub event_id: String,
    pub payment_id: String,
    pub merchant_ref: Option<String>,
    /// The simulator's status word.
    pub status: &'static str,
    /// The payment's amount (minor units) and currency.
    pub amount: i64,
    pub currency: String,
}

/// Everything drawn for one payment when it is created.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentPlan {
    pub id: String,
    /// The merchant's reference given at creation (Stripe metadata, PayPal
    /// invoice id, WeChat/Alipay `out_trade_no`), if any.
    pub merchant_ref: Option<String>,
    pub created_at: Timestamp,
    pub processing_at: Timestamp,
    /// `None` for [`Outcome::Never`].
    pub settles_at: Option<Timestamp>,
    pub outcome: Outcome,
    pub webhook_lost: bool,
    pub webhook_delayed: bool,
    pub webhook_duplicated: bool,
    pub webhook_reordered: bool,
    /// What it is for, in minor units (1000 EUR-cents unless the creator
    /// said): what the settlement report lists.
    pub amount: i64,
    pub currency: String,
}

impl PaymentPlan {
    /// The provider's status word at time `t`.
    pub fn status_at(&self, t: Timestamp) -> &'static str {
        match self.settles_at {
            Some(s) if t >= s => self.outcome.wire(),
            _ if t >= self.processing_at => "processing",
            _ => "pending",
        }
    }
}
