//! The poll engine: one long-lived worker pool that drives every open payment
//! to a final status by asking its provider, on a schedule, under a lease.
//!
//! Roles, in the River manner: the **producer** ([`Engine::run`]) claims only
//! as many due jobs as it has free slots, in one short statement; each
//! **executor** task calls the provider with no database lock held, then the
//! **completer** writes its result, fenced by its lock token, batched with
//! the results that arrived meanwhile into one transaction; expired
//! leases are **rescued** simply by falling due again (the claim sets
//! `next_poll_at` to the lease end). Time comes only from the [`Clock`]: on a
//! virtual clock an idle engine jumps time to the next due poll.
//!
//! # Layout
//! - [`accounts`]: a provider's accounts (file and run-time), each with its
//!   own adapter, and their health's [`accounts::scope`].
//! - [`config`]: [`EngineConfig`] with defaults and validation.
//! - [`health`]: per-provider pauses (rate limits, permanent errors) and
//!   circuit breakers ([`breaker`]) that `/readyz` reports.
//! - [`inbox`]: the webhook inbox processor.
//! - `completer`: batches completions into one transaction.
//! - `bulk`: coalesces due polls of a bulk-capable provider into one request.
//! - [`catch_up`]: reads providers' event lists from a stored cursor.
//! - [`rate`]: per-provider rate limits held across nodes.
//! - `execute`: one poll, from the provider call to the completion.
//! - `producer`: the claim/wait loop; `permits`: execution permits shared
//!   round robin between accounts.
//! - [`webhook_wait`]: registration-to-webhook delays, learned per provider.
//! - [`sweep`]: the reconciliation sweep; [`reconcile`]: settlement reports
//!   (`report_owner`: whose payments a report's lines reach; `period`: the
//!   time a report covers).
//! - `batches`: announced settlement files' batch gaps and folders per account.
//! - [`lifecycle`]: retention (`files`: archive files and the manifest;
//!   `restore`; `error`).
//!
//! Each component takes the store's roles it uses: one role as `Arc<dyn
//! Role>` (the rate limits `RateBuckets`, the engine `PollQueue` and
//! `PaymentStore`), several as a type parameter bounded by them that is
//! `dyn Store` by default (the sweep, catch-up, retention, the inbox
//! processor). [`Engine::new`] is where the engine's parts are wired.
#![forbid(unsafe_code)]

pub mod accounts;
mod batches;
pub mod breaker;
mod bulk;
pub mod catch_up;
mod completer;
pub mod config;
mod execute;
pub mod health;
pub mod inbox;
pub mod lifecycle;
mod liveness;
mod period;
mod permits;
mod producer;
pub mod rate;
pub mod reconcile;
mod report_owner;
pub mod settlement;
pub mod sweep;
pub mod webhook_wait;

pub use config::EngineConfig;
pub use health::{Health, Pause};

use finality_core::{Clock, RetryPolicy};
use finality_providers::Provider;
use finality_store::{PaymentStore, PollQueue, Store};
use std::collections::HashMap;
use std::sync::Arc;

/// A provider's adapter and the policy its payments are polled by.
#[derive(Clone)]
pub struct ProviderEntry {
    pub adapter: Arc<dyn Provider>,
    pub policy: RetryPolicy,
    /// How long to pause the provider after a permanent error.
    pub pause_on_permanent_error: std::time::Duration,
    /// Unverified webhooks may hurry a tracked payment's next poll at most
    /// this often per minute (they never apply anything themselves).
    pub nudges_per_minute: u32,
    /// Early looks one payment gets in its life (none spends an attempt).
    pub nudges_per_payment: u32,
    /// Calls per second across every node, if the provider limits them.
    pub rate_limit: Option<finality_store::Bucket>,
    /// The schedule while the provider's webhooks are down (`None`: no
    /// webhooks are configured, so there is nothing to watch).
    pub outage_policy: Option<RetryPolicy>,
    /// Payments settled by a poll in a row, with no webhook between, that
    /// mean the webhooks are down (0: never).
    pub webhook_outage_after: u32,
    /// Read the provider's event list at least this often ([`catch_up`]).
    pub catch_up: Option<std::time::Duration>,
    /// The first poll waits until this share of payments would have had
    /// their final webhook ([`webhook_wait`]); `None`: the schedule decides.
    pub webhook_wait_quantile: Option<f64>,
    /// The provider's accounts: a payment naming one is polled with its
    /// adapter, under its own pause, breaker and rate limit.
    pub accounts: Arc<accounts::ProviderAccounts>,
    /// When its settlement reports are fetched ([`settlement`]); `None`:
    /// they are imported by hand.
    pub settlement: Option<finality_providers::settlement::fetch::ReportSchedule>,
    /// The environment this provider's payments are in (`Some(true)`
    /// live): a webhook of the other one is never applied. `None`: not
    /// checked (see `mode` in the provider's table).
    pub live: Option<bool>,
}

