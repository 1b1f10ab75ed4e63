//! Event-list cursors on SQL, leased to one node at a time.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::CursorLease;
use crate::Cursors;
use finality_core::Timestamp;

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
