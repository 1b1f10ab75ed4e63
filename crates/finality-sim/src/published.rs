//! Any word a provider publishes, said about one simulated payment: the
//! status its API answers with from now on ([`Simulator::answer_with`]), or a
//! notification it sends at once ([`Simulator::notify_word`]), each in the
//! provider's own format.
//!
//! The simulator's model speaks five words (`pending` … `canceled`); real
//! providers publish dozens (Stripe's event types, Adyen's event codes,
//! WeChat Pay's trade states). This is how every one of them reaches
//! finality over HTTP, so each row of each adapter's map has a black-box
//! test. What a word's notification carries (which object a Stripe event
//! type is about, which reference an Adyen code names) follows the
//! providers' published descriptions, never the adapters' code.
//!
//! Over HTTP: `POST /sim/payments/{id}/answer {"word"}` and
//! `POST /sim/payments/{id}/notify {"word", "success"?}`.

use crate::model::Simulator;
use crate::plan::PaymentPlan;
use crate::wire::{Money, WireFormat};
use serde_json::{json, Value};

impl Simulator {
    /// From now on, the provider's status API answers `word` for payment
    /// `id` (the status field of its answer), whatever the plan says.
    pub fn answer_with(&self, id: &str, word: &str) {
        crate::model::lock(&self.words).insert(id.to_string(), word.to_string());
    }

    /// The word set by [`Simulator::answer_with`] for `id`, if any.
    pub fn word_for(&self, id: &str) -> Option<String> {
        crate::model::lock(&self.words).get(id).cloned()
    }

    /// Send, now, the notification the webhook target's provider sends
    /// with `word` for payment `id` (`success` is Adyen's flag; the others
    /// ignore it). Returns the HTTP status the receiver answered and the
    /// notification's event id.
    pub async fn notify_word(
        &self,
        id: &str,
        word: &str,
        success: bool,
    ) -> Result<(u16, String), NotifyError> {
        let plan = self
            .plan(id)
            .ok_or_else(|| NotifyError::NoPayment(id.to_string()))?;
        let target = self.lock_target().clone().ok_or(NotifyError::NoTarget)?;
        let now = self.now();
        let ts = now.millis() / 1000;
        let n = self
            .counters
            .queue_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let event_id = format!("evt_{id}_{}_{n}", word.replace(['.', ':'], "_"));
        let m = Money::of(&plan);
        let (body, headers): (String, Vec<(&'static str, String)>) = match &target.format {
            WireFormat::Stripe { secret } => {
                let body = json!({"id": event_id, "object": "event", "created": ts,
                                  "type": word, "livemode": false,
                                  "data": {"object": stripe_object_of(word, &plan, m)}})
                .to_string();
                let sig = crate::schemes::stripe_signature(secret, ts, body.as_bytes());
                (body, vec![("stripe-signature", sig)])
            }
            WireFormat::Adyen {
                key,
                merchant_account,
            } => {
                let (psp, original) = adyen_references(word, &plan.id);
                let item = crate::wire::adyen_item(
                    key,
                    merchant_account,
                    crate::wire::AdyenItem {
                        psp: &psp,
                        original: &original,
                        merchant_ref: plan.merchant_ref.as_deref().unwrap_or("order"),
                        code: word,
                        success,
                        money: m,
                    },
                );
                let body = json!({"live": "false",
                                  "notificationItems": [{"NotificationRequestItem": item}]});
                (body.to_string(), Vec::new())
            }
            WireFormat::WeChat { api_v3_key } => {
                let order_no = plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone());
                // WeChat Pay notifies a refund's `refund_status` and a
                // trade's `trade_state`: the simulator's refunds are the
                // payments whose id starts `rf`.
                let refund = plan.id.starts_with("rf");
                let resource = if refund {
                    json!({"mchid": crate::wire::wechat_keys::MCHID,
                           "out_trade_no": "unknown", "out_refund_no": order_no,
                           "refund_id": crate::wire::wechat_refund_id(&plan.id),
                           "refund_status": word,
                           "amount": {"refund": m.amount, "total": m.amount,
                                      "currency": m.currency}})
                } else {
                    json!({"mchid": crate::wire::wechat_keys::MCHID,
                           "appid": crate::wire::wechat_keys::APPID,
                           "out_trade_no": order_no,
                           "transaction_id": crate::wire::wechat_transaction_id(&plan.id),
                           "trade_state": word,
                           "amount": {"total": m.amount, "currency": m.currency}})
                };
                let kind = if refund { "refund" } else { "transaction" };
                crate::wire::wechat_notification_of(api_v3_key, &event_id, kind, &resource, ts)
                    .ok_or(NotifyError::Sign)?
            }
            WireFormat::Alipay => {
                let order_no = plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone());
                let form = crate::wire::alipay_notification_for(
                    &event_id, &plan.id, &order_no, word, m, None,
                )
                .ok_or(NotifyError::Sign)?;
                (
                    form,
                    vec![("content-type", "application/x-www-form-urlencoded".into())],
                )
            }
            WireFormat::PayPal { webhook_id } => {
                let time = now.to_rfc3339();
                crate::wire::paypal_event_of(
                    &event_id,
                    word,
                    &paypal_resource(word, &plan, m),
                    webhook_id,
                    &time,
                )
            }
            WireFormat::Standard { .. } | WireFormat::Acme { .. } => {
                return Err(NotifyError::NoWords)
            }
        };
        let mut req = self
            .http
            .post(&target.url)
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let resp = req.body(body).send().await.map_err(NotifyError::Send)?;
        Ok((resp.status().as_u16(), event_id))
    }
}

