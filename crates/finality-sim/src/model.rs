//! The simulated provider's state: one drawn plan per payment and the
//! counters the tests and the demo read.

use crate::config::{SettleTime, SimConfig};
use crate::plan::SimEvent;
use crate::Outcome;
use crate::PaymentPlan;
use finality_core::{Clock, Timestamp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

#[derive(Debug, Default)]
pub(crate) struct Calls {
    total: u64,
    in_flight: u32,
    /// When each call arrived (ms, simulator clock), in order.
    starts: Vec<i64>,
}

/// Counters for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    pub payments: u64,
    pub status_calls: u64,
    /// Calls that arrived while another call for the same payment was open.
    pub overlapping_calls: u64,
    pub injected_rate_limits: u64,
    pub injected_server_errors: u64,
    pub injected_timeouts: u64,
    pub webhooks_sent: u64,
    /// Deliveries that got no 2xx (retried up to 5 times).
    pub webhook_errors: u64,
    /// Bulk status requests (each also counts one status call per item).
    pub bulk_requests: u64,
    /// The most payments asked about in one bulk request.
    pub bulk_items_max: u64,
    /// OAuth token requests (PayPal).
    pub token_requests: u64,
    /// Event-list requests (Stripe `GET /v1/events`): not status calls.
    pub event_list_requests: u64,
}

/// The simulated provider. Cheap to share (`Arc`); all state behind locks.
pub struct Simulator {
    pub config: SimConfig,
    clock: Arc<dyn Clock>,
    rng: Mutex<StdRng>,
    plans: Mutex<HashMap<String, PaymentPlan>>,
    calls: Mutex<HashMap<String, Calls>>,
    next_id: AtomicU64,
    pub(crate) counters: Counters,
    /// Queued webhook deliveries by (due ms, sequence).
    queue: Mutex<std::collections::BTreeMap<(i64, u64), crate::webhooks::Delivery>>,
    target: Mutex<Option<crate::webhooks::WebhookTarget>>,
    outage: Mutex<Option<Timestamp>>,
    call_times: Mutex<Vec<i64>>,
    /// OAuth tokens issued, with when each expires (ms, simulator clock).
    tokens: Mutex<HashMap<String, i64>>,
    /// Event ids of webhooks the receiver acknowledged (2xx).
    acked: Mutex<std::collections::HashSet<String>>,
    /// Published words a payment's status API answers with instead of its
    /// plan's (`published::Simulator::answer_with`).
    pub(crate) words: Mutex<HashMap<String, String>>,
    /// Payments' accounts and the accounts' own secrets ([`crate::accounts`]).
    pub(crate) accounts: Mutex<SimAccounts>,
    /// Settlement reports served by the fetch APIs ([`crate::reports`]).
    pub(crate) reports: Mutex<SimReports>,
    pub(crate) http: reqwest::Client,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub overlapping: AtomicU64,
    pub rate_limits: AtomicU64,
    pub server_errors: AtomicU64,
    pub timeouts: AtomicU64,
    pub status_calls: AtomicU64,
    pub webhooks_sent: AtomicU64,
    pub webhook_errors: AtomicU64,
    pub queue_seq: AtomicU64,
    pub bulk_requests: AtomicU64,
    pub bulk_items_max: AtomicU64,
    pub token_requests: AtomicU64,
    pub event_list_requests: AtomicU64,
    /// While set, webhooks falling due are dropped (the provider's webhook
    /// sender is down).
    pub webhooks_down: std::sync::atomic::AtomicBool,
    pub webhooks_dropped: AtomicU64,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a simulator lock leaves only counters behind.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fault to inject into one status call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    RateLimited,
    ServerError,
    Timeout,
}

