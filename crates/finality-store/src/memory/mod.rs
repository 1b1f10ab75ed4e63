//! A store in process memory, for simulations (`finality simulate` runs the
//! real engine over hundreds of thousands of payments in seconds) and
//! nothing else: nothing survives the process.
//!
//! It keeps the same contract as the SQL backends (the conformance suite
//! runs against it too) and shares their decisions: a report is decided by
//! `decide_report`, a completion by `complete_in` (fence, plan, changes),
//! and every change is built by the one transition writer; only the last
//! step, changing maps instead of sending SQL, is this module's.

use crate::driver::Writes;
use crate::driver::{Leased, Writer};
use crate::error::Result;
use crate::inbox::decide::{other_object, ByMerchantRef};
use crate::model::*;
use crate::{Store, Wakeups};
use finality_core::{Kind, Scope, Status, Timestamp};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tokio::sync::Mutex;

/// A store in memory. One lock serializes writers, as SQLite's file lock does.
#[derive(Debug)]
pub struct MemStore {
    pub(crate) state: Mutex<MemState>,
    pub(crate) wake: Wakeups,
}

impl Default for MemStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemStore {
    pub fn new() -> Self {
        MemStore {
            state: Mutex::new(MemState::default()),
            wake: Wakeups::new(),
        }
    }

