//! Event-list catch-up: for a provider that keeps a list of what changed
//! (Stripe's `GET /v1/events`), one call reads every payment's news since a
//! stored cursor, so a lost webhook is found without polling each payment.
//!
//! Listed events enter the webhook inbox with source `sweep` and the
//! provider's event id, the same key their webhooks have: a listed event and
//! its webhook are one event, stored once and applied once through `apply`.
//! The cursor is saved only after the page's events are durable in the
//! inbox, by the node holding the provider's cursor lease (one reader at a
//! time however many nodes run; a stalled reader cannot move a successor's
//! cursor back).
//!
//! How often: every `catch_up` interval while payments are being registered,
//! and less often as the provider's newest payment ages (a tenth of its age,
//! at most [`MAX_EVERY`]): a young payment may settle any second, an old one
//! rarely, the same reasoning that backs off a per-payment schedule.

use finality_core::{Clock, Source, Timestamp};
use finality_providers::Provider;
use finality_store::prelude::*;
use finality_store::{NewInboxEvent, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The longest gap between two reads while a provider has catch-up on.
pub const MAX_EVERY: Duration = Duration::from_secs(3600);

/// Pages read in one round before yielding (a backlog after an outage is
/// read over several rounds, each saving its cursor).
const PAGES_PER_ROUND: usize = 50;

struct Reader {
    name: String,
    adapter: Arc<dyn Provider>,
    every: Duration,
}

/// What one round for one provider did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// List calls made.
    pub calls: u32,
    /// Events read (duplicates of stored ones included).
    pub events: usize,
    /// Events new to the inbox.
    pub fresh: usize,
}

/// The catch-up readers of every provider with `catch_up` set.
pub struct CatchUp<S: ?Sized = dyn Store> {
    /// The roles catch-up uses: the cursor lease, the inbox, registrations.
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    holder: String,
    readers: Vec<Reader>,
    /// When each provider is read next.
    next: Mutex<HashMap<String, Timestamp>>,
}