impl Simulator {
    pub fn new(config: SimConfig, clock: Arc<dyn Clock>, seed: u64) -> Arc<Self> {
        Arc::new(Simulator {
            config,
            clock,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            plans: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            counters: Counters::default(),
            queue: Mutex::new(Default::default()),
            target: Mutex::new(None),
            outage: Mutex::new(None),
            call_times: Mutex::new(Vec::new()),
            tokens: Mutex::new(HashMap::new()),
            acked: Mutex::new(Default::default()),
            words: Mutex::new(HashMap::new()),
            accounts: Mutex::default(),
            reports: Mutex::default(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
        })
    }

    /// Create a payment at the provider (as a merchant's checkout would) and
    /// draw its plan. Returns the provider's reference for it.
    pub fn create(&self, id: Option<String>) -> PaymentPlan {
        self.create_with(id, None)
    }

    /// [`Simulator::create`] with the merchant's reference, which the
    /// provider keeps and can be searched by.
    pub fn create_with(&self, id: Option<String>, merchant_ref: Option<String>) -> PaymentPlan {
        self.create_priced(id, merchant_ref, 1000, "EUR")
    }

    /// [`Simulator::create_with`] for an amount (minor units) in a
    /// currency, which its settlement report lists.
    pub fn create_priced(
        &self,
        id: Option<String>,
        merchant_ref: Option<String>,
        amount: i64,
        currency: &str,
    ) -> PaymentPlan {
        let id = id
            .unwrap_or_else(|| format!("sim_{:08}", self.next_id.fetch_add(1, Ordering::Relaxed)));
        let now = self.clock.now();
        let plan = {
            let mut rng = lock(&self.rng);
            PaymentPlan {
                merchant_ref,
                amount,
                currency: currency.to_string(),
                ..self.draw(&mut rng, id.clone(), now)
            }
        };
        lock(&self.plans).insert(id, plan.clone());
        for d in crate::webhooks::deliveries(&plan, self.config.webhooks.delay) {
            self.enqueue(d);
        }
        plan
    }

    pub(crate) fn enqueue(&self, d: crate::webhooks::Delivery) {
        let seq = self.counters.queue_seq.fetch_add(1, Ordering::Relaxed);
        lock(&self.queue).insert((d.at.millis(), seq), d);
    }

    pub(crate) fn lock_queue(
        &self,
    ) -> MutexGuard<'_, std::collections::BTreeMap<(i64, u64), crate::webhooks::Delivery>> {
        lock(&self.queue)
    }

