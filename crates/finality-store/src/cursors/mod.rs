//! Where each provider's event-list catch-up has read up to: one row per
//! provider, held by one node at a time (a lease), so the list is read once
//! however many nodes run, and a crashed reader's successor starts where the
//! last saved cursor says.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
use finality_core::Timestamp;

/// The right to read a provider's event list until `held_until`, and where
/// the last holder left off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorLease {
    /// The provider's cursor (an event id, a time): `None` before the first
    /// read, when the reader starts from the provider's newest event.
    pub cursor: Option<String>,
    pub held_until: Timestamp,
}

/// Event-list cursors, durable and leased.
#[async_trait::async_trait]
pub trait Cursors: Send + Sync {
    /// Hold `provider`'s catch-up for `holder` until `until`, when it is free,
    /// expired or already held by `holder`; `None` while another holder has it.
    async fn cursor_take(
        &self,
        provider: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<CursorLease>>;

    /// Advance the cursor, only while `holder` still holds it (a reader that
    /// stalled past its lease must not move a successor's cursor back).
    /// Returns whether it was saved.
    async fn cursor_save(
        &self,
        provider: &str,
        holder: &str,
        cursor: &str,
        now: Timestamp,
    ) -> Result<bool>;

    /// Give the lease back before it expires (a run that finished), only
    /// while `holder` holds it; the cursor is kept.
    async fn cursor_release(&self, provider: &str, holder: &str) -> Result<()>;
}