/// Why a published word could not be notified.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("no payment `{0}`")]
    NoPayment(String),
    #[error("no webhook target is set")]
    NoTarget,
    #[error("cannot sign the notification")]
    Sign,
    #[error("this webhook format has no published words")]
    NoWords,
    #[error("{0}")]
    Send(#[source] reqwest::Error),
}

/// The object a Stripe event type is about, as Stripe's event descriptions
/// say ("Occurs when a PaymentIntent has successfully completed payment",
/// "Occurs whenever a charge is refunded", …), for the payment `plan`:
/// PaymentIntent events carry the PaymentIntent in the status the event
/// names; charge, dispute and refund events name the PaymentIntent in
/// `payment_intent`; other families carry an object of their own kind.
pub fn stripe_object_of(event_type: &str, plan: &PaymentPlan, m: Money<'_>) -> Value {
    let currency = m.currency.to_ascii_lowercase();
    let (family, action) = event_type.rsplit_once('.').unwrap_or((event_type, ""));
    match family {
        "payment_intent" => {
            let status = match action {
                "succeeded" => "succeeded",
                "canceled" => "canceled",
                "processing" => "processing",
                "requires_action" => "requires_action",
                "amount_capturable_updated" => "requires_capture",
                // payment_failed returns it to requires_payment_method;
                // created and partially_funded start there.
                _ => "requires_payment_method",
            };
            let received = if status == "succeeded" { m.amount } else { 0 };
            json!({"id": plan.id, "object": "payment_intent", "status": status,
                   "amount": m.amount, "amount_received": received, "currency": currency})
        }
        "charge" => json!({"id": format!("ch_{}", plan.id), "object": "charge",
                           "payment_intent": plan.id, "amount": m.amount, "currency": currency,
                           "amount_refunded": if action == "refunded" { m.amount } else { 0 },
                           "refunded": action == "refunded",
                           "status": if action == "failed" { "failed" } else { "succeeded" }}),
        "charge.dispute" => {
            let status = match action {
                "closed" => "lost",
                "funds_reinstated" => "won",
                "created" | "funds_withdrawn" => "needs_response",
                _ => "under_review",
            };
            json!({"id": format!("dp_{}", plan.id), "object": "dispute",
                   "payment_intent": plan.id, "amount": m.amount, "currency": currency,
                   "status": status})
        }
        "refund" | "charge.refund" => json!({"id": plan.id, "object": "refund",
                   "payment_intent": format!("pi_of_{}", plan.id), "amount": m.amount,
                   "currency": currency,
                   "status": if action == "failed" { "failed" } else { "succeeded" }}),
        "payout" => {
            let status = match action {
                "paid" | "reconciliation_completed" => "paid",
                "failed" => "failed",
                "canceled" => "canceled",
                _ => "pending",
            };
            json!({"id": plan.id, "object": "payout", "status": status,
                   "amount": m.amount, "currency": currency})
        }
        other => {
            let kind = other.split('.').next().unwrap_or(other);
            json!({"id": format!("{kind}_{}", plan.id), "object": kind})
        }
    }
}

