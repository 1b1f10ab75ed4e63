//! Where each provider's event-list catch-up has read up to: one row per
//! provider, held by one node at a time (a lease), so the list is read once
//! however many nodes run, and a crashed reader's successor starts where the
//! last saved cursor says.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
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

#[async_trait::async_trait]
impl<B: Backend> Cursors for B {
    async fn cursor_take(
        &self,
        provider: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<CursorLease>> {
        let mut tx = self.begin_write().await?;
        let conn: &mut B::Conn = &mut tx;
        conn.run(
            stmt(
                "INSERT INTO provider_cursors (provider, cursor, holder, held_until, updated_at) \
                 VALUES ($1, NULL, NULL, 0, $2) ON CONFLICT (provider) DO NOTHING",
                "creating an event-list cursor",
            )
            .text(provider)
            .int(now.0),
        )
        .await?;
        let row = conn
            .opt(
                stmt(
                    "UPDATE provider_cursors SET holder = $2, held_until = $3 \
                     WHERE provider = $1 AND (holder IS NULL OR holder = $2 OR held_until <= $4) \
                     RETURNING cursor",
                    "taking an event-list cursor",
                )
                .text(provider)
                .text(holder)
                .int(until.0)
                .int(now.0),
            )
            .await?;
        tx.commit().await.op("committing an event-list cursor")?;
        row.map(|r| {
            Ok(CursorLease {
                cursor: r.opt_text("cursor", "provider_cursors")?,
                held_until: until,
            })
        })
        .transpose()
    }

    async fn cursor_save(
        &self,
        provider: &str,
        holder: &str,
        cursor: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let conn: &mut B::Conn = &mut tx;
        let n = conn
            .run(
                stmt(
                    "UPDATE provider_cursors SET cursor = $3, updated_at = $4 \
                     WHERE provider = $1 AND holder = $2",
                    "saving an event-list cursor",
                )
                .text(provider)
                .text(holder)
                .text(cursor)
                .int(now.0),
            )
            .await?;
        tx.commit().await.op("committing an event-list cursor")?;
        Ok(n == 1)
    }

    async fn cursor_release(&self, provider: &str, holder: &str) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE provider_cursors SET holder = NULL, held_until = 0 \
                 WHERE provider = $1 AND holder = $2",
                "releasing a lease",
            )
            .text(provider)
            .text(holder),
        )
        .await?;
        Ok(())
    }
}
