//! Sending the queued webhooks to the receiver on the simulator's clock,
//! with the drawn loss, delay, duplication and reordering, and retrying
//! what was not acknowledged.

use crate::model::Simulator;
use crate::webhooks::{Delivery, WebhookTarget, MAX_TRIES};
use crate::wire::{stripe_event, WireFormat};
use finality_core::Timestamp;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl Simulator {
    /// Start sending webhooks to `target` (deliveries already queued included).
    pub fn set_webhook_target(&self, target: WebhookTarget) {
        *self.lock_target() = Some(target);
    }

    /// Stop (`true`) or resume (`false`) sending webhooks, as a provider's
    /// webhook sender going down: while stopped, webhooks falling due are
    /// dropped, never sent later. Status queries keep answering.
    pub fn set_webhooks_down(&self, down: bool) {
        self.counters.webhooks_down.store(down, Ordering::Relaxed);
    }

    /// When the next queued webhook is due.
    pub fn next_webhook_at(&self) -> Option<Timestamp> {
        self.lock_queue().keys().next().map(|(t, _)| Timestamp(*t))
    }

    /// Send every webhook due now (concurrently); failures are retried
    /// later, as a provider would. Returns how many requests were made.
    pub async fn deliver_due(self: &Arc<Self>) -> usize {
        let Some(target) = self.lock_target().clone() else {
            return 0;
        };
        let now = self.now();
        let due: Vec<Delivery> = {
            let mut q = self.lock_queue();
            let later = q.split_off(&(now.millis() + 1, 0));
            std::mem::replace(&mut *q, later).into_values().collect()
        };
        let n = due.len();
        if self.counters.webhooks_down.load(Ordering::Relaxed) {
            self.counters
                .webhooks_dropped
                .fetch_add(n as u64, Ordering::Relaxed);
            return 0;
        }
        let mut tasks = tokio::task::JoinSet::new();
        for d in due {
            let (sim, target) = (self.clone(), target.clone());
            tasks.spawn(async move { sim.send(&target, d).await });
        }
        while tasks.join_next().await.is_some() {}
        n
    }

    async fn send(&self, target: &WebhookTarget, mut d: Delivery) {
        let now = self.now();
        let ts = now.millis() / 1000;
        // A Standard Webhooks account with an endpoint of its own: its URL
        // and key.
        let routed = match &target.format {
            WireFormat::Standard { .. } => self.standard_route(&d.provider_ref),
            _ => None,
        };
        let url = match &routed {
            Some((account, _)) => format!("{}/{account}", target.url),
            None => target.url.clone(),
        };
        let req = self
            .http
            .post(&url)
            .header("content-type", "application/json");
        let req = match &target.format {
            WireFormat::Standard { key } => {
                let key = match &routed {
                    Some((_, Some(own))) => own,
                    _ => key,
                };
                let body = serde_json::json!({
                    "type": "payment.updated",
                    "timestamp": now.to_rfc3339(),
                    "data": {"id": d.provider_ref, "status": d.status,
                             "merchant_ref": d.merchant_ref},
                })
                .to_string();
                let sig = crate::schemes::standard_webhooks(key, &d.event_id, ts, body.as_bytes());
                req.header("webhook-id", &d.event_id)
                    .header("webhook-timestamp", ts.to_string())
                    .header("webhook-signature", sig)
                    .body(body)
            }
            WireFormat::Adyen {
                key,
                merchant_account,
            } => {
                // A merchant account's own notifications, with its own key.
                let account = self.account_of(&d.provider_ref);
                let key = account
                    .as_deref()
                    .and_then(|a| self.adyen_key_for(a))
                    .unwrap_or_else(|| key.clone());
                let Some(body) = crate::wire::adyen_notification(
                    &key,
                    account.as_deref().unwrap_or(merchant_account),
                    &d.provider_ref,
                    d.merchant_ref.as_deref(),
                    d.status,
                    d.money(),
                ) else {
                    return; // nothing Adyen would send
                };
                req.body(body.to_string())
            }
            WireFormat::Alipay => {
                let Some(form) = crate::wire::alipay_notification(
                    &d.event_id,
                    &d.provider_ref,
                    d.order_no(),
                    d.status,
                    d.money(),
                ) else {
                    return; // Alipay does not notify while waiting for the buyer
                };
                req.header("content-type", "application/x-www-form-urlencoded")
                    .body(form)
            }
            WireFormat::WeChat { api_v3_key } => {
                let Some((body, headers)) = crate::wire::wechat_notification(
                    api_v3_key,
                    &d.event_id,
                    &d.provider_ref,
                    d.order_no(),
                    d.status,
                    ts,
                    d.money(),
                    self.account_of(&d.provider_ref).as_deref(),
                ) else {
                    return; // WeChat notifies successes only
                };
                let mut req = req;
                for (k, v) in headers {
                    req = req.header(k, v);
                }
                req.body(body)
            }
            WireFormat::PayPal { webhook_id } => {
                let time = now.to_rfc3339();
                let Some((event, headers)) = crate::wire::paypal_event(
                    &d.event_id,
                    &d.provider_ref,
                    d.merchant_ref.as_deref(),
                    d.status,
                    webhook_id,
                    &time,
                    d.money(),
                ) else {
                    return; // nothing PayPal would send
                };
                let mut req = req;
                for (k, v) in headers {
                    req = req.header(k, v);
                }
                req.body(event)
            }
            WireFormat::Acme { secret } => {
                let (body, sig) = crate::wire::acme_webhook(
                    secret,
                    &d.event_id,
                    &d.provider_ref,
                    d.status,
                    d.money(),
                );
                req.header("x-acme-signature", sig).body(body)
            }
            WireFormat::Stripe { secret } => {
                let mut event = stripe_event(
                    &d.event_id,
                    ts,
                    &d.provider_ref,
                    d.merchant_ref.as_deref(),
                    d.status,
                    d.money(),
                );
                // A connected account's event names it (top-level `account`).
                let account = self.account_of(&d.provider_ref);
                let secret = match &account {
                    Some(a) => {
                        event["account"] = serde_json::json!(a);
                        self.stripe_secret_for(a).unwrap_or_else(|| secret.clone())
                    }
                    None => secret.clone(),
                };
                let body = event.to_string();
                let sig = crate::schemes::stripe_signature(&secret, ts, body.as_bytes());
                req.header("stripe-signature", sig).body(body)
            }
        };
        let resp = req.send().await;
        self.counters.webhooks_sent.fetch_add(1, Ordering::Relaxed);
        let ok = matches!(&resp, Ok(r) if r.status().is_success());
        if ok {
            self.note_acknowledged(&d.event_id);
        } else {
            self.counters.webhook_errors.fetch_add(1, Ordering::Relaxed);
            d.tries += 1;
            if d.tries < MAX_TRIES {
                d.at = now.plus(Duration::from_secs(5 * u64::from(d.tries)));
                self.enqueue(d);
            }
        }
    }

    /// Deliver on wall time until `stop` (for `sim serve` and tests).
    pub fn spawn_webhook_sender(self: &Arc<Self>, stop: CancellationToken) {
        let sim = self.clone();
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                sim.deliver_due().await;
                let wait = sim
                    .next_webhook_at()
                    .map_or(Duration::from_millis(50), |t| t.since(sim.now()))
                    .min(Duration::from_millis(50));
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.cancelled() => {}
                }
            }
        });
    }
}