    /// A store that counts provider calls but keeps no record of each
    /// (`attempts` returns none): a simulation of millions of polls needs
    /// the outcome, not the log.
    pub fn without_call_log() -> Self {
        let store = Self::new();
        store
            .state
            .try_lock()
            .map(|mut s| s.forget_calls = true)
            .ok();
        store
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// The payment's number in `names` (the due index holds numbers, not
    /// id strings: no allocation or string compare per poll).
    pub(crate) slot: u32,
    pub(crate) provider: String,
    pub(crate) provider_ref: Option<String>,
    pub(crate) merchant_ref: Option<String>,
    pub(crate) account: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) registered_at: Timestamp,
    pub(crate) next_poll_at: Option<i64>,
    pub(crate) due_at: Option<i64>,
    /// While an early look is pending: the time it displaced.
    pub(crate) resume_at: Option<i64>,
    pub(crate) early_looks: u32,
    pub(crate) attempts: i32,
    pub(crate) errors: i32,
    pub(crate) locked_by: Option<String>,
    pub(crate) locked_until: Option<i64>,
    pub(crate) lock_token: Option<i64>,
    pub(crate) last_error: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct InboxRow {
    pub(crate) ev: InboxEvent,
    pub(crate) next_attempt_at: Option<i64>,
}

#[derive(Debug, Clone)]
pub(crate) struct OutboxRow {
    pub(crate) ev: OutboxEvent,
    pub(crate) feed_seq: Option<i64>,
    /// The payment's counted pieces when the event was written.
    pub(crate) pieces: Vec<finality_core::amounts::Piece>,
    /// The flag a flag event is about.
    pub(crate) flag: Option<crate::flags::Flag>,
}

#[derive(Debug, Default)]
pub(crate) struct MemState {
    pub(crate) forget_calls: bool,
    pub(crate) payments: HashMap<String, Payment>,
    /// Payment ids in order, for keyset paging.
    pub(crate) ids: BTreeSet<String>,
    /// Payments by `(scope, provider_ref)` and `(scope, merchant_ref)`:
    /// found only within their own account, as on SQL.
    pub(crate) by_ref: HashMap<(Scope, String), String>,
    pub(crate) by_merchant: HashMap<(Scope, String), String>,
    pub(crate) jobs: HashMap<String, Job>,
    /// `(next_poll_at, slot)` of every unparked job: the due index.
    pub(crate) due: BTreeSet<(i64, u32)>,
    /// Payment ids by slot.
    pub(crate) names: Vec<String>,
    pub(crate) history: HashMap<String, Vec<HistoryEntry>>,
    /// Each payment's counted sub-objects (`payments.pieces` on SQL).
    pub(crate) pieces: HashMap<String, Vec<finality_core::amounts::Piece>>,
    /// Facts after final, by id (`payment_flags` on SQL).
    pub(crate) flags: Vec<crate::flags::Flag>,
    pub(crate) attempts: HashMap<String, Vec<AttemptRecord>>,
    pub(crate) attempt_seq: i64,
    pub(crate) inbox: Vec<InboxRow>,
    /// Webhook rows by `(scope, event_id)`: deduplicated within an account.
    pub(crate) inbox_key: HashMap<(Scope, String), usize>,
    /// `(next_attempt_at, row index)` of received and failed events.
    pub(crate) inbox_due: BTreeSet<(i64, usize)>,
    /// Rows of orphaned events, so a registration or the adoption backstop
    /// looks at those only.
    pub(crate) orphans: BTreeSet<usize>,
    pub(crate) outbox: BTreeMap<i64, OutboxRow>,
    pub(crate) outbox_seq: i64,
    pub(crate) unsequenced: BTreeSet<i64>,
    pub(crate) feed: BTreeMap<i64, i64>,
    pub(crate) last_feed_seq: i64,
    pub(crate) destinations: BTreeMap<String, DestinationState>,
    pub(crate) deliveries: Vec<DeliveryAttempt>,
    pub(crate) redeliveries: Vec<Redelivery>,
    pub(crate) buckets: HashMap<String, (f64, i64)>,
    /// Newest registration per provider.
    pub(crate) newest: HashMap<String, i64>,
    /// Live nodes: `(started_at, heartbeat_at)` per worker.
    pub(crate) nodes: HashMap<String, (i64, i64)>,
    /// Event-list cursors: `(cursor, holder, held_until)` per provider.
    pub(crate) cursors: HashMap<String, (Option<String>, Option<String>, i64)>,
    pub(crate) audit: Vec<crate::review::AuditRecord>,
    pub(crate) sweep_runs: Vec<crate::sweep::SweepRun>,
    pub(crate) recon_runs: Vec<crate::reconciliations::ReconRun>,
    pub(crate) recon_lines: Vec<(i64, crate::reconciliations::ReconLine)>,
    pub(crate) recon_seen: BTreeSet<(i64, String)>,
    pub(crate) recon_alive: HashMap<i64, i64>,
    /// Announced settlement report files by (provider, name).
    pub(crate) settlement_files: BTreeMap<(Scope, String), crate::reconciliations::AnnouncedFile>,
    /// Run-time accounts by (provider, account).
    pub(crate) accounts: BTreeMap<(String, String), crate::accounts::AccountRow>,
}

impl MemState {
    /// An outbox row, unsequenced, with the payment's counted `pieces`
    /// at the time and the `flag` a flag event is about.
    pub(crate) fn push_outbox(
        &mut self,
        mut ev: OutboxEvent,
        pieces: Vec<finality_core::amounts::Piece>,
        flag: Option<crate::flags::Flag>,
    ) {
        self.outbox_seq += 1;
        ev.seq = self.outbox_seq;
        self.outbox.insert(
            self.outbox_seq,
            OutboxRow {
                ev,
                feed_seq: None,
                pieces,
                flag,
            },
        );
        self.unsequenced.insert(self.outbox_seq);
    }

    pub(crate) fn set_next_poll(&mut self, id: &str, next: Option<i64>) {
        if let Some(job) = self.jobs.get_mut(id) {
            if let Some(old) = job.next_poll_at {
                self.due.remove(&(old, job.slot));
            }
            job.next_poll_at = next;
            if let Some(new) = next {
                self.due.insert((new, job.slot));
            }
        }
    }

