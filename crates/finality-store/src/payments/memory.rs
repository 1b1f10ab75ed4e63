//! Payments in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::{Job, MemStore};
use crate::model::*;
use crate::payments::decide::decide_report;
use crate::transition::write_changes;
use crate::PaymentStore;
use finality_core::{Scope, Status, Timestamp};
use std::collections::BTreeMap;

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
        let scope = Scope::new(p.provider.as_str(), p.account.as_deref());
        let taken_ref = provider_ref
            .as_ref()
            .and_then(|r| s.by_ref.get(&(scope.clone(), r.clone())));
        let taken_merchant = merchant_ref
            .as_ref()
            .and_then(|m| s.by_merchant.get(&(scope.clone(), m.clone())));
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
            s.by_ref.insert((scope.clone(), r.clone()), id.clone());
        }
        if let Some(m) = &merchant_ref {
            s.by_merchant.insert((scope.clone(), m.clone()), id.clone());
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
                account: p.account.clone(),
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
                r.scope() == scope
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
            pieces: s.pieces.get(id).cloned().unwrap_or_default(),
            flags: s
                .flags
                .iter()
                .filter(|f| f.payment_id == id)
                .cloned()
                .collect(),
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
                account: p.account.clone(),
                status: p.status,
                source: p.status_source,
                created_at: p.created_at,
                finalized_at: p.finalized_at,
                calls: s.attempts.get(&p.id).map_or(0, |a| a.len() as i64),
            })
            .collect())
    }

    async fn error_counts(&self, since: Timestamp) -> Result<Vec<crate::stats::ErrorCount>> {
        let s = self.state.lock().await;
        type Key = (String, Option<String>, String);
        let mut counts: BTreeMap<Key, i64> = BTreeMap::new();
        for a in s.attempts.values().flatten() {
            let Some(p) = s
                .payments
                .get(&a.attempt.payment_id)
                .filter(|p| p.created_at >= since)
            else {
                continue;
            };
            if let Some(class) = &a.attempt.error_class {
                *counts
                    .entry((a.attempt.provider.clone(), p.account.clone(), class.clone()))
                    .or_default() += 1;
            }
        }
        Ok(counts
            .into_iter()
            .map(|((provider, account, class), n)| crate::stats::ErrorCount {
                provider,
                account,
                class,
                n,
            })
            .collect())
    }

    async fn find_by_ref(&self, scope: &Scope, provider_ref: &str) -> Result<Option<String>> {
        let s = self.state.lock().await;
        let key = (scope.clone(), provider_ref.to_string());
        Ok(s.by_ref
            .get(&key)
            .or_else(|| s.by_merchant.get(&key))
            .cloned())
    }
}
