//! Settlement reports in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::MemStore;
use crate::model::*;
use crate::reconciliations::{AnnouncedFile, FileTry};
use finality_core::{Kind, Status, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

#[async_trait::async_trait]
impl crate::Reconciliations for MemStore {
    async fn file_announce(
        &self,
        scope: &finality_core::Scope,
        name: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let mut s = self.state.lock().await;
        let key = (scope.clone(), name.to_string());
        if s.settlement_files.contains_key(&key) {
            return Ok(false);
        }
        s.settlement_files.insert(
            key,
            AnnouncedFile {
                provider: scope.provider().to_string(),
                account: scope.account().map(String::from),
                name: name.to_string(),
                url: url.to_string(),
                announced_at: now,
                attempts: 0,
                next_at: now,
                outcome: None,
                detail: None,
                run_id: None,
                done_at: None,
            },
        );
        Ok(true)
    }

    async fn files_due(
        &self,
        provider: &str,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<AnnouncedFile>> {
        let s = self.state.lock().await;
        let mut due: Vec<AnnouncedFile> = s
            .settlement_files
            .values()
            .filter(|f| f.provider == provider && f.outcome.is_none() && f.next_at <= now)
            .cloned()
            .collect();
        due.sort_by(|a, b| (a.announced_at, &a.name).cmp(&(b.announced_at, &b.name)));
        due.truncate(limit as usize);
        Ok(due)
    }

    async fn file_tried(
        &self,
        scope: &finality_core::Scope,
        name: &str,
        how: &FileTry,
        now: Timestamp,
    ) -> Result<()> {
        let mut s = self.state.lock().await;
        let Some(f) = s
            .settlement_files
            .get_mut(&(scope.clone(), name.to_string()))
        else {
            return Ok(());
        };
        match how {
            FileTry::Done {
                outcome,
                detail,
                run_id,
            } => {
                f.outcome = Some(outcome.clone());
                f.detail = Some(detail.clone());
                f.run_id = *run_id;
                f.done_at = Some(now);
            }
            FileTry::Retry { detail, retry_at } if f.outcome.is_none() => {
                f.attempts += 1;
                f.detail = Some(detail.clone());
                f.next_at = *retry_at;
            }
            FileTry::Retry { .. } => {}
        }
        Ok(())
    }

    async fn files_recent(&self, provider: &str, limit: u32) -> Result<Vec<AnnouncedFile>> {
        let s = self.state.lock().await;
        let mut all: Vec<AnnouncedFile> = s
            .settlement_files
            .values()
            .filter(|f| f.provider == provider)
            .cloned()
            .collect();
        all.sort_by(|a, b| (b.announced_at, &b.name).cmp(&(a.announced_at, &a.name)));
        all.truncate(limit as usize);
        Ok(all)
    }

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
        scope: &finality_core::Scope,
        refs: &[&str],
    ) -> Result<Vec<crate::reconciliations::Ledger>> {
        let s = self.state.lock().await;
        let mut ids = BTreeSet::new();
        for r in refs {
            let key = (scope.clone(), r.to_string());
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
        scope: &finality_core::Scope,
        period: (Timestamp, Timestamp),
        after: &str,
        limit: u32,
    ) -> Result<Vec<crate::reconciliations::Ledger>> {
        let account = scope.account();
        let s = self.state.lock().await;
        Ok(s.ids
            .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .filter_map(|id| s.payments.get(id))
            .filter(|p| {
                p.provider == scope.provider()
                    && p.account.as_deref() == account
                    && p.kind == Kind::Payment
                    && matches!(p.status, Status::Succeeded | Status::Reversed)
                    && p.finalized_at
                        .is_some_and(|t| t >= period.0 && t < period.1)
                    && !s.recon_seen.contains(&(run_id, p.id.clone()))
                    // Made final by an earlier report, which listed it.
                    && !s.recon_lines.iter().any(|(id, l)| {
                        *id != run_id
                            && l.outcome == "applied"
                            && l.payment_id.as_deref() == Some(p.id.as_str())
                    })
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

pub(crate) fn mem_ledger(p: &Payment) -> crate::reconciliations::Ledger {
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