    /// Make `worker`'s leased polls due again at the time they were due
    /// when claimed (never later than `now`), their tokens cleared.
    pub(crate) fn release(&mut self, worker: &str, now: i64) -> u64 {
        let ids: Vec<(String, i64)> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.locked_by.as_deref() == Some(worker))
            .map(|(id, j)| (id.clone(), j.due_at.map_or(now, |d| d.min(now))))
            .collect();
        for (id, due) in &ids {
            self.set_next_poll(id, Some(*due));
            if let Some(j) = self.jobs.get_mut(id) {
                j.locked_by = None;
                j.locked_until = None;
                j.lock_token = None;
            }
        }
        ids.len() as u64
    }

    pub(crate) fn drop_job(&mut self, id: &str) {
        if let Some(job) = self.jobs.remove(id) {
            if let Some(old) = job.next_poll_at {
                self.due.remove(&(old, job.slot));
            }
        }
    }

    pub(crate) fn set_inbox_next(&mut self, i: usize, next: Option<i64>) {
        if let Some(old) = self.inbox[i].next_attempt_at {
            self.inbox_due.remove(&(old, i));
        }
        self.inbox[i].next_attempt_at = next;
        let open = matches!(
            self.inbox[i].ev.state,
            InboxState::Received | InboxState::Failed
        );
        if let (Some(new), true) = (next, open) {
            self.inbox_due.insert((new, i));
        }
    }

    pub(crate) fn set_inbox_state(&mut self, i: usize, state: InboxState, reason: Option<String>) {
        if state == InboxState::Orphaned {
            self.orphans.insert(i);
        } else {
            self.orphans.remove(&i);
        }
        self.inbox[i].ev.state = state;
        self.inbox[i].ev.reason = reason;
        self.set_inbox_next(i, None);
    }

    pub(crate) fn record_ref(&mut self, id: &str, provider_ref: &str) {
        let Some(p) = self.payments.get_mut(id) else {
            return;
        };
        if p.provider_ref.is_none() {
            p.provider_ref = Some(provider_ref.to_string());
            self.by_ref.insert(
                (
                    Scope::new(p.provider.as_str(), p.account.as_deref()),
                    provider_ref.to_string(),
                ),
                id.to_string(),
            );
        }
        if let Some(j) = self.jobs.get_mut(id) {
            if j.provider_ref.is_none() {
                j.provider_ref = Some(provider_ref.to_string());
            }
        }
    }

    /// The payment an event is about, as `inbox_process` on SQL finds it.
    /// Take `ev`'s pieces into payment `id`'s ledger (see
    /// [`crate::amounts::count`]).
    pub(crate) fn count(
        &mut self,
        id: &str,
        ev: &InboxEvent,
        said: Status,
    ) -> (Option<crate::amounts::Counted>, bool) {
        let Some(p) = self.payments.get(id) else {
            return (None, false);
        };
        let stored = self.pieces.get(id).cloned().unwrap_or_default();
        let crate::amounts::Tally {
            counted,
            kept,
            moved,
        } = crate::amounts::count(
            p.kind,
            p.amount,
            &p.currency,
            stored,
            &ev.reported.pieces,
            said,
        );
        if let Some(kept) = kept {
            self.pieces.insert(id.to_string(), kept);
        }
        (counted, moved)
    }

    pub(crate) fn find_for_event(&mut self, ev: &InboxEvent) -> ByMerchantRef {
        let scope = ev.scope();
        if let Some(r) = &ev.provider_ref {
            if let Some(id) = self.by_ref.get(&(scope.clone(), r.clone())) {
                return ByMerchantRef::Found(id.clone());
            }
        }
        let Some(m) = &ev.merchant_ref else {
            return ByMerchantRef::None;
        };
        let Some(id) = self.by_merchant.get(&(scope, m.clone())).cloned() else {
            return ByMerchantRef::None;
        };
        let known = self.payments.get(&id).and_then(|p| p.provider_ref.clone());
        match (known, ev.provider_ref.as_deref()) {
            (None, Some(_)) if crate::amounts::refused_attempt(ev) => ByMerchantRef::Attempt(id),
            (None, Some(found)) => {
                self.record_ref(&id, found);
                ByMerchantRef::Found(id)
            }
            (Some(known), Some(named)) if known != named => {
                ByMerchantRef::Other(other_object(named, &id, m, &known))
            }
            _ => ByMerchantRef::Found(id),
        }
    }
}

