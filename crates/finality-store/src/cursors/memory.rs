//! Event-list cursors in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::MemStore;
use crate::{CursorLease, Cursors};
use finality_core::Timestamp;

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