impl ProviderEntry {
    /// [`ProviderEntry::from_config`] for the provider configured as
    /// `name` (its accounts' errors name it).
    pub fn named(
        name: &str,
        adapter: Arc<dyn Provider>,
        cfg: &finality_providers::config::ProviderConfig,
    ) -> Self {
        ProviderEntry {
            accounts: Arc::new(accounts::ProviderAccounts::new(name, cfg)),
            ..Self::from_config(adapter, cfg)
        }
    }

    pub fn from_config(
        adapter: Arc<dyn Provider>,
        cfg: &finality_providers::config::ProviderConfig,
    ) -> Self {
        ProviderEntry {
            live: cfg.mode.map(|m| m.is_live()).or_else(|| adapter.key_live()),
            adapter,
            policy: cfg.policy(),
            pause_on_permanent_error: cfg.pause_on_permanent_error,
            nudges_per_minute: cfg.unverified_nudges_per_minute,
            nudges_per_payment: cfg.unverified_nudges_per_payment,
            rate_limit: cfg.rate_limit.map(|r| finality_store::Bucket {
                per_second: r.per_second,
                burst: f64::from(r.burst),
            }),
            // With webhooks down, polls are the only way again: the
            // schedule a provider without webhooks gets, or the provider's
            // own where that polls more often at a step (an outage never
            // slows an operator's schedule down). Not with an event list:
            // it finds what the webhooks miss, down or not.
            outage_policy: (!cfg.webhook_secret_envs.is_empty() && cfg.catch_up.is_none()).then(
                || RetryPolicy {
                    schedule: finality_core::Schedule::Fastest {
                        of: vec![
                            finality_core::Schedule::default_polls_only(),
                            cfg.schedule(),
                        ],
                    },
                    ..cfg.policy()
                },
            ),
            webhook_outage_after: cfg.webhook_outage_after,
            catch_up: cfg.catch_up,
            webhook_wait_quantile: cfg.webhook_wait_quantile,
            accounts: Arc::new(accounts::ProviderAccounts::new(cfg.adapter.name(), cfg)),
            // Checked by `validate` when the file was read.
            settlement: cfg.settlement_schedule().ok().flatten(),
        }
    }

    /// When a payment registered `now` is first polled: by the policy in
    /// force, or later, once the learned share of webhooks would have come
    /// (never while the webhooks are down: then the outage schedule rules).
    pub fn first_poll_at(
        &self,
        health: &Health,
        provider: &str,
        now: finality_core::Timestamp,
    ) -> finality_core::Timestamp {
        let by_schedule = self.policy_now(health, provider).first_poll_at(now);
        let learned = self
            .webhook_wait_quantile
            .filter(|_| health.webhook_outage(provider).is_none())
            .and_then(|q| health.webhook_waits.quantile(provider, q));
        match learned {
            Some(wait) => by_schedule.max(now.plus(wait.min(self.policy.give_up_after))),
            None => by_schedule,
        }
    }

    /// The policy in force: the outage schedule while this provider's
    /// webhooks are down, else its own.
    pub fn policy_now(&self, health: &Health, provider: &str) -> &RetryPolicy {
        match &self.outage_policy {
            Some(p) if health.webhook_outage(provider).is_some() => p,
            _ => &self.policy,
        }
    }
}

/// Configured providers by name (the `provider` field of a payment).
pub type Providers = HashMap<String, ProviderEntry>;

/// One engine instance: a worker id, a pool of `concurrency` slots.
pub struct Engine {
    /// Claims, completions, early looks, heartbeats: the engine's own role.
    pub(crate) queue: Arc<dyn PollQueue>,
    /// A payment's registered money, read to check what a provider reports.
    pub(crate) payments: Arc<dyn PaymentStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) providers: Arc<Providers>,
    pub(crate) config: EngineConfig,
    pub(crate) health: Arc<Health>,
    pub(crate) completer: completer::Completer,
    pub(crate) rates: Arc<rate::RateLimits>,
    /// Batchers of the providers polled in bulk.
    pub(crate) bulk: HashMap<String, bulk::Batcher>,
    /// Accounts' claim weights, cached.
    pub(crate) weights: accounts::Weights,
}

