//! The webhook inbox in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::feed::notice::Notice;
use crate::inbox::decide::ByMerchantRef;
use crate::inbox::decide::{checked_report, orphaned, unknown_status, verdict};
use crate::memory::{InboxRow, MemStore};
use crate::model::*;
use crate::payments::decide::decide_report;
use crate::transition::write_changes;
use crate::{EventFeed, WebhookInbox};
use finality_core::{Source, Timestamp};
use std::collections::BTreeMap;

#[async_trait::async_trait]
impl WebhookInbox for MemStore {
    fn subscribe_inbox(&self) -> tokio::sync::watch::Receiver<u64> {
        self.wake.subscribe_inbox()
    }

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
            let key = (
                finality_core::Scope::new(e.provider.as_str(), e.account.as_deref()),
                e.event_id.clone(),
            );
            if s.inbox_key.contains_key(&key) {
                fresh.push(false);
                continue;
            }
            let i = s.inbox.len();
            s.inbox.push(InboxRow {
                ev: InboxEvent {
                    id: i64::try_from(i).unwrap_or(i64::MAX) + 1,
                    provider: e.provider.clone(),
                    account: e.account.clone().filter(|a| !a.is_empty()),
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
        // An event that is not a status change was written: the sequencer
        // has work.
        let mut noticed = false;
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
            ByMerchantRef::Found(id) => id,
            ByMerchantRef::None => {
                s.set_inbox_state(i, InboxState::Orphaned, Some(orphaned(ev)));
                return Ok(InboxOutcome::Orphaned);
            }
            ByMerchantRef::Other(why) => {
                s.set_inbox_state(i, InboxState::Ignored, Some(why.clone()));
                return Ok(InboxOutcome::Ignored { reason: why });
            }
            ByMerchantRef::Attempt(id) => {
                let (_, moved) = s.count(&id, ev, finality_core::Status::Failed);
                if moved {
                    s.notice(&id, Notice::Amounts, Source::Webhook, now);
                    self.wake.bump_transitions();
                }
                let why = crate::amounts::attempt_note(
                    ev,
                    &id,
                    ev.merchant_ref.as_deref().unwrap_or_default(),
                );
                s.set_inbox_state(i, InboxState::Ignored, Some(why.clone()));
                return Ok(InboxOutcome::Ignored { reason: why });
            }
        };
        let Some(status) = ev.observed else {
            let why = unknown_status(ev);
            s.set_inbox_state(i, InboxState::Review, Some(why.clone()));
            return Ok(InboxOutcome::Review { reason: why });
        };
        let (counted, moved) = if crate::amounts::counts(ev) {
            s.count(&payment_id, ev, status)
        } else {
            (None, false)
        };
        let (status, review, noted) = crate::amounts::outcome(status, counted.as_ref());
        let (applied, mismatch) = match s.payments.get(&payment_id) {
            None => (ApplyOutcome::NotFound, None),
            Some(p) => {
                let (mut report, mut mismatch) = checked_report(
                    ev,
                    &payment_id,
                    status,
                    p.amount,
                    &p.currency,
                    counted.is_some(),
                );
                crate::amounts::annotate(&mut report, &mut mismatch, review, noted);
                let (out, change) = decide_report(&report, p.kind, p.status, now);
                if let Some(change) = change {
                    write_changes(&mut *s, &[change]).await?;
                }
                let mismatch = mismatch
                    .or_else(|| crate::amounts::held_after_reversal(counted.as_ref(), &out, moved));
                (out, mismatch)
            }
        };
        if moved && !matches!(applied, ApplyOutcome::Applied { .. }) {
            s.notice(&payment_id, Notice::Amounts, Source::Webhook, now);
            noticed = true;
        }
        noticed |= s.settle_flags(&payment_id, ev, now);
        let applied_then = applied.clone();
        let id = payment_id.clone();
        let (state, reason, out) = verdict(ev, status, payment_id, applied, mismatch);
        if let Some(f) = crate::flags::raised(ev, &id, &applied_then, state, reason.as_deref()) {
            s.raise_flag(f, now);
            noticed = true;
        }
        s.set_inbox_state(i, state, reason);
        drop(s);
        if noticed || matches!(out, InboxOutcome::Applied { .. }) {
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
        let found: Vec<usize> = s
            .orphans
            .iter()
            .map(|i| (*i, &s.inbox[*i]))
            .filter(|(_, r)| {
                let by_ref =
                    r.ev.provider_ref
                        .as_ref()
                        .is_some_and(|x| s.by_ref.contains_key(&(r.ev.scope(), x.clone())));
                let by_merchant =
                    r.ev.merchant_ref
                        .as_ref()
                        .is_some_and(|x| s.by_merchant.contains_key(&(r.ev.scope(), x.clone())));
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

    async fn inbox_unpark(&self, scope: &finality_core::Scope, now: Timestamp) -> Result<u64> {
        let mut s = self.state.lock().await;
        let parked: Vec<usize> = s
            .inbox
            .iter()
            .enumerate()
            .filter(|(_, r)| r.ev.state == InboxState::Parked && r.ev.scope() == *scope)
            .map(|(i, _)| i)
            .collect();
        for i in &parked {
            s.inbox[*i].ev.state = InboxState::Received;
            s.inbox[*i].ev.reason = None;
            s.set_inbox_next(*i, Some(now.0));
        }
        drop(s);
        if !parked.is_empty() {
            self.wake.bump_inbox();
        }
        Ok(parked.len() as u64)
    }

    async fn inbox_parked_scopes(&self, limit: u32) -> Result<Vec<finality_core::Scope>> {
        let s = self.state.lock().await;
        let mut scopes: Vec<finality_core::Scope> = Vec::new();
        for r in s.inbox.iter().filter(|r| r.ev.state == InboxState::Parked) {
            let scope = r.ev.scope();
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        scopes.sort();
        scopes.truncate(limit as usize);
        Ok(scopes)
    }

    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>> {
        let s = self.state.lock().await;
        // The first stored of that id, whichever account's.
        Ok(s.inbox
            .iter()
            .find(|r| r.ev.provider == provider && r.ev.event_id == event_id)
            .map(|r| r.ev.clone()))
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