    pub(crate) fn lock_target(&self) -> MutexGuard<'_, Option<crate::webhooks::WebhookTarget>> {
        lock(&self.target)
    }

    fn draw(&self, rng: &mut StdRng, id: String, now: Timestamp) -> PaymentPlan {
        let c = &self.config;
        let settle = match &c.settle {
            SettleTime::Fixed { after } => *after,
            SettleTime::LogNormal { median, sigma } => {
                let mu = median.as_secs_f64().max(1e-3).ln();
                let secs = LogNormal::new(mu, sigma.max(0.0))
                    .map(|d| d.sample(rng))
                    .unwrap_or(median.as_secs_f64());
                Duration::from_secs_f64(secs.min(1e9))
            }
        };
        let r: f64 = rng.gen();
        let o = &c.outcomes;
        let outcome = if r < o.succeeded {
            Outcome::Succeeded
        } else if r < o.succeeded + o.failed {
            Outcome::Failed
        } else if r < o.succeeded + o.failed + o.cancelled {
            Outcome::Cancelled
        } else {
            Outcome::Never
        };
        let w = &c.webhooks;
        PaymentPlan {
            id,
            merchant_ref: None,
            created_at: now,
            processing_at: now.plus(settle.mul_f64(c.processing_at.clamp(0.0, 1.0))),
            settles_at: (outcome != Outcome::Never).then(|| now.plus(settle)),
            outcome,
            webhook_lost: rng.gen_bool(w.lost.clamp(0.0, 1.0)),
            webhook_delayed: rng.gen_bool(w.delayed.clamp(0.0, 1.0)),
            webhook_duplicated: rng.gen_bool(w.duplicated.clamp(0.0, 1.0)),
            webhook_reordered: rng.gen_bool(w.reordered.clamp(0.0, 1.0)),
            amount: 1000,
            currency: "EUR".into(),
        }
    }

    /// Every payment created so far (a copy).
    pub fn plans_snapshot(&self) -> Vec<PaymentPlan> {
        lock(&self.plans).values().cloned().collect()
    }

    pub fn plan(&self, id: &str) -> Option<PaymentPlan> {
        lock(&self.plans).get(id).cloned()
    }

    /// Every payment created with this merchant reference.
    pub fn plans_by_merchant_ref(&self, merchant_ref: &str) -> Vec<PaymentPlan> {
        let mut found: Vec<PaymentPlan> = lock(&self.plans)
            .values()
            .filter(|p| p.merchant_ref.as_deref() == Some(merchant_ref))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found
    }

    /// The payment a merchant order number names (WeChat Pay, Alipay): the
    /// one created with it as merchant reference, or else with it as id.
    pub fn plan_by_order_no(&self, out_trade_no: &str) -> Option<PaymentPlan> {
        self.plans_by_merchant_ref(out_trade_no)
            .into_iter()
            .next()
            .or_else(|| self.plan(out_trade_no))
    }

    /// Every event that has happened at the provider by `now`, oldest first
    /// (by time, then id): a payment's `processing` and its final status,
    /// whether or not the webhook for it was ever delivered. Event ids are
    /// the webhooks' own, so a listed event and its webhook are one event.
    pub fn events_until(&self, now: Timestamp) -> Vec<SimEvent> {
        let mut out = Vec::new();
        for plan in lock(&self.plans).values() {
            let event = |at: Timestamp, status: &'static str| SimEvent {
                at,
                event_id: format!("evt_{}_{status}", plan.id),
                payment_id: plan.id.clone(),
                merchant_ref: plan.merchant_ref.clone(),
                status,
                amount: plan.amount,
                currency: plan.currency.clone(),
            };
            if plan.processing_at <= now {
                out.push(event(plan.processing_at, "processing"));
            }
            match plan.settles_at {
                Some(at) if at <= now && plan.outcome != Outcome::Never => {
                    out.push(event(at, plan.outcome.wire()))
                }
                _ => {}
            }
        }
        out.sort_by(|a, b| (a.at, &a.event_id).cmp(&(b.at, &b.event_id)));
        out
    }

    /// Event ids of the webhooks the receiver acknowledged with a 2xx
    /// (each must then be stored: a chaos run checks it).
    pub fn acknowledged(&self) -> Vec<String> {
        lock(&self.acked).iter().cloned().collect()
    }

    pub(crate) fn note_acknowledged(&self, event_id: &str) {
        lock(&self.acked).insert(event_id.to_string());
    }

    pub fn plans(&self) -> Vec<PaymentPlan> {
        lock(&self.plans).values().cloned().collect()
    }

    /// Status calls made for one payment.
    pub fn calls_for(&self, id: &str) -> u64 {
        lock(&self.calls).get(id).map_or(0, |c| c.total)
    }

    /// When the first status call for `id` at or after `t` arrived: seen
    /// from the provider's side, so a call whose caller died before
    /// recording it still counts.
    pub fn first_call_since(&self, id: &str, t: Timestamp) -> Option<Timestamp> {
        let calls = lock(&self.calls);
        let starts = &calls.get(id)?.starts;
        let i = starts.partition_point(|s| *s < t.0);
        starts.get(i).map(|s| Timestamp(*s))
    }

    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            payments: lock(&self.plans).len() as u64,
            status_calls: c.status_calls.load(Ordering::Relaxed),
            overlapping_calls: c.overlapping.load(Ordering::Relaxed),
            injected_rate_limits: c.rate_limits.load(Ordering::Relaxed),
            injected_server_errors: c.server_errors.load(Ordering::Relaxed),
            injected_timeouts: c.timeouts.load(Ordering::Relaxed),
            webhooks_sent: c.webhooks_sent.load(Ordering::Relaxed),
            webhook_errors: c.webhook_errors.load(Ordering::Relaxed),
            bulk_requests: c.bulk_requests.load(Ordering::Relaxed),
            bulk_items_max: c.bulk_items_max.load(Ordering::Relaxed),
            token_requests: c.token_requests.load(Ordering::Relaxed),
            event_list_requests: c.event_list_requests.load(Ordering::Relaxed),
        }
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Count a status call as started; the guard counts it as ended.
    pub(crate) fn begin_call(self: &Arc<Self>, id: &str) -> CallGuard {
        self.counters.status_calls.fetch_add(1, Ordering::Relaxed);
        {
            // Arrival order under the lock, so the list stays sorted.
            let mut times = lock(&self.call_times);
            let now = self.clock.now().0.max(times.last().copied().unwrap_or(0));
            times.push(now);
        }
        let mut calls = lock(&self.calls);
        let c = calls.entry(id.to_string()).or_default();
        c.total += 1;
        let now = self
            .clock
            .now()
            .0
            .max(c.starts.last().copied().unwrap_or(0));
        c.starts.push(now);
        if c.in_flight > 0 {
            self.counters.overlapping.fetch_add(1, Ordering::Relaxed);
        }
        c.in_flight += 1;
        CallGuard {
            sim: self.clone(),
            id: id.to_string(),
        }
    }

    /// Issue an OAuth access token valid for `config.token_ttl`.
    pub(crate) fn issue_token(&self) -> String {
        let n = self.counters.token_requests.load(Ordering::Relaxed);
        let token = format!("A21AAsim{n:08}");
        let ttl = self.config.token_ttl.unwrap_or(Duration::from_secs(32_400));
        lock(&self.tokens).insert(token.clone(), self.clock.now().plus(ttl).0);
        token
    }

    pub(crate) fn token_valid(&self, token: &str) -> bool {
        let now = self.clock.now().0;
        lock(&self.tokens).get(token).is_some_and(|exp| now < *exp)
    }

    /// Count one bulk request of `items` payments.
    pub(crate) fn note_bulk_request(&self, items: usize) {
        self.counters.bulk_requests.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bulk_items_max
            .fetch_max(items as u64, Ordering::Relaxed);
    }

    /// Answer every status call with 503 until `until` (an outage).
    pub fn outage_until(&self, until: Timestamp) {
        *lock(&self.outage) = Some(until);
    }

    /// The most status calls seen in any `window` (sliding), for checking
    /// a caller's rate limit.
    pub fn max_calls_in_any(&self, window: Duration) -> usize {
        let times = lock(&self.call_times);
        let w = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        let (mut lo, mut best) = (0, 0);
        for hi in 0..times.len() {
            while times[hi] - times[lo] >= w {
                lo += 1;
            }
            best = best.max(hi - lo + 1);
        }
        best
    }

    /// When each status call arrived (ms, in order).
    pub fn call_times(&self) -> Vec<Timestamp> {
        lock(&self.call_times)
            .iter()
            .map(|t| Timestamp(*t))
            .collect()
    }

    /// Whether this call is over the configured calls-per-second cap (the
    /// window includes this call, already recorded).
    pub(crate) fn over_rate_limit(&self) -> bool {
        let Some(cap) = self.config.max_calls_per_second else {
            return false;
        };
        let times = lock(&self.call_times);
        let now = times.last().copied().unwrap_or_default();
        let in_window = times.iter().rev().take_while(|t| now - **t < 1000).count();
        in_window > cap as usize
    }

    /// Draw whether to inject a fault into this call.
    pub(crate) fn draw_fault(&self) -> Option<Fault> {
        if lock(&self.outage).is_some_and(|until| self.clock.now() < until) {
            self.counters.server_errors.fetch_add(1, Ordering::Relaxed);
            return Some(Fault::ServerError);
        }
        let f = &self.config.faults;
        let r: f64 = lock(&self.rng).gen();
        let (a, b, c) = (
            f.rate_limited,
            f.rate_limited + f.server_error,
            f.rate_limited + f.server_error + f.timeout,
        );
        if r < a {
            self.counters.rate_limits.fetch_add(1, Ordering::Relaxed);
            Some(Fault::RateLimited)
        } else if r < b {
            self.counters.server_errors.fetch_add(1, Ordering::Relaxed);
            Some(Fault::ServerError)
        } else if r < c {
            self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            Some(Fault::Timeout)
        } else {
            None
        }
    }
}