/// Which references an Adyen notification for `code` carries about the
/// payment `id`: a modification's or a dispute's own `pspReference`, the
/// payment in `originalReference` ("For modifications, this field
/// corresponds to the payment request assigned to the original payment";
/// dispute webhooks: "The PSP reference of the disputed payment"), or the
/// payment's own `pspReference` for its authorisation, offer, order and
/// expiry, and for refunds followed by their own reference.
pub fn adyen_references(code: &str, id: &str) -> (String, String) {
    const OWN: &[&str] = &[
        "AUTHORISATION",
        "AUTHENTICATION",
        "OFFER_CLOSED",
        "EXPIRE",
        "ORDER_OPENED",
        "ORDER_CLOSED",
        "REFUND",
        "REFUND_FAILED",
        "REFUNDED_REVERSED",
        "REFUND_WITH_DATA",
        "POSTPONED_REFUND",
        "VOID_PENDING_REFUND",
        "RECURRING_CONTRACT",
        "REPORT_AVAILABLE",
        "PAIDOUT_REVERSED",
        "PAYOUT_THIRDPARTY",
        "PAYOUT_DECLINE",
        "PAYOUT_EXPIRE",
        "HANDLED_EXTERNALLY",
    ];
    if OWN.contains(&code) {
        (id.to_string(), String::new())
    } else {
        (format!("{id}M"), id.to_string())
    }
}

/// The resource a PayPal event name carries, as PayPal's webhook pages
/// describe them: an order for `CHECKOUT.*`, a capture naming its order
/// for `PAYMENT.CAPTURE.*`, an authorization for `PAYMENT.AUTHORIZATION.*`,
/// a dispute naming the captured transaction for `CUSTOMER.DISPUTE.*`.
pub fn paypal_resource(event: &str, plan: &PaymentPlan, m: Money<'_>) -> Value {
    let amount = crate::wire::paypal_amount(m);
    let related = json!({"related_ids": {"order_id": plan.id}});
    if let Some(what) = event.strip_prefix("CHECKOUT.ORDER.") {
        return json!({"id": plan.id, "status": what, "purchase_units": [{"amount": amount}]});
    }
    if event == "CHECKOUT.PAYMENT-APPROVAL.REVERSED" {
        return json!({"id": plan.id, "status": "VOIDED"});
    }
    if let Some(what) = event.strip_prefix("PAYMENT.CAPTURE.") {
        let status = match what {
            "DENIED" => "DECLINED",
            "REVERSED" | "REFUNDED" => "REFUNDED",
            other => other,
        };
        return json!({"id": crate::wire::paypal_capture_id(&plan.id), "status": status,
                      "amount": amount, "supplementary_data": related});
    }
    if let Some(what) = event.strip_prefix("PAYMENT.AUTHORIZATION.") {
        return json!({"id": format!("AUTH{}", plan.id), "status": what, "amount": amount,
                      "supplementary_data": related});
    }
    if event.starts_with("CUSTOMER.DISPUTE.") || event.starts_with("RISK.DISPUTE.") {
        return json!({"dispute_id": format!("PP-D-{}", plan.id), "status": "OPEN",
                      "disputed_transactions": [{"seller_transaction_id":
                          crate::wire::paypal_capture_id(&plan.id)}]});
    }
    json!({"id": format!("R-{}", plan.id)})
}
