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
use crate::inbox::{checked_report, other_object, unknown_status, verdict, ORPHANED};
use crate::model::*;
use crate::payments::decide_report;
use crate::poll_queue::complete_in;
use crate::review::{
    outcome_text, queue_matches, AuditFilter, AuditRecord, NewAudit, ReviewFilter, ReviewItem,
};
use crate::transition::write_changes;
use crate::{
    CursorLease, Cursors, EventFeed, PaymentStore, PollQueue, RateBuckets, Review, Store, Wakeups,
    WebhookInbox,
};
use finality_core::{Kind, Status, Timestamp};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tokio::sync::{watch, Mutex};

/// A store in memory. One lock serializes writers, as SQLite's file lock does.
#[derive(Debug)]
pub struct MemStore {
    state: Mutex<MemState>,
    wake: Wakeups,
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
struct Job {
    /// The payment's number in `names` (the due index holds numbers, not
    /// id strings: no allocation or string compare per poll).
    slot: u32,
    provider: String,
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    kind: Kind,
    registered_at: Timestamp,
    next_poll_at: Option<i64>,
    due_at: Option<i64>,
    /// While an early look is pending: the time it displaced.
    resume_at: Option<i64>,
    early_looks: u32,
    attempts: i32,
    errors: i32,
    locked_by: Option<String>,
    locked_until: Option<i64>,
    lock_token: Option<i64>,
    last_error: Option<String>,
}

#[derive(Debug, Clone)]
struct InboxRow {
    ev: InboxEvent,
    next_attempt_at: Option<i64>,
}

#[derive(Debug, Clone)]
struct OutboxRow {
    ev: OutboxEvent,
    feed_seq: Option<i64>,
}

#[derive(Debug, Default)]
struct MemState {
    forget_calls: bool,
    payments: HashMap<String, Payment>,
    /// Payment ids in order, for keyset paging.
    ids: BTreeSet<String>,
    by_ref: HashMap<(String, String), String>,
    by_merchant: HashMap<(String, String), String>,
    jobs: HashMap<String, Job>,
    /// `(next_poll_at, slot)` of every unparked job: the due index.
    due: BTreeSet<(i64, u32)>,
    /// Payment ids by slot.
    names: Vec<String>,
    history: HashMap<String, Vec<HistoryEntry>>,
    attempts: HashMap<String, Vec<AttemptRecord>>,
    attempt_seq: i64,
    inbox: Vec<InboxRow>,
    inbox_key: HashMap<(String, String), usize>,
    /// `(next_attempt_at, row index)` of received and failed events.
    inbox_due: BTreeSet<(i64, usize)>,
    /// Rows of orphaned events, so a registration or the adoption backstop
    /// looks at those only.
    orphans: BTreeSet<usize>,
    outbox: BTreeMap<i64, OutboxRow>,
    outbox_seq: i64,
    unsequenced: BTreeSet<i64>,
    feed: BTreeMap<i64, i64>,
    last_feed_seq: i64,
    destinations: BTreeMap<String, DestinationState>,
    deliveries: Vec<DeliveryAttempt>,
    buckets: HashMap<String, (f64, i64)>,
    /// Newest registration per provider.
    newest: HashMap<String, i64>,
    /// Live nodes: `(started_at, heartbeat_at)` per worker.
    nodes: HashMap<String, (i64, i64)>,
    /// Event-list cursors: `(cursor, holder, held_until)` per provider.
    cursors: HashMap<String, (Option<String>, Option<String>, i64)>,
    audit: Vec<crate::review::AuditRecord>,
    sweep_runs: Vec<crate::sweep::SweepRun>,
    recon_runs: Vec<crate::reconciliations::ReconRun>,
    recon_lines: Vec<(i64, crate::reconciliations::ReconLine)>,
    recon_seen: BTreeSet<(i64, String)>,
    recon_alive: HashMap<i64, i64>,
}

impl MemState {
    fn set_next_poll(&mut self, id: &str, next: Option<i64>) {
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
    fn release(&mut self, worker: &str, now: i64) -> u64 {
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

    fn drop_job(&mut self, id: &str) {
        if let Some(job) = self.jobs.remove(id) {
            if let Some(old) = job.next_poll_at {
                self.due.remove(&(old, job.slot));
            }
        }
    }

    fn set_inbox_next(&mut self, i: usize, next: Option<i64>) {
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

    fn set_inbox_state(&mut self, i: usize, state: InboxState, reason: Option<String>) {
        if state == InboxState::Orphaned {
            self.orphans.insert(i);
        } else {
            self.orphans.remove(&i);
        }
        self.inbox[i].ev.state = state;
        self.inbox[i].ev.reason = reason;
        self.set_inbox_next(i, None);
    }

    fn record_ref(&mut self, id: &str, provider_ref: &str) {
        let Some(p) = self.payments.get_mut(id) else {
            return;
        };
        if p.provider_ref.is_none() {
            p.provider_ref = Some(provider_ref.to_string());
            self.by_ref.insert(
                (p.provider.clone(), provider_ref.to_string()),
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
    fn find_for_event(&mut self, ev: &InboxEvent) -> std::result::Result<Option<String>, String> {
        if let Some(r) = &ev.provider_ref {
            if let Some(id) = self.by_ref.get(&(ev.provider.clone(), r.clone())) {
                return Ok(Some(id.clone()));
            }
        }
        let Some(m) = &ev.merchant_ref else {
            return Ok(None);
        };
        let Some(id) = self
            .by_merchant
            .get(&(ev.provider.clone(), m.clone()))
            .cloned()
        else {
            return Ok(None);
        };
        let known = self.payments.get(&id).and_then(|p| p.provider_ref.clone());
        match (known, ev.provider_ref.as_deref()) {
            (None, Some(found)) => {
                self.record_ref(&id, found);
                Ok(Some(id))
            }
            (Some(known), Some(named)) if known != named => {
                Err(other_object(named, &id, m, &known))
            }
            _ => Ok(Some(id)),
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
            self.outbox_seq += 1;
            self.outbox.insert(
                self.outbox_seq,
                OutboxRow {
                    ev: OutboxEvent {
                        seq: self.outbox_seq,
                        event_id: w.out_event[i].clone(),
                        payment_id: w.step_id[i].clone(),
                        event_type: w.out_type[i].clone(),
                        status: to,
                        previous_status: Some(from),
                        source,
                        occurred_at: Timestamp(w.step_at[i]),
                    },
                    feed_seq: None,
                },
            );
            self.unsequenced.insert(self.outbox_seq);
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

fn applied_any(out: &[CompleteOutcome]) -> bool {
    out.iter()
        .any(|o| matches!(o, CompleteOutcome::Done { applied } if !applied.is_empty()))
}

#[async_trait::async_trait]
impl PaymentStore for MemStore {
    async fn register(
        &self,
        p: &NewPayment,
        now: Timestamp,
        first_poll_at: Timestamp,
    ) -> Result<Registered> {
        let mut s = self.state.lock().await;
        let id = p.id.as_str().to_string();
        if let Some(existing) = s.payments.get(&id) {
            return Ok(if existing.same_body(p) {
                Registered::Existing(existing.clone())
            } else {
                Registered::Conflict(existing.clone())
            });
        }
        let provider_ref = p.provider_ref.as_ref().map(|r| r.as_str().to_string());
        let merchant_ref = p.merchant_ref.as_ref().map(|r| r.as_str().to_string());
        let taken_ref = provider_ref
            .as_ref()
            .and_then(|r| s.by_ref.get(&(p.provider.clone(), r.clone())));
        let taken_merchant = merchant_ref
            .as_ref()
            .and_then(|m| s.by_merchant.get(&(p.provider.clone(), m.clone())));
        if let Some(other) = taken_ref {
            return Ok(Registered::RefTaken {
                other_id: other.clone(),
                field: "provider_ref",
            });
        }
        if let Some(other) = taken_merchant {
            return Ok(Registered::RefTaken {
                other_id: other.clone(),
                field: "merchant_ref",
            });
        }
        let payment = Payment::pending(p, now);
        s.payments.insert(id.clone(), payment.clone());
        s.ids.insert(id.clone());
        let newest = s.newest.entry(payment.provider.clone()).or_insert(now.0);
        *newest = (*newest).max(payment.created_at.0);
        if let Some(r) = &provider_ref {
            s.by_ref.insert((p.provider.clone(), r.clone()), id.clone());
        }
        if let Some(m) = &merchant_ref {
            s.by_merchant
                .insert((p.provider.clone(), m.clone()), id.clone());
        }
        let slot = u32::try_from(s.names.len()).map_err(|_| {
            crate::driver::corrupt("poll_jobs", "more than 4 billion payments in memory")
        })?;
        s.names.push(id.clone());
        s.jobs.insert(
            id.clone(),
            Job {
                slot,
                provider: p.provider.clone(),
                provider_ref: provider_ref.clone(),
                merchant_ref: merchant_ref.clone(),
                kind: p.kind,
                registered_at: now,
                next_poll_at: None,
                due_at: None,
                resume_at: None,
                early_looks: 0,
                attempts: 0,
                errors: 0,
                locked_by: None,
                locked_until: None,
                lock_token: None,
                last_error: None,
            },
        );
        s.set_next_poll(&id, Some(first_poll_at.0));
        // Webhooks that beat the registration are applied now.
        let orphans: Vec<usize> = s
            .orphans
            .iter()
            .copied()
            .filter(|i| {
                let r = &s.inbox[*i].ev;
                r.provider == p.provider
                    && ((provider_ref.is_some() && r.provider_ref == provider_ref)
                        || (merchant_ref.is_some() && r.merchant_ref == merchant_ref))
            })
            .collect();
        for i in orphans {
            s.orphans.remove(&i);
            s.inbox[i].ev.state = InboxState::Received;
            s.set_inbox_next(i, Some(now.0));
        }
        drop(s);
        self.wake.bump();
        Ok(Registered::Created(payment))
    }

    async fn apply(&self, report: &Report, now: Timestamp) -> Result<ApplyOutcome> {
        let mut s = self.state.lock().await;
        let Some(p) = s.payments.get(&report.payment_id) else {
            return Ok(ApplyOutcome::NotFound);
        };
        let (out, change) = decide_report(report, p.kind, p.status, now);
        if let Some(change) = change {
            write_changes(&mut *s, &[change]).await?;
            drop(s);
            self.wake.bump_transitions();
        }
        Ok(out)
    }

    async fn get(&self, id: &str) -> Result<Option<PaymentView>> {
        let s = self.state.lock().await;
        let Some(payment) = s.payments.get(id).cloned() else {
            return Ok(None);
        };
        let poll = s.jobs.get(id).map(|j| PollState {
            attempts: u32::try_from(j.attempts).unwrap_or(0),
            errors: u32::try_from(j.errors).unwrap_or(0),
            next_poll_at: j.next_poll_at.map(Timestamp),
            locked_by: j.locked_by.clone(),
            last_error: j.last_error.clone(),
        });
        let history = s.history.get(id).cloned().unwrap_or_default();
        Ok(Some(PaymentView {
            payment,
            poll,
            history,
        }))
    }

    async fn list(&self, f: &ListFilter) -> Result<Vec<Payment>> {
        let s = self.state.lock().await;
        let from = match &f.after_id {
            Some(a) => std::ops::Bound::Excluded(a.clone()),
            None => std::ops::Bound::Unbounded,
        };
        Ok(s.ids
            .range((from, std::ops::Bound::Unbounded))
            .filter_map(|id| s.payments.get(id))
            .filter(|p| f.status.is_none_or(|st| p.status == st))
            .filter(|p| f.provider.as_ref().is_none_or(|pr| &p.provider == pr))
            .take(f.limit as usize)
            .cloned()
            .collect())
    }

    async fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
        let s = self.state.lock().await;
        Ok(s.attempts.get(id).cloned().unwrap_or_default())
    }

    async fn status_counts(&self) -> Result<Vec<(Status, i64)>> {
        let s = self.state.lock().await;
        let mut counts: BTreeMap<&'static str, (Status, i64)> = BTreeMap::new();
        for p in s.payments.values() {
            counts.entry(p.status.as_str()).or_insert((p.status, 0)).1 += 1;
        }
        Ok(counts.into_values().collect())
    }

    async fn newest_registration(&self, provider: &str) -> Result<Option<Timestamp>> {
        Ok(self
            .state
            .lock()
            .await
            .newest
            .get(provider)
            .map(|t| Timestamp(*t)))
    }

    async fn stats_rows(&self, since: Timestamp) -> Result<Vec<crate::stats::StatsRow>> {
        let s = self.state.lock().await;
        Ok(s.payments
            .values()
            .filter(|p| p.created_at >= since)
            .map(|p| crate::stats::StatsRow {
                provider: p.provider.clone(),
                status: p.status,
                source: p.status_source,
                created_at: p.created_at,
                finalized_at: p.finalized_at,
                calls: s.attempts.get(&p.id).map_or(0, |a| a.len() as i64),
            })
            .collect())
    }

    async fn error_counts(&self, since: Timestamp) -> Result<Vec<(String, String, i64)>> {
        let s = self.state.lock().await;
        let mut counts: BTreeMap<(String, String), i64> = BTreeMap::new();
        let in_window = |id: &str| s.payments.get(id).is_some_and(|p| p.created_at >= since);
        for a in s.attempts.values().flatten() {
            if let (true, Some(class)) = (in_window(&a.attempt.payment_id), &a.attempt.error_class)
            {
                *counts
                    .entry((a.attempt.provider.clone(), class.clone()))
                    .or_default() += 1;
            }
        }
        Ok(counts.into_iter().map(|((p, c), n)| (p, c, n)).collect())
    }

    async fn find_by_ref(&self, provider: &str, provider_ref: &str) -> Result<Option<String>> {
        let s = self.state.lock().await;
        let key = (provider.to_string(), provider_ref.to_string());
        Ok(s.by_ref
            .get(&key)
            .or_else(|| s.by_merchant.get(&key))
            .cloned())
    }
}

#[async_trait::async_trait]
impl PollQueue for MemStore {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>> {
        let token: i64 = rand::random::<i64>() & i64::MAX;
        let mut s = self.state.lock().await;
        let due: Vec<(i64, String)> = s
            .due
            .iter()
            .take_while(|(at, _)| *at <= req.now.0)
            .take(req.limit as usize)
            .map(|(at, slot)| (*at, s.names[*slot as usize].clone()))
            .collect();
        let mut out = Vec::with_capacity(due.len());
        for (at, id) in due {
            s.set_next_poll(&id, Some(req.lease_until.0));
            let Some(j) = s.jobs.get_mut(&id) else {
                continue;
            };
            j.due_at = Some(at);
            j.locked_until = Some(req.lease_until.0);
            j.locked_by = Some(req.worker.clone());
            j.lock_token = Some(token);
            out.push(ClaimedJob {
                payment_id: id.clone(),
                provider: j.provider.clone(),
                provider_ref: j.provider_ref.clone(),
                merchant_ref: j.merchant_ref.clone(),
                kind: j.kind,
                registered_at: j.registered_at,
                attempts: u32::try_from(j.attempts).unwrap_or(0),
                errors: u32::try_from(j.errors).unwrap_or(0),
                due_at: Timestamp(at),
                resume_at: j.resume_at.map(Timestamp),
                lock_token: token,
            });
        }
        Ok(out)
    }

    async fn complete(&self, c: &Completion) -> Result<CompleteOutcome> {
        let mut out = self.complete_batch(std::slice::from_ref(c)).await?;
        Ok(out.pop().unwrap_or(CompleteOutcome::LeaseLost))
    }

    async fn complete_batch(&self, cs: &[Completion]) -> Result<Vec<CompleteOutcome>> {
        let mut s = self.state.lock().await;
        let out = complete_in(&mut *s, cs).await?;
        drop(s);
        if applied_any(&out) {
            self.wake.bump_transitions();
        }
        Ok(out)
    }

    async fn poll_now(&self, id: &str, now: Timestamp) -> Result<PollNow> {
        let mut s = self.state.lock().await;
        let Some(p) = s.payments.get(id) else {
            return Ok(PollNow::NotFound);
        };
        if p.status.is_final() {
            return Ok(PollNow::AlreadyFinal);
        }
        let free = s
            .jobs
            .get(id)
            .is_some_and(|j| j.locked_until.is_none_or(|u| u <= now.0));
        let out = if free {
            s.set_next_poll(id, Some(now.0));
            if let Some(j) = s.jobs.get_mut(id) {
                j.due_at = None;
                j.resume_at = None;
            }
            PollNow::Scheduled
        } else {
            PollNow::InFlight
        };
        drop(s);
        self.wake.bump();
        Ok(out)
    }

    async fn look_early(
        &self,
        provider: &str,
        provider_ref: &str,
        now: Timestamp,
        per_payment: u32,
    ) -> Result<Option<String>> {
        let mut s = self.state.lock().await;
        let key = (provider.to_string(), provider_ref.to_string());
        let Some(id) = s
            .by_ref
            .get(&key)
            .or_else(|| s.by_merchant.get(&key))
            .cloned()
        else {
            return Ok(None);
        };
        let Some(j) = s.jobs.get_mut(&id) else {
            return Ok(None);
        };
        let open = j.resume_at.is_none()
            && j.next_poll_at.is_some_and(|at| at > now.0)
            && j.early_looks < per_payment
            && j.locked_until.is_none_or(|u| u <= now.0);
        if !open {
            return Ok(None);
        }
        j.resume_at = j.next_poll_at;
        j.early_looks += 1;
        j.due_at = None;
        s.set_next_poll(&id, Some(now.0));
        drop(s);
        self.wake.bump();
        Ok(Some(id))
    }

    async fn hurry(&self, provider: &str, by: Timestamp, now: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        let ids: Vec<String> = s
            .jobs
            .iter()
            .filter(|(_, j)| {
                j.provider == provider
                    && (j.next_poll_at.is_some_and(|n| n > by.0)
                        || j.resume_at.is_some_and(|n| n > by.0))
                    && j.locked_until.is_none_or(|u| u <= now.0)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            let next = s.jobs.get(id).and_then(|j| j.next_poll_at);
            s.set_next_poll(id, next.map(|n| n.min(by.0)));
            if let Some(j) = s.jobs.get_mut(id) {
                j.due_at = None;
                j.resume_at = j.resume_at.map(|r| r.min(by.0));
            }
        }
        drop(s);
        if !ids.is_empty() {
            self.wake.bump();
        }
        Ok(ids.len() as u64)
    }

    async fn heartbeat(&self, worker: &str, now: Timestamp) -> Result<()> {
        let mut s = self.state.lock().await;
        s.nodes
            .entry(worker.to_string())
            .and_modify(|n| n.1 = now.0)
            .or_insert((now.0, now.0));
        Ok(())
    }

    async fn release_dead(&self, cutoff: Timestamp, now: Timestamp) -> Result<Vec<(String, u64)>> {
        let mut s = self.state.lock().await;
        let mut dead: Vec<String> = s
            .nodes
            .iter()
            .filter(|(_, n)| n.1 < cutoff.0)
            .map(|(w, _)| w.clone())
            .collect();
        dead.sort();
        let out: Vec<(String, u64)> = dead
            .into_iter()
            .map(|w| {
                s.nodes.remove(&w);
                let n = s.release(&w, now.0);
                (w, n)
            })
            .collect();
        drop(s);
        if out.iter().any(|(_, n)| *n > 0) {
            self.wake.bump();
        }
        Ok(out)
    }

    async fn release_worker(&self, worker: &str, now: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        s.nodes.remove(worker);
        let n = s.release(worker, now.0);
        drop(s);
        if n > 0 {
            self.wake.bump();
        }
        Ok(n)
    }

    async fn next_due_at(&self) -> Result<Option<Timestamp>> {
        let s = self.state.lock().await;
        Ok(s.due.first().map(|(at, _)| Timestamp(*at)))
    }

    async fn record_provider_ref(
        &self,
        id: &str,
        lock_token: i64,
        provider_ref: &str,
    ) -> Result<RefRecorded> {
        let mut s = self.state.lock().await;
        let Some(p) = s.payments.get(id) else {
            return Ok(RefRecorded::LeaseLost);
        };
        if s.jobs
            .get(id)
            .is_none_or(|j| j.lock_token != Some(lock_token))
        {
            return Ok(RefRecorded::LeaseLost);
        }
        match &p.provider_ref {
            Some(k) if k == provider_ref => return Ok(RefRecorded::Same),
            Some(existing) => {
                return Ok(RefRecorded::Different {
                    existing: existing.clone(),
                })
            }
            None => {}
        }
        if let Some(other) = s
            .by_ref
            .get(&(p.provider.clone(), provider_ref.to_string()))
        {
            return Ok(RefRecorded::Taken {
                other_id: other.clone(),
            });
        }
        s.record_ref(id, provider_ref);
        Ok(RefRecorded::Recorded)
    }
}

#[async_trait::async_trait]
impl WebhookInbox for MemStore {
    /// As the SQL stores do: the applied events are in the feed when this
    /// returns, without a sequencer round.
    async fn inbox_take_and_process(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<(InboxEvent, InboxOutcome)>> {
        let evs = self.inbox_claim(now, limit, lease_until).await?;
        let out = self.inbox_process_batch(&evs, now).await?;
        if out
            .iter()
            .any(|o| matches!(o, InboxOutcome::Applied { .. }))
        {
            EventFeed::sequence_feed(self, u32::MAX).await?;
        }
        Ok(evs.into_iter().zip(out).collect())
    }

    async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>> {
        let mut s = self.state.lock().await;
        let mut fresh = Vec::with_capacity(events.len());
        for e in events {
            let key = (e.provider.clone(), e.event_id.clone());
            if s.inbox_key.contains_key(&key) {
                fresh.push(false);
                continue;
            }
            let i = s.inbox.len();
            s.inbox.push(InboxRow {
                ev: InboxEvent {
                    id: i64::try_from(i).unwrap_or(i64::MAX) + 1,
                    provider: e.provider.clone(),
                    event_id: e.event_id.clone(),
                    provider_ref: e.provider_ref.clone(),
                    merchant_ref: e.merchant_ref.clone(),
                    observed: e.observed,
                    provider_status: e.provider_status.clone(),
                    occurred_at: e.occurred_at,
                    reported: e.reported.clone(),
                    received_at: now,
                    state: e.state,
                    reason: e.reason.clone(),
                    attempts: 0,
                    source: e.source,
                },
                next_attempt_at: None,
            });
            s.inbox_key.insert(key, i);
            let due = (e.state == InboxState::Received).then_some(now.0);
            s.set_inbox_next(i, due);
            fresh.push(true);
        }
        drop(s);
        if fresh.iter().any(|f| *f) {
            self.wake.bump_inbox();
        }
        Ok(fresh)
    }

    async fn inbox_claim(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<InboxEvent>> {
        let mut s = self.state.lock().await;
        let due: Vec<usize> = s
            .inbox_due
            .iter()
            .take_while(|(at, _)| *at <= now.0)
            .take(limit as usize)
            .map(|(_, i)| *i)
            .collect();
        let mut out = Vec::with_capacity(due.len());
        for i in due {
            s.set_inbox_next(i, Some(lease_until.0));
            s.inbox[i].ev.attempts += 1;
            out.push(s.inbox[i].ev.clone());
        }
        Ok(out)
    }

    async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome> {
        let mut s = self.state.lock().await;
        let Some(i) = usize::try_from(ev.id - 1)
            .ok()
            .filter(|i| *i < s.inbox.len())
        else {
            return Ok(InboxOutcome::LeaseLost);
        };
        let row = &s.inbox[i].ev;
        if row.attempts != ev.attempts
            || !matches!(row.state, InboxState::Received | InboxState::Failed)
        {
            return Ok(InboxOutcome::LeaseLost);
        }
        let payment_id = match s.find_for_event(ev) {
            Ok(Some(id)) => id,
            Ok(None) => {
                s.set_inbox_state(i, InboxState::Orphaned, Some(ORPHANED.to_string()));
                return Ok(InboxOutcome::Orphaned);
            }
            Err(why) => {
                s.set_inbox_state(i, InboxState::Ignored, Some(why.clone()));
                return Ok(InboxOutcome::Ignored { reason: why });
            }
        };
        let Some(status) = ev.observed else {
            let why = unknown_status(ev);
            s.set_inbox_state(i, InboxState::Review, Some(why.clone()));
            return Ok(InboxOutcome::Review { reason: why });
        };
        let (applied, mismatch) = match s.payments.get(&payment_id) {
            None => (ApplyOutcome::NotFound, None),
            Some(p) => {
                let (report, mismatch) =
                    checked_report(ev, &payment_id, status, p.amount, &p.currency);
                let (out, change) = decide_report(&report, p.kind, p.status, now);
                if let Some(change) = change {
                    write_changes(&mut *s, &[change]).await?;
                }
                (out, mismatch)
            }
        };
        let (state, reason, out) = verdict(ev, status, payment_id, applied, mismatch);
        s.set_inbox_state(i, state, reason);
        drop(s);
        if matches!(out, InboxOutcome::Applied { .. }) {
            self.wake.bump_transitions();
        }
        Ok(out)
    }

    async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()> {
        let mut s = self.state.lock().await;
        let Some(i) = usize::try_from(ev.id - 1)
            .ok()
            .filter(|i| *i < s.inbox.len())
        else {
            return Ok(());
        };
        let row = &s.inbox[i].ev;
        if row.attempts == ev.attempts
            && matches!(row.state, InboxState::Received | InboxState::Failed)
        {
            s.inbox[i].ev.state = InboxState::Failed;
            s.inbox[i].ev.reason = Some(error.to_string());
            s.set_inbox_next(i, Some(retry_at.0));
        }
        Ok(())
    }

    async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        let found: Vec<usize> =
            s.orphans
                .iter()
                .map(|i| (*i, &s.inbox[*i]))
                .filter(|(_, r)| {
                    let by_ref = r.ev.provider_ref.as_ref().is_some_and(|x| {
                        s.by_ref.contains_key(&(r.ev.provider.clone(), x.clone()))
                    });
                    let by_merchant = r.ev.merchant_ref.as_ref().is_some_and(|x| {
                        s.by_merchant
                            .contains_key(&(r.ev.provider.clone(), x.clone()))
                    });
                    by_ref || by_merchant
                })
                .map(|(i, _)| i)
                .collect();
        for i in &found {
            s.orphans.remove(i);
            s.inbox[*i].ev.state = InboxState::Received;
            s.set_inbox_next(*i, Some(now.0));
        }
        Ok(found.len() as u64)
    }

    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.inbox_key
            .get(&(provider.to_string(), event_id.to_string()))
            .map(|i| s.inbox[*i].ev.clone()))
    }

    async fn inbox_next_due(&self) -> Result<Option<Timestamp>> {
        let s = self.state.lock().await;
        Ok(s.inbox_due.first().map(|(at, _)| Timestamp(*at)))
    }

    async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>> {
        let s = self.state.lock().await;
        let mut counts: BTreeMap<&'static str, (InboxState, i64)> = BTreeMap::new();
        for r in &s.inbox {
            counts
                .entry(r.ev.state.as_str())
                .or_insert((r.ev.state, 0))
                .1 += 1;
        }
        Ok(counts.into_values().collect())
    }
}

#[async_trait::async_trait]
impl EventFeed for MemStore {
    async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.outbox
            .range(seq.saturating_add(1)..)
            .take(limit as usize)
            .map(|(_, r)| r.ev.clone())
            .collect())
    }

    async fn sequence_feed(&self, limit: u32) -> Result<u64> {
        let mut s = self.state.lock().await;
        let ids: Vec<i64> = s.unsequenced.iter().take(limit as usize).copied().collect();
        let mut finals = Vec::new();
        for id in &ids {
            s.unsequenced.remove(id);
            s.last_feed_seq += 1;
            let seq = s.last_feed_seq;
            if let Some(r) = s.outbox.get_mut(id) {
                r.feed_seq = Some(seq);
            }
            s.feed.insert(seq, *id);
            if let Some(ev) = s.outbox.get(id).map(|r| r.ev.clone()) {
                let into_final =
                    ev.status.is_final() && !ev.previous_status.is_some_and(|p| p.is_final());
                if let (true, Some(p)) = (into_final, s.payments.get(&ev.payment_id)) {
                    finals.push(crate::feed::FinalFact {
                        provider: p.provider.clone(),
                        source: ev.source,
                        after_ms: ev.occurred_at.0 - p.created_at.0,
                    });
                }
            }
        }
        drop(s);
        if !ids.is_empty() {
            self.wake.bump_feed();
        }
        crate::feed::record_finals(&finals);
        Ok(ids.len() as u64)
    }

    async fn feed_after(&self, cursor: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.feed
            .range(cursor.saturating_add(1)..)
            .take(limit as usize)
            .filter_map(|(seq, id)| {
                s.outbox.get(id).map(|r| OutboxEvent {
                    seq: *seq,
                    ..r.ev.clone()
                })
            })
            .collect())
    }

    async fn destination(&self, name: &str) -> Result<DestinationState> {
        let mut s = self.state.lock().await;
        Ok(s.destinations
            .entry(name.to_string())
            .or_insert_with(|| DestinationState {
                name: name.to_string(),
                delivered_seq: 0,
                attempts: 0,
                failing_since: None,
                next_attempt_at: None,
                last_error: None,
            })
            .clone())
    }

    async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool> {
        let mut s = self.state.lock().await;
        match s.destinations.get_mut(name) {
            Some(d) if d.delivered_seq == from => {
                d.delivered_seq = to;
                d.attempts = 0;
                d.failing_since = None;
                d.next_attempt_at = None;
                d.last_error = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn destination_failed(&self, st: &DestinationState) -> Result<()> {
        let mut s = self.state.lock().await;
        if let Some(d) = s.destinations.get_mut(&st.name) {
            if d.delivered_seq == st.delivered_seq {
                d.attempts = st.attempts;
                d.failing_since = st.failing_since;
                d.next_attempt_at = st.next_attempt_at;
                d.last_error = st.last_error.clone();
            }
        }
        Ok(())
    }

    async fn record_deliveries(&self, attempts: &[DeliveryAttempt]) -> Result<()> {
        self.state
            .lock()
            .await
            .deliveries
            .extend_from_slice(attempts);
        Ok(())
    }

    async fn deliveries(&self, destination: &str, limit: u32) -> Result<Vec<DeliveryAttempt>> {
        let s = self.state.lock().await;
        Ok(s.deliveries
            .iter()
            .filter(|d| d.destination == destination)
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn prune_events(&self, max_seq: i64, before: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        let gone: Vec<(i64, i64)> = s
            .feed
            .range(..=max_seq)
            .filter(|(_, id)| s.outbox.get(id).is_some_and(|r| r.ev.occurred_at < before))
            .map(|(seq, id)| (*seq, *id))
            .collect();
        for (seq, id) in &gone {
            s.feed.remove(seq);
            s.outbox.remove(id);
        }
        Ok(gone.len() as u64)
    }
}

#[async_trait::async_trait]
impl RateBuckets for MemStore {
    async fn take_tokens(
        &self,
        provider: &str,
        bucket: Bucket,
        want: u32,
        now: Timestamp,
    ) -> Result<(u32, f64)> {
        let mut s = self.state.lock().await;
        let (tokens, updated_at) = *s
            .buckets
            .entry(provider.to_string())
            .or_insert((bucket.burst, now.0));
        let (granted, left) = bucket.take(tokens, Timestamp(updated_at), now, want);
        s.buckets
            .insert(provider.to_string(), (left, now.0.max(updated_at)));
        Ok((granted, left))
    }
}

#[async_trait::async_trait]
impl Cursors for MemStore {
    async fn cursor_take(
        &self,
        provider: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<CursorLease>> {
        let mut s = self.state.lock().await;
        let row = s
            .cursors
            .entry(provider.to_string())
            .or_insert((None, None, 0));
        let free = match &row.1 {
            None => true,
            Some(h) => h == holder || row.2 <= now.0,
        };
        if !free {
            return Ok(None);
        }
        row.1 = Some(holder.to_string());
        row.2 = until.0;
        Ok(Some(CursorLease {
            cursor: row.0.clone(),
            held_until: until,
        }))
    }

    async fn cursor_save(
        &self,
        provider: &str,
        holder: &str,
        cursor: &str,
        _now: Timestamp,
    ) -> Result<bool> {
        let mut s = self.state.lock().await;
        match s.cursors.get_mut(provider) {
            Some(row) if row.1.as_deref() == Some(holder) => {
                row.0 = Some(cursor.to_string());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn cursor_release(&self, provider: &str, holder: &str) -> Result<()> {
        let mut s = self.state.lock().await;
        if let Some(row) = s.cursors.get_mut(provider) {
            if row.1.as_deref() == Some(holder) {
                row.1 = None;
                row.2 = 0;
            }
        }
        Ok(())
    }
}

impl MemState {
    fn push_audit(&mut self, a: &NewAudit, outcome: String) -> i64 {
        let id = i64::try_from(self.audit.len()).unwrap_or(i64::MAX) + 1;
        self.audit.push(AuditRecord {
            id,
            entry: NewAudit {
                outcome,
                ..a.clone()
            },
        });
        id
    }
}

#[async_trait::async_trait]
impl Review for MemStore {
    async fn review_queue(&self, f: &ReviewFilter) -> Result<Vec<ReviewItem>> {
        let s = self.state.lock().await;
        let mut items: Vec<ReviewItem> = s
            .payments
            .values()
            .filter(|p| p.status == Status::NeedsReview)
            .filter_map(|p| {
                let last = s.history.get(&p.id)?.last()?;
                Some(ReviewItem {
                    payment: p.clone(),
                    reason: last.reason.clone(),
                    since: last.at,
                })
            })
            .filter(|i| queue_matches(f, i))
            .collect();
        items.sort_by(|a, b| (a.since, &a.payment.id).cmp(&(b.since, &b.payment.id)));
        items.truncate(f.limit as usize);
        Ok(items)
    }

    async fn review_counts(&self) -> Result<Vec<(Option<String>, i64)>> {
        let s = self.state.lock().await;
        let mut counts: BTreeMap<Option<String>, i64> = BTreeMap::new();
        for p in s
            .payments
            .values()
            .filter(|p| p.status == Status::NeedsReview)
        {
            let reason = s
                .history
                .get(&p.id)
                .and_then(|h| h.last())
                .and_then(|h| h.reason.clone());
            *counts.entry(reason).or_default() += 1;
        }
        let mut out: Vec<_> = counts.into_iter().collect();
        // Most first; among equals, a missing reason last, as in SQL.
        out.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| a.0.is_none().cmp(&b.0.is_none()))
                .then_with(|| a.0.cmp(&b.0))
        });
        Ok(out)
    }

    async fn inbox_for_payment(&self, p: &Payment, limit: u32) -> Result<Vec<InboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.inbox
            .iter()
            .map(|r| &r.ev)
            .filter(|e| e.provider == p.provider)
            .filter(|e| {
                (e.provider_ref.is_some() && e.provider_ref == p.provider_ref)
                    || (e.provider_ref.is_none()
                        && e.merchant_ref.is_some()
                        && e.merchant_ref == p.merchant_ref)
            })
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn inbox_in_state(
        &self,
        state: InboxState,
        before_id: Option<i64>,
        limit: u32,
    ) -> Result<Vec<InboxEvent>> {
        let s = self.state.lock().await;
        Ok(s.inbox
            .iter()
            .rev()
            .map(|r| &r.ev)
            .filter(|e| e.state == state && before_id.is_none_or(|b| e.id < b))
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn apply_manual(
        &self,
        report: &Report,
        audit: &NewAudit,
        now: Timestamp,
    ) -> Result<ApplyOutcome> {
        let mut s = self.state.lock().await;
        let (out, change) = match s.payments.get(&report.payment_id) {
            None => (ApplyOutcome::NotFound, None),
            Some(p) => decide_report(report, p.kind, p.status, now),
        };
        let applied = change.is_some();
        if let Some(change) = change {
            write_changes(&mut *s, &[change]).await?;
        }
        s.push_audit(audit, outcome_text(&out));
        drop(s);
        if applied {
            self.wake.bump_transitions();
        }
        Ok(out)
    }

    async fn poll_now_manual(&self, id: &str, audit: &NewAudit, now: Timestamp) -> Result<PollNow> {
        // One lock holder at a time in memory: the two steps are not
        // interleaved with another writer's in any way that matters here.
        let out = self.poll_now(id, now).await?;
        let mut s = self.state.lock().await;
        s.push_audit(audit, crate::review::poll_now_outcome(out).into());
        Ok(out)
    }

    async fn audit_append(&self, audit: &NewAudit) -> Result<i64> {
        let mut s = self.state.lock().await;
        Ok(s.push_audit(audit, audit.outcome.clone()))
    }

    async fn audit_list(&self, f: &AuditFilter) -> Result<Vec<AuditRecord>> {
        let s = self.state.lock().await;
        Ok(s.audit
            .iter()
            .rev()
            .filter(|r| f.actor.as_ref().is_none_or(|a| &r.entry.actor == a))
            .filter(|r| {
                f.payment_id
                    .as_ref()
                    .is_none_or(|p| r.entry.payment_id.as_ref() == Some(p))
            })
            .filter(|r| f.before_id.is_none_or(|b| r.id < b))
            .take(f.limit as usize)
            .cloned()
            .collect())
    }
}

#[async_trait::async_trait]
impl crate::Sweep for MemStore {
    async fn sweep_page(&self, after: &str, limit: u32) -> Result<Vec<crate::sweep::SweepRow>> {
        let s = self.state.lock().await;
        let from = std::ops::Bound::Excluded(after.to_string());
        Ok(s.ids
            .range((from, std::ops::Bound::Unbounded))
            .take(limit as usize)
            .filter_map(|id| s.payments.get(id))
            .map(|p| crate::sweep::SweepRow {
                id: p.id.clone(),
                provider: p.provider.clone(),
                kind: p.kind,
                status: p.status,
                created_at: p.created_at,
                has_job: s.jobs.contains_key(&p.id),
                last_outcome: s
                    .attempts
                    .get(&p.id)
                    .and_then(|a| a.last())
                    .map(|a| a.attempt.outcome.clone()),
            })
            .collect())
    }

    async fn sweep_add_job(&self, id: &str, next_poll_at: Option<Timestamp>) -> Result<bool> {
        let mut s = self.state.lock().await;
        let Some(p) = s.payments.get(id).cloned() else {
            return Ok(false);
        };
        if p.status.is_final() || s.jobs.contains_key(id) {
            return Ok(false);
        }
        let Some(slot) = s.names.iter().position(|n| n == id) else {
            return Ok(false);
        };
        let slot = u32::try_from(slot)
            .map_err(|_| crate::driver::corrupt("poll_jobs", "more than 4 billion payments"))?;
        s.jobs.insert(
            id.to_string(),
            Job {
                slot,
                provider: p.provider.clone(),
                provider_ref: p.provider_ref.clone(),
                merchant_ref: p.merchant_ref.clone(),
                kind: p.kind,
                registered_at: p.created_at,
                next_poll_at: None,
                due_at: None,
                resume_at: None,
                early_looks: 0,
                attempts: 0,
                errors: 0,
                locked_by: None,
                locked_until: None,
                lock_token: None,
                last_error: None,
            },
        );
        s.set_next_poll(id, next_poll_at.map(|t| t.0));
        drop(s);
        self.wake.bump();
        Ok(true)
    }

    async fn sweep_drop_job(&self, id: &str) -> Result<bool> {
        let mut s = self.state.lock().await;
        let is_final = s.payments.get(id).is_some_and(|p| p.status.is_final());
        if !is_final || !s.jobs.contains_key(id) {
            return Ok(false);
        }
        s.drop_job(id);
        Ok(true)
    }

    async fn sweep_kick_inbox(&self, due_before: Timestamp, now: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        let stuck: Vec<usize> = s
            .inbox_due
            .iter()
            .take_while(|(t, _)| *t < due_before.0)
            .map(|(_, i)| *i)
            .collect();
        for i in &stuck {
            s.set_inbox_next(*i, Some(now.0));
        }
        drop(s);
        if !stuck.is_empty() {
            self.wake.bump();
        }
        Ok(stuck.len() as u64)
    }

    async fn sweep_count_orphans(&self, from: Timestamp, to: Timestamp) -> Result<i64> {
        let s = self.state.lock().await;
        Ok(s.orphans
            .iter()
            .filter(|i| {
                let t = s.inbox[**i].ev.received_at;
                t >= from && t < to
            })
            .count() as i64)
    }

    async fn sweep_record(&self, run: &crate::sweep::SweepRun) -> Result<()> {
        let mut s = self.state.lock().await;
        let id = s.sweep_runs.len() as i64 + 1;
        s.sweep_runs
            .push(crate::sweep::SweepRun { id, ..run.clone() });
        Ok(())
    }

    async fn sweep_runs(&self, limit: u32) -> Result<Vec<crate::sweep::SweepRun>> {
        let s = self.state.lock().await;
        Ok(s.sweep_runs
            .iter()
            .rev()
            .take(limit as usize)
            .cloned()
            .collect())
    }
}

#[async_trait::async_trait]
impl crate::Reconciliations for MemStore {
    async fn recon_start(
        &self,
        provider: &str,
        file_name: &str,
        sha256: &str,
        now: Timestamp,
        alive_since: Timestamp,
    ) -> Result<crate::reconciliations::ReconStart> {
        use crate::reconciliations::{ReconRun, ReconStart};
        let mut s = self.state.lock().await;
        if let Some(run) = s
            .recon_runs
            .iter()
            .find(|r| r.provider == provider && r.sha256 == sha256)
            .cloned()
        {
            if run.finished_at.is_some() {
                return Ok(ReconStart::AlreadyDone(run));
            }
            let alive = s
                .recon_alive
                .get(&run.id)
                .copied()
                .unwrap_or(run.started_at.0);
            if alive >= alive_since.0 {
                return Ok(ReconStart::Busy(run));
            }
            s.recon_lines.retain(|(id, _)| *id != run.id);
            s.recon_seen.retain(|(id, _)| *id != run.id);
            s.recon_alive.insert(run.id, now.0);
            return Ok(ReconStart::Started(run.id));
        }
        let id = s.recon_runs.len() as i64 + 1;
        s.recon_runs.push(ReconRun {
            id,
            provider: provider.into(),
            file_name: file_name.into(),
            sha256: sha256.into(),
            started_at: now,
            finished_at: None,
            lines: 0,
            counts: BTreeMap::new(),
        });
        Ok(ReconStart::Started(id))
    }

    async fn recon_alive(&self, run_id: i64, now: Timestamp) -> Result<()> {
        self.state.lock().await.recon_alive.insert(run_id, now.0);
        Ok(())
    }

    async fn recon_add_lines(
        &self,
        run_id: i64,
        lines: &[crate::reconciliations::ReconLine],
    ) -> Result<()> {
        let mut s = self.state.lock().await;
        s.recon_lines
            .extend(lines.iter().map(|l| (run_id, l.clone())));
        Ok(())
    }

    async fn recon_finish(
        &self,
        run_id: i64,
        lines: i64,
        counts: &BTreeMap<String, i64>,
        now: Timestamp,
    ) -> Result<()> {
        let mut s = self.state.lock().await;
        if let Some(r) = s.recon_runs.iter_mut().find(|r| r.id == run_id) {
            r.finished_at = Some(now);
            r.lines = lines;
            r.counts = counts.clone();
        }
        Ok(())
    }

    async fn recon_lookup(
        &self,
        provider: &str,
        refs: &[&str],
    ) -> Result<Vec<crate::reconciliations::Ledger>> {
        let s = self.state.lock().await;
        let mut ids = BTreeSet::new();
        for r in refs {
            let key = (provider.to_string(), r.to_string());
            ids.extend(s.by_ref.get(&key).cloned());
            ids.extend(s.by_merchant.get(&key).cloned());
        }
        Ok(ids
            .iter()
            .filter_map(|id| s.payments.get(id))
            .filter(|p| p.kind == Kind::Payment)
            .map(mem_ledger)
            .collect())
    }

    async fn recon_seen(&self, run_id: i64, payment_ids: &[&str]) -> Result<()> {
        let mut s = self.state.lock().await;
        s.recon_seen
            .extend(payment_ids.iter().map(|id| (run_id, id.to_string())));
        Ok(())
    }

    async fn recon_absent(
        &self,
        run_id: i64,
        provider: &str,
        period: (Timestamp, Timestamp),
        after: &str,
        limit: u32,
    ) -> Result<Vec<crate::reconciliations::Ledger>> {
        let s = self.state.lock().await;
        Ok(s.ids
            .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .filter_map(|id| s.payments.get(id))
            .filter(|p| {
                p.provider == provider
                    && p.kind == Kind::Payment
                    && matches!(p.status, Status::Succeeded | Status::Reversed)
                    && p.finalized_at
                        .is_some_and(|t| t >= period.0 && t < period.1)
                    && !s.recon_seen.contains(&(run_id, p.id.clone()))
            })
            .take(limit as usize)
            .map(mem_ledger)
            .collect())
    }

    async fn recon_forget_seen(&self, run_id: i64) -> Result<()> {
        let mut s = self.state.lock().await;
        s.recon_seen.retain(|(id, _)| *id != run_id);
        Ok(())
    }

    async fn recon_runs(&self, limit: u32) -> Result<Vec<crate::reconciliations::ReconRun>> {
        let s = self.state.lock().await;
        Ok(s.recon_runs
            .iter()
            .rev()
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn recon_run(&self, id: i64) -> Result<Option<crate::reconciliations::ReconRun>> {
        let s = self.state.lock().await;
        Ok(s.recon_runs.iter().find(|r| r.id == id).cloned())
    }

    async fn recon_lines(
        &self,
        run_id: i64,
        limit: u32,
    ) -> Result<Vec<crate::reconciliations::ReconLine>> {
        let s = self.state.lock().await;
        let mut lines: Vec<_> = s
            .recon_lines
            .iter()
            .filter(|(id, _)| *id == run_id)
            .map(|(_, l)| l.clone())
            .collect();
        // File lines in order, then the payments absent from the report.
        lines.sort_by_key(|l| (l.line.is_none(), l.line));
        lines.truncate(limit as usize);
        Ok(lines)
    }
}

/// Retention is not simulated: nothing in memory is old enough to archive,
/// and nothing was ever archived.
#[async_trait::async_trait]
impl crate::Lifecycle for MemStore {
    async fn life_page(
        &self,
        _kind: crate::lifecycle::RowKind,
        _after: i64,
        _limit: u32,
    ) -> Result<Vec<crate::lifecycle::LifeRow>> {
        Ok(Vec::new())
    }
    async fn life_remove(
        &self,
        _kind: crate::lifecycle::RowKind,
        _rows: &[(i64, Option<String>)],
        _before: Timestamp,
        _now: Timestamp,
    ) -> Result<u64> {
        Ok(0)
    }
    async fn archivable_payments(
        &self,
        _before: Timestamp,
        _after: Option<(i64, String)>,
        _limit: u32,
    ) -> Result<Vec<crate::lifecycle::PaymentBundle>> {
        Ok(Vec::new())
    }
    async fn archive_payments(
        &self,
        _payments: &[(&crate::lifecycle::PaymentBundle, String)],
        _before: Timestamp,
        _now: Timestamp,
    ) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    async fn archived_payment(&self, _id: &str) -> Result<Option<crate::lifecycle::Tombstone>> {
        Ok(None)
    }
    async fn archived_by_ref(
        &self,
        _provider: &str,
        _provider_ref: &str,
    ) -> Result<Option<crate::lifecycle::Tombstone>> {
        Ok(None)
    }
    async fn restore_rows(
        &self,
        table: &crate::lifecycle::TableSpec,
        _rows: &[serde_json::Value],
    ) -> Result<u64> {
        Err(crate::driver::corrupt(
            "archive",
            format!(
                "restoring {} into the in-memory store: it keeps no archive",
                table.name
            ),
        ))
    }
    async fn hold_day(&self, _kind: &str, _day: &str, _until: Timestamp) -> Result<()> {
        Ok(())
    }
    async fn held_days(&self, _kind: &str, _now: Timestamp) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    async fn reclaim_space(&self) -> Result<()> {
        Ok(())
    }
    async fn life_cursor(&self, _kind: crate::lifecycle::RowKind) -> Result<i64> {
        Ok(0)
    }
    async fn life_cursor_move(
        &self,
        _kind: crate::lifecycle::RowKind,
        _from: i64,
        _to: i64,
    ) -> Result<bool> {
        Ok(true)
    }
    async fn life_cursor_rewind(&self, _kind: crate::lifecycle::RowKind, _to: i64) -> Result<()> {
        Ok(())
    }
}

/// Nothing is partitioned in memory.
impl crate::Partitions for MemStore {}

#[async_trait::async_trait]
impl Store for MemStore {
    async fn migrate(&self) -> Result<()> {
        Ok(())
    }
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }
    fn subscribe_feed(&self) -> watch::Receiver<u64> {
        self.wake.subscribe_feed()
    }
    fn subscribe_inbox(&self) -> watch::Receiver<u64> {
        self.wake.subscribe_inbox()
    }
    fn subscribe_transitions(&self) -> watch::Receiver<u64> {
        self.wake.subscribe_transitions()
    }
}

fn mem_ledger(p: &Payment) -> crate::reconciliations::Ledger {
    crate::reconciliations::Ledger {
        id: p.id.clone(),
        provider_ref: p.provider_ref.clone(),
        merchant_ref: p.merchant_ref.clone(),
        status: p.status,
        amount: p.amount,
        currency: p.currency.clone(),
        finalized_at: p.finalized_at,
    }
}

#[async_trait::async_trait]
impl crate::Gauges for MemStore {
    async fn cluster_gauges(
        &self,
        now: Timestamp,
        overdue_before: Timestamp,
        live_since: Timestamp,
    ) -> Result<crate::ClusterGauges> {
        use crate::Review;
        let review = self.review_counts().await?;
        let s = self.state.lock().await;
        let mut open: BTreeMap<(String, String), i64> = BTreeMap::new();
        for p in s.payments.values() {
            if !p.status.is_final() {
                *open
                    .entry((p.provider.clone(), p.status.as_str().to_string()))
                    .or_default() += 1;
            }
        }
        let due: Vec<i64> = s
            .due
            .iter()
            .take_while(|(at, _)| *at <= now.0)
            .map(|(at, _)| *at)
            .collect();
        let mut inbox: BTreeMap<String, i64> = BTreeMap::new();
        for r in &s.inbox {
            let state = r.ev.state.as_str();
            if matches!(state, "received" | "failed" | "orphaned") {
                *inbox.entry(state.to_string()).or_default() += 1;
            }
        }
        let destinations = s
            .destinations
            .values()
            .map(|d| {
                let oldest = s
                    .feed
                    .get(&(d.delivered_seq + 1))
                    .and_then(|id| s.outbox.get(id))
                    .map(|o| o.ev.occurred_at);
                (
                    d.name.clone(),
                    (s.last_feed_seq - d.delivered_seq).max(0),
                    oldest,
                )
            })
            .collect();
        Ok(crate::ClusterGauges {
            open: open.into_iter().map(|((p, st), n)| (p, st, n)).collect(),
            review,
            polls_due: due.len() as i64,
            polls_overdue: due.iter().filter(|at| **at < overdue_before.0).count() as i64,
            oldest_due_at: due.first().copied().map(Timestamp),
            inbox: inbox.into_iter().collect(),
            unsequenced: s.unsequenced.len() as i64,
            destinations,
            nodes: s
                .nodes
                .values()
                .filter(|(_, beat)| *beat >= live_since.0)
                .count() as i64,
        })
    }
}