pub(crate) struct CallGuard {
    sim: Arc<Simulator>,
    id: String,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(c) = lock(&self.sim.calls).get_mut(&self.id) {
            c.in_flight = c.in_flight.saturating_sub(1);
        }
    }
}

/// What the report fetch APIs serve: the discrepancies drawn into each
/// report, days withheld, whether files are altered in transit, and the
/// files and Stripe report runs made so far.
#[derive(Default)]
pub(crate) struct SimReports {
    /// missing, wrong_amount, refunded, unknown (probabilities per
    /// payment), and the seed they are drawn with.
    pub(crate) inject: [f64; 4],
    pub(crate) seed: u64,
    /// `provider/YYYY-MM-DD` days whose report is not made.
    pub(crate) withheld: std::collections::HashSet<String>,
    /// Serve every file with one byte changed after it was hashed.
    pub(crate) tamper: bool,
    pub(crate) files: HashMap<String, Vec<u8>>,
    /// Stripe report runs by idempotency key.
    pub(crate) runs: HashMap<String, serde_json::Value>,
    /// Stripe: the currency the account settles in and the rate (units of
    /// it per 10,000 units of a payment's currency), when payments are
    /// presented in another.
    pub(crate) stripe_settles_in: Option<(String, i64)>,
    /// What each `provider/YYYY-MM-DD` report got wrong on purpose:
    /// missing, wrong_amount, refunded, unknown.
    pub(crate) injected: HashMap<String, [Vec<String>; 4]>,
}