impl Engine {
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        providers: Arc<Providers>,
        config: EngineConfig,
        health: Arc<Health>,
    ) -> Arc<Self> {
        let completer = completer::Completer::spawn(
            store.clone(),
            config.batch_size as usize,
            store.parallel_writers(),
        );
        let rates = Arc::new(rate::RateLimits::new(
            store.clone(),
            clock.clone(),
            providers
                .iter()
                .filter_map(|(name, p)| p.rate_limit.map(|b| (name.clone(), b))),
            std::time::Duration::from_secs(2),
        ));
        let bulk = providers
            .iter()
            .filter(|(_, p)| p.adapter.bulk_limit() > 1)
            .map(|(name, p)| {
                let b = bulk::Batcher::spawn(
                    name.clone(),
                    p.adapter.clone(),
                    p.adapter.bulk_limit(),
                    rates.clone(),
                    health.clone(),
                    clock.clone(),
                );
                (name.clone(), b)
            })
            .collect();
        Arc::new(Engine {
            weights: Default::default(),
            rates,
            bulk,
            completer,
            queue: store.clone(),
            payments: store,
            clock,
            providers,
            config,
            health,
        })
    }

    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    pub fn worker_id(&self) -> &str {
        &self.config.worker_id
    }
}

/// Hostile input (the `hostile` suite): what an outage does to a schedule.
#[cfg(test)]
mod hostile {
    use super::*;
    use finality_core::{Schedule, Timestamp};
    use finality_providers::config::ProviderConfig;
    use finality_providers::http::Timeouts;
    use finality_providers::sim::SimAdapter;
    use std::time::Duration;

    fn entry(schedule: Option<Schedule>) -> ProviderEntry {
        let mut cfg = ProviderConfig::sim("http://127.0.0.1:9");
        cfg.webhook_secret_envs = vec!["FINALITY_SIM_WEBHOOK_SECRET".into()];
        cfg.schedule_override = schedule;
        let t = Timeouts {
            connect: cfg.connect_timeout,
            total: cfg.timeout,
        };
        let adapter = SimAdapter::new(&cfg.base_url, None, t).unwrap();
        ProviderEntry::from_config(Arc::new(adapter), &cfg)
    }

    fn outage(h: &Health) {
        assert!(h.settled_by_poll("sim", Timestamp(0), 1));
    }

    fn delays(e: &ProviderEntry, h: &Health) -> Vec<i64> {
        let reg = Timestamp(1_000_000);
        let mut at = e.first_poll_at(h, "sim", reg);
        let mut out = vec![at.0 - reg.0];
        for n in 1..14 {
            match e.policy_now(h, "sim").next_poll(reg, at, n, 0.0) {
                finality_core::NextPoll::At(next) => {
                    out.push(next.0 - at.0);
                    at = next;
                }
                other => panic!("{other:?}"),
            }
        }
        out
    }

    /// Before: the outage schedule replaced the provider's own, so an
    /// operator's `schedule` polling twice a second was slowed to the
    /// polls-only default's steps while the webhooks were down. Now the
    /// outage schedule is, at each step, the faster of the two.
    #[test]
    fn an_outage_never_slows_the_configured_schedule() {
        let twice_a_second = Schedule::Fixed {
            delays: vec![Duration::from_millis(500)],
        };
        let e = entry(Some(twice_a_second));
        let h = Health::new();
        let normal = delays(&e, &h);
        outage(&h);
        let during = delays(&e, &h);
        assert!(
            during.iter().zip(&normal).all(|(d, n)| d <= n),
            "during an outage {during:?}, normally {normal:?}"
        );
        // A provider left on the webhooks-first default is still polled
        // sooner during an outage than normally (what the outage is for).
        let e = entry(None);
        let h = Health::new();
        let normal = delays(&e, &h);
        outage(&h);
        let during = delays(&e, &h);
        assert!(during[0] < normal[0], "{during:?} vs {normal:?}");
        assert!(during.iter().zip(&normal).all(|(d, n)| d <= n));
    }
}
