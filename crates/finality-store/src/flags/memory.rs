//! Flags in process memory, for simulations: the same contract as on SQL.

use crate::error::Result;
use crate::flags::{Flag, FlagResolve, Flags, NewFlag};
use crate::memory::{MemState, MemStore};
use crate::model::InboxEvent;
use crate::review::NewAudit;
use finality_core::Timestamp;

impl MemState {
    pub(crate) fn raise_flag(&mut self, f: NewFlag, now: Timestamp) {
        let id = i64::try_from(self.flags.len()).unwrap_or(i64::MAX) + 1;
        self.flags.push(Flag {
            id,
            payment_id: f.payment_id,
            reason: f.reason,
            event_id: Some(f.event_id),
            provider_status: f.provider_status,
            piece_key: f.piece_key,
            opened_at: now,
            closed_at: None,
            closed_by: None,
            resolution: None,
        });
    }

    pub(crate) fn settle_flags(&mut self, payment_id: &str, ev: &InboxEvent, now: Timestamp) {
        let keys = super::settled_keys(ev);
        let resolution = super::settled_by(ev);
        for f in &mut self.flags {
            let about = f.piece_key.as_ref().is_some_and(|k| keys.contains(k));
            if f.payment_id == payment_id && about && f.closed_at.is_none() {
                f.closed_at = Some(now);
                f.closed_by = Some("provider".into());
                f.resolution = Some(resolution.clone());
            }
        }
    }
}

#[async_trait::async_trait]
impl Flags for MemStore {
    async fn flags_of(&self, payment_id: &str) -> Result<Vec<Flag>> {
        let s = self.state.lock().await;
        Ok(s.flags
            .iter()
            .filter(|f| f.payment_id == payment_id)
            .cloned()
            .collect())
    }

    async fn flags_open(&self, after: i64, limit: u32) -> Result<Vec<Flag>> {
        let s = self.state.lock().await;
        Ok(s.flags
            .iter()
            .filter(|f| f.closed_at.is_none() && f.id > after)
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn flag_resolve(
        &self,
        payment_id: &str,
        id: i64,
        resolution: &str,
        audit: &NewAudit,
        now: Timestamp,
    ) -> Result<FlagResolve> {
        let mut s = self.state.lock().await;
        let found = s
            .flags
            .iter_mut()
            .find(|f| f.id == id && f.payment_id == payment_id);
        let out = match found {
            None => FlagResolve::NotFound,
            Some(f) if f.closed_at.is_some() => FlagResolve::AlreadyClosed(f.clone()),
            Some(f) => {
                f.closed_at = Some(now);
                f.closed_by = Some(audit.actor.clone());
                f.resolution = Some(resolution.to_string());
                FlagResolve::Resolved(f.clone())
            }
        };
        s.push_audit(audit, out.outcome().into());
        Ok(out)
    }
}
