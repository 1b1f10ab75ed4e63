//! The sweep's reads and repairs in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::{Job, MemStore};
use finality_core::Timestamp;

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
                account: p.account.clone(),
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