#[async_trait::async_trait]
impl Writer for MemState {
    async fn insert_attempts(&mut self, attempts: &[&NewAttempt]) -> Result<()> {
        if self.forget_calls {
            self.attempt_seq += attempts.len() as i64;
            return Ok(());
        }
        for a in attempts {
            self.attempt_seq += 1;
            self.attempts
                .entry(a.payment_id.clone())
                .or_default()
                .push(AttemptRecord {
                    id: self.attempt_seq,
                    attempt: (*a).clone(),
                });
        }
        Ok(())
    }

    async fn lock_leases(&mut self, ids: &[&str]) -> Result<Vec<Leased>> {
        Ok(ids
            .iter()
            .filter_map(|id| {
                let p = self.payments.get(*id)?;
                let j = self.jobs.get(*id)?;
                Some(Leased {
                    payment_id: (*id).to_string(),
                    status: p.status,
                    kind: p.kind,
                    lock_token: j.lock_token,
                })
            })
            .collect())
    }

    async fn write(&mut self, w: &Writes) -> Result<()> {
        let parse_status = |s: &str| {
            s.parse::<Status>()
                .map_err(|e| crate::driver::corrupt("payments", e))
        };
        for i in 0..w.pay_id.len() {
            let status = parse_status(&w.pay_status[i])?;
            let source = w.pay_source[i]
                .parse()
                .map_err(|e| crate::driver::corrupt("payments", e))?;
            if let Some(p) = self.payments.get_mut(&w.pay_id[i]) {
                p.status = status;
                p.status_source = Some(source);
                p.updated_at = Timestamp(w.pay_at[i]);
                p.finalized_at = p.finalized_at.or(w.pay_fin[i].map(Timestamp));
            }
        }
        for i in 0..w.step_id.len() {
            let from = parse_status(&w.step_from[i])?;
            let to = parse_status(&w.step_to[i])?;
            let source = w.step_source[i]
                .parse()
                .map_err(|e| crate::driver::corrupt("status_history", e))?;
            self.history
                .entry(w.step_id[i].clone())
                .or_default()
                .push(HistoryEntry {
                    from: Some(from),
                    to,
                    source,
                    event_id: w.step_event[i].clone(),
                    reason: w.step_reason[i].clone(),
                    actor: w.step_actor[i].clone(),
                    observed_at: Timestamp(w.step_observed[i]),
                    at: Timestamp(w.step_at[i]),
                });
            let pieces = self.pieces.get(&w.step_id[i]).cloned().unwrap_or_default();
            self.push_outbox(
                OutboxEvent {
                    seq: 0,
                    event_id: w.out_event[i].clone(),
                    payment_id: w.step_id[i].clone(),
                    event_type: w.out_type[i].clone(),
                    status: to,
                    previous_status: Some(from),
                    source,
                    occurred_at: Timestamp(w.step_at[i]),
                },
                pieces,
                None,
            );
        }
        for id in &w.delete {
            self.drop_job(id);
        }
        for i in 0..w.job_id.len() {
            let id = &w.job_id[i];
            self.set_next_poll(id, w.job_next[i]);
            if let Some(j) = self.jobs.get_mut(id) {
                j.attempts += w.job_inc[i];
                j.errors = if w.job_reset[i] {
                    w.job_einc[i]
                } else {
                    j.errors + w.job_einc[i]
                };
                j.due_at = None;
                j.resume_at = None;
                j.locked_by = None;
                j.locked_until = None;
                j.lock_token = None;
                j.last_error = if w.job_park[i] {
                    w.job_err[i].clone().or(j.last_error.take())
                } else {
                    w.job_err[i].clone()
                };
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Store for MemStore {
    async fn migrate(&self) -> Result<()> {
        Ok(())
    }
}