/// Which account each payment belongs to, and each account's own secrets.
#[derive(Default)]
pub(crate) struct SimAccounts {
    pub(crate) of_payment: HashMap<String, String>,
    pub(crate) revoked: std::collections::HashSet<String>,
    /// Stripe: the secret an account's events are signed with (a Connect
    /// endpoint's, or the account's own endpoint's); unset: the target's.
    pub(crate) stripe_secrets: HashMap<String, String>,
    /// Adyen: each merchant account's HMAC key (decoded).
    pub(crate) adyen_keys: HashMap<String, Vec<u8>>,
    /// Alipay: the `app_auth_token` each merchant (`auth_app_id`) granted
    /// the integrator's app.
    pub(crate) alipay_tokens: HashMap<String, String>,
    /// Standard Webhooks (sim, generic): the accounts whose payments'
    /// webhooks go to the account's own URL (`{target}/{account}`), each
    /// with its own key (`None`: the target's).
    pub(crate) standard_accounts: HashMap<String, Option<Vec<u8>>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use finality_core::VirtualClock;

    #[test]
    fn plans_follow_the_clock_and_the_seed() {
        let clock = Arc::new(VirtualClock::new(Timestamp(0)));
        let sim = Simulator::new(
            SimConfig::deterministic(Duration::from_secs(10)),
            clock.clone(),
            7,
        );
        let p = sim.create(None);
        assert_eq!(p.status_at(Timestamp(0)), "pending");
        assert_eq!(p.status_at(Timestamp(3_000)), "processing");
        assert_eq!(p.status_at(Timestamp(10_000)), "succeeded");

        let a = Simulator::new(SimConfig::default(), clock.clone(), 42);
        let b = Simulator::new(SimConfig::default(), clock, 42);
        let pa: Vec<_> = (0..50).map(|_| a.create(None)).collect();
        let pb: Vec<_> = (0..50).map(|_| b.create(None)).collect();
        assert_eq!(pa, pb, "same seed, same plans");
    }
}