impl<S: ?Sized + Cursors + WebhookInbox + PaymentStore + 'static> CatchUp<S> {
    /// `None` when no provider catches up. `holder` names this node on the
    /// cursor lease (the engine's worker id).
    pub fn new(
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        providers: &crate::Providers,
        holder: &str,
    ) -> Option<Arc<Self>> {
        let mut readers: Vec<Reader> = providers
            .iter()
            .filter_map(|(name, p)| {
                p.catch_up.map(|every| Reader {
                    name: name.clone(),
                    adapter: p.adapter.clone(),
                    every,
                })
            })
            .collect();
        if readers.is_empty() {
            return None;
        }
        readers.sort_by(|a, b| a.name.cmp(&b.name));
        let now = clock.now();
        let next = readers.iter().map(|r| (r.name.clone(), now)).collect();
        Some(Arc::new(CatchUp {
            store,
            clock,
            holder: holder.to_string(),
            readers,
            next: Mutex::new(next),
        }))
    }

    /// When the next read is due (a virtual-time driver jumps to it).
    pub fn next_at(&self) -> Option<Timestamp> {
        self.lock_next().values().min().copied()
    }

    fn lock_next(&self) -> std::sync::MutexGuard<'_, HashMap<String, Timestamp>> {
        self.next.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Read every provider whose time has come. Failures are logged and
    /// counted, and that provider is tried again after its interval.
    pub async fn run_due(&self) -> Round {
        let mut total = Round::default();
        for r in &self.readers {
            let now = self.clock.now();
            let due = self.lock_next().get(&r.name).is_some_and(|at| *at <= now);
            if !due {
                continue;
            }
            let next = match self.read(r).await {
                Ok(round) => {
                    total.calls += round.calls;
                    total.events += round.events;
                    total.fresh += round.fresh;
                    self.interval(r).await
                }
                Err(e) => {
                    tracing::warn!(provider = %r.name, error = %e, "event-list catch-up failed; polls still cover its payments");
                    r.every
                }
            };
            self.lock_next()
                .insert(r.name.clone(), self.clock.now().plus(next));
        }
        total
    }

    /// How long until `r` is read again: its interval while its newest
    /// payment is young, a tenth of that payment's age once it is older.
    async fn interval(&self, r: &Reader) -> Duration {
        let now = self.clock.now();
        match self.store.newest_registration(&r.name).await {
            Ok(Some(at)) => (now.since(at) / 10).clamp(r.every, MAX_EVERY.max(r.every)),
            Ok(None) => MAX_EVERY.max(r.every),
            Err(e) => {
                tracing::warn!(provider = %r.name, error = %e, "reading the newest registration failed");
                r.every
            }
        }
    }

    /// One round for one provider: take the cursor lease, read pages until
    /// the list is caught up (or the round's page budget is spent), storing
    /// each page's events before saving the cursor past them.
    async fn read(&self, r: &Reader) -> Result<Round, RoundError> {
        let now = self.clock.now();
        let hold = (r.every * 4).max(Duration::from_secs(60));
        let lease = self
            .store
            .cursor_take(&r.name, &self.holder, now, now.plus(hold))
            .await
            .map_err(|e| RoundError::Store("taking the cursor", e))?;
        let Some(lease) = lease else {
            // Another node reads this provider's list.
            return Ok(Round::default());
        };
        let mut cursor = lease.cursor;
        let mut round = Round::default();
        for _ in 0..PAGES_PER_ROUND {
            round.calls += 1;
            metrics::counter!("finality_catch_up_calls_total", "provider" => r.name.clone())
                .increment(1);
            let page = match r.adapter.list_events(cursor.as_deref()).await {
                Ok(page) => page,
                Err(e) => {
                    metrics::counter!("finality_catch_up_errors_total", "provider" => r.name.clone(), "class" => e.class().as_str())
                        .increment(1);
                    return Err(RoundError::List(e));
                }
            };
            if let Some(why) = &page.restarted {
                metrics::counter!("finality_catch_up_restarts_total", "provider" => r.name.clone())
                    .increment(1);
                tracing::warn!(provider = %r.name, reason = %why, "event-list cursor restarted from the newest events; payments settled in between are left to their polls");
            }
            let rows: Vec<NewInboxEvent> = page
                .events
                .into_iter()
                .map(|ev| {
                    // No raw body: the list's JSON is not a signed delivery.
                    // The platform's own list: its events are the
                    // provider's own account's (connected accounts' events
                    // are listed only as those accounts; docs/ACCOUNTS.md).
                    crate::inbox::inbox_row(
                        &finality_core::Scope::own(r.name.as_str()),
                        ev,
                        Vec::new(),
                        serde_json::json!({"via": "event_list"}),
                        Source::Sweep,
                    )
                })
                .collect();
            round.events += rows.len();
            if !rows.is_empty() {
                let now = self.clock.now();
                let fresh = self
                    .store
                    .inbox_insert(&rows, now)
                    .await
                    .map_err(|e| RoundError::Store("storing listed events", e))?;
                let n = fresh.iter().filter(|f| **f).count();
                round.fresh += n;
                metrics::counter!("finality_catch_up_events_total", "provider" => r.name.clone())
                    .increment(n as u64);
            }
            if let Some(c) = &page.cursor {
                if cursor.as_deref() != Some(c) {
                    let saved = self
                        .store
                        .cursor_save(&r.name, &self.holder, c, self.clock.now())
                        .await
                        .map_err(|e| RoundError::Store("saving the cursor", e))?;
                    if !saved {
                        // Our lease ran out and another node took over:
                        // its cursor stands; what we stored is deduplicated.
                        return Ok(round);
                    }
                    cursor = Some(c.clone());
                }
            }
            if !page.more {
                break;
            }
        }
        if round.fresh > 0 {
            tracing::info!(provider = %r.name, calls = round.calls, events = round.events, fresh = round.fresh, "caught up from the event list");
        }
        Ok(round)
    }

    /// Run until `shutdown`, sleeping until the next read is due.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            self.run_due().await;
            let now = self.clock.now();
            let sleep = self
                .next_at()
                .map_or(MAX_EVERY, |t| t.since(now))
                .max(Duration::from_millis(10));
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                _ = shutdown.cancelled() => {}
            }
        }
    }
}

/// Why a round of one provider's list stopped (logged; its polls still
/// cover its payments, and it is read again after its interval).
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error("{0}: {1}")]
    Store(&'static str, #[source] finality_store::StoreError),
    #[error("listing events: {0}")]
    List(#[source] finality_providers::ProviderError),
}
