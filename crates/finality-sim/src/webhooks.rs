//! The simulator's webhook sender: real HTTP POSTs signed per Standard
//! Webhooks, with the loss, delay, duplication and reordering drawn for each
//! payment. Deliveries are queued by due time on the shared clock, so the
//! same queue drives a wall-clock sender and a virtual-time demo.

use crate::plan::{Outcome, PaymentPlan};
use crate::wire::WireFormat;
use finality_core::Timestamp;
use std::time::Duration;

/// Where webhooks go and how they are signed.
#[derive(Clone)]
pub struct WebhookTarget {
    pub url: String,
    pub format: WireFormat,
}

impl WebhookTarget {
    /// Standard Webhooks with the decoded `whsec_` key bytes.
    pub fn standard(url: impl Into<String>, key: Vec<u8>) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::Standard { key },
        }
    }

    /// Adyen notifications signed with the hex HMAC `key`.
    pub fn adyen(url: impl Into<String>, key: Vec<u8>) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::Adyen {
                key,
                merchant_account: "FinalitySimulator".into(),
            },
        }
    }

    /// Alipay notifications.
    pub fn alipay(url: impl Into<String>) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::Alipay,
        }
    }

    /// WeChat Pay notifications encrypted under `api_v3_key`.
    pub fn wechat(url: impl Into<String>, api_v3_key: [u8; 32]) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::WeChat { api_v3_key },
        }
    }

    /// PayPal events for the webhook `webhook_id`.
    pub fn paypal(url: impl Into<String>, webhook_id: impl Into<String>) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::PayPal {
                webhook_id: webhook_id.into(),
            },
        }
    }

    /// "Acme" events (the generic adapter's test provider) under `secret`.
    pub fn acme(url: impl Into<String>, secret: impl Into<String>) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::Acme {
                secret: secret.into(),
            },
        }
    }

    /// Stripe events with `Stripe-Signature` under `secret`.
    pub fn stripe(url: impl Into<String>, secret: impl Into<String>) -> Self {
        WebhookTarget {
            url: url.into(),
            format: WireFormat::Stripe {
                secret: secret.into(),
            },
        }
    }
}

/// One planned delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub at: Timestamp,
    pub event_id: String,
    pub provider_ref: String,
    pub merchant_ref: Option<String>,
    pub status: &'static str,
    pub tries: u32,
    /// The payment's amount (minor units) and currency, which each
    /// provider's notification names.
    pub amount: i64,
    pub currency: String,
}

impl Delivery {
    pub(crate) fn money(&self) -> crate::wire::Money<'_> {
        crate::wire::Money {
            amount: self.amount,
            currency: &self.currency,
        }
    }

    /// The merchant's order number (WeChat Pay, Alipay): the merchant
    /// reference, or the payment's id when it was created without one.
    pub(crate) fn order_no(&self) -> &str {
        self.merchant_ref.as_deref().unwrap_or(&self.provider_ref)
    }
}

pub(crate) const MAX_TRIES: u32 = 5;

/// The deliveries a plan implies: `processing`, then the final status, with
/// the drawn misbehaviour applied.
pub(crate) fn deliveries(plan: &PaymentPlan, delay: Duration) -> Vec<Delivery> {
    let d = |status: &'static str, at: Timestamp| Delivery {
        at,
        event_id: format!("evt_{}_{status}", plan.id),
        provider_ref: plan.id.clone(),
        merchant_ref: plan.merchant_ref.clone(),
        status,
        tries: 0,
        amount: plan.amount,
        currency: plan.currency.clone(),
    };
    let mut out = Vec::new();
    let Some(settled) = plan.settles_at else {
        out.push(d("processing", plan.processing_at));
        return out;
    };
    let final_at = if plan.webhook_delayed {
        settled.plus(delay)
    } else {
        settled
    };
    let status = match plan.outcome {
        Outcome::Succeeded => "succeeded",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "canceled",
        Outcome::Never => "processing",
    };
    if !plan.webhook_lost {
        out.push(d(status, final_at));
        if plan.webhook_duplicated {
            out.push(d(status, final_at.plus(Duration::from_secs(1))));
        }
    }
    if plan.webhook_reordered {
        out.push(d("processing", final_at.plus(Duration::from_millis(500))));
    } else {
        out.push(d("processing", plan.processing_at));
    }
    out
}
