//! Flags in process memory, for simulations: the same contract as on SQL.

use crate::error::Result;
use crate::feed::notice::Notice;
use crate::flags::{Flag, FlagResolve, Flags, NewFlag};
use crate::memory::{MemState, MemStore};
use crate::model::InboxEvent;
use crate::review::NewAudit;
use finality_core::{Source, Timestamp};

impl MemState {
    /// Raise `f`, with its `payment.flagged` event.
    pub(crate) fn raise_flag(&mut self, f: NewFlag, now: Timestamp) {
        let id = i64::try_from(self.flags.len()).unwrap_or(i64::MAX) + 1;
        let flag = Flag {
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
        };
        self.notice(
            &flag.payment_id,
            Notice::Flagged(&flag),
            Source::Webhook,
            now,
        );
        self.flags.push(flag);
    }

    /// Close the open flags the provider settled, each with its
    /// `payment.flag_resolved` event; whether any was.
    pub(crate) fn settle_flags(
        &mut self,
        payment_id: &str,
        ev: &InboxEvent,
        now: Timestamp,
    ) -> bool {
        let keys = super::settled_keys(ev);
        let resolution = super::settled_by(ev);
        let mut closed = Vec::new();
        for f in &mut self.flags {
            let about = f.piece_key.as_ref().is_some_and(|k| keys.contains(k));
            if f.payment_id == payment_id && about && f.closed_at.is_none() {
                f.closed_at = Some(now);
                f.closed_by = Some("provider".into());
                f.resolution = Some(resolution.clone());
                closed.push(f.clone());
            }
        }
        for f in &closed {
            self.notice(payment_id, Notice::FlagResolved(f), Source::Webhook, now);
        }
        !closed.is_empty()
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
        if let FlagResolve::Resolved(f) = &out {
            s.notice(payment_id, Notice::FlagResolved(f), Source::Manual, now);
        }
        s.push_audit(audit, out.outcome().into());
        drop(s);
        if matches!(out, FlagResolve::Resolved(_)) {
            self.wake.bump_transitions();
        }
        Ok(out)
    }
}
