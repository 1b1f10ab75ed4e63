//! The poll queue in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::{MemState, MemStore};
use crate::model::*;
use crate::poll_queue::sql::complete_in;
use crate::PollQueue;
use finality_core::Timestamp;

pub(crate) fn applied_any(out: &[CompleteOutcome]) -> bool {
    out.iter()
        .any(|o| matches!(o, CompleteOutcome::Done { applied } if !applied.is_empty()))
}

#[async_trait::async_trait]
impl PollQueue for MemStore {
    fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.wake.subscribe()
    }

    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>> {
        let token: i64 = rand::random::<i64>() & i64::MAX;
        let mut s = self.state.lock().await;
        let due = fair_due(&s, req);
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
                account: j.account.clone(),
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
        scope: &finality_core::Scope,
        provider_ref: &str,
        now: Timestamp,
        per_payment: u32,
    ) -> Result<Option<String>> {
        let mut s = self.state.lock().await;
        let key = (scope.clone(), provider_ref.to_string());
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
        self.hurry_where(|j| j.provider == provider, by, now).await
    }

    async fn hurry_account(
        &self,
        scope: &finality_core::Scope,
        by: Timestamp,
        now: Timestamp,
    ) -> Result<u64> {
        self.hurry_where(
            |j| j.provider == scope.provider() && j.account.as_deref() == scope.account(),
            by,
            now,
        )
        .await
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
        if let Some(other) = s.by_ref.get(&(
            finality_core::Scope::new(p.provider.as_str(), p.account.as_deref()),
            provider_ref.to_string(),
        )) {
            return Ok(RefRecorded::Taken {
                other_id: other.clone(),
            });
        }
        s.record_ref(id, provider_ref);
        Ok(RefRecorded::Recorded)
    }
}

/// The jobs a claim takes, shared fairly between lanes as on SQL
/// ([`crate::poll_queue::lanes`]). Memory is for simulations: the due jobs
/// are walked once (no per-lane index).
fn fair_due(s: &MemState, req: &ClaimRequest) -> Vec<(i64, String)> {
    let lane_of = |slot: u32| {
        let id = &s.names[slot as usize];
        s.jobs
            .get(id)
            .map(|j| (j.provider.clone(), j.account.clone().unwrap_or_default()))
    };
    let mut by_lane: Vec<(Lane, Vec<(i64, u32)>)> = Vec::new();
    for &(at, slot) in s.due.iter().take_while(|(at, _)| *at <= req.now.0) {
        let Some(lane) = lane_of(slot) else { continue };
        match by_lane.iter_mut().find(|(l, _)| *l == lane) {
            Some((_, v)) => v.push((at, slot)),
            None => by_lane.push((lane, vec![(at, slot)])),
        }
    }
    let mut picked: Vec<(i64, u32)> = if by_lane.len() <= 1 || !req.fair {
        by_lane
            .into_iter()
            .flat_map(|(_, v)| v)
            .take(req.limit as usize)
            .collect()
    } else {
        let firsts: Vec<(Lane, Timestamp)> = by_lane
            .iter()
            .map(|(l, v)| (l.clone(), Timestamp(v[0].0)))
            .collect();
        let mut out = Vec::new();
        for (lane, share) in crate::poll_queue::lanes::shares(&firsts, &req.weights, req.limit) {
            if let Some((_, v)) = by_lane.iter_mut().find(|(l, _)| *l == lane) {
                let n = (share as usize).min(v.len());
                out.extend(v.drain(..n));
            }
        }
        let mut rest: Vec<(i64, u32)> = by_lane.into_iter().flat_map(|(_, v)| v).collect();
        rest.sort_unstable();
        let room = (req.limit as usize).saturating_sub(out.len());
        out.extend(rest.into_iter().take(room));
        out
    };
    picked.sort_unstable();
    picked
        .into_iter()
        .map(|(at, slot)| (at, s.names[slot as usize].clone()))
        .collect()
}

impl crate::memory::MemStore {
    /// Bring the unleased jobs `pick` chooses, due after `by`, forward to `by`.
    async fn hurry_where(
        &self,
        pick: impl Fn(&crate::memory::Job) -> bool,
        by: Timestamp,
        now: Timestamp,
    ) -> Result<u64> {
        let mut s = self.state.lock().await;
        let ids: Vec<String> = s
            .jobs
            .iter()
            .filter(|(_, j)| {
                pick(j)
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
}
