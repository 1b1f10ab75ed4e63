//! The review queue and the audit trail in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::{MemState, MemStore};
use crate::model::*;
use crate::payments::decide::decide_report;
use crate::review::{
    outcome_text, queue_matches, AuditFilter, AuditRecord, NewAudit, ReviewFilter, ReviewItem,
};
use crate::transition::write_changes;
use crate::{PollQueue, Review};
use finality_core::{Status, Timestamp};
use std::collections::BTreeMap;

impl MemState {
    pub(crate) fn push_audit(&mut self, a: &NewAudit, outcome: String) -> i64 {
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
