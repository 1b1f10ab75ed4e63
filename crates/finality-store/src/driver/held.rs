//! The connection the webhook inbox's group commit keeps between batches.
//!
//! sqlx tests a pooled connection with a round trip to the server every
//! time it is handed back, whatever the pool's options. At thousands of
//! batches a second that round trip (with the one on taking it, which the
//! pool now skips for a connection idle under [`FRESH`]) cost the server
//! about a tenth of its CPU per webhook, and PostgreSQL a wake-up per
//! batch (measured: `docs/PERFORMANCE.md`, "Where a webhook's CPU goes").
//! The connection kept here is used again without either while it was
//! last used within [`FRESH`]; an older one goes back to the pool (tested
//! on the way) and another is taken from it, so a connection broken while
//! idle (a restarted server) is found by that test, not by a webhook. A
//! batch that fails drops its connection back to the pool the same way.
//!
//! Written here rather than with a crate: it is one slot on top of sqlx's
//! own pool, not a pool. One, because a service runs one flusher.

use crate::error::{DbContext, Result};
use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A connection last used longer ago than this is tested before it is
/// used again (the kept one by going back to the pool, a pooled one by the
/// pool's `before_acquire`).
pub const FRESH: Duration = Duration::from_secs(1);

/// Pools smaller than this keep no connection: with a few connections,
/// one held idle by the inbox could make a request wait for the pool.
pub const SMALLEST_POOL: u32 = 8;

/// At most one connection kept between uses, with when it was last used.
pub struct Held<DB: Database> {
    kept: Mutex<Option<(PoolConnection<DB>, Instant)>>,
    enabled: bool,
}

impl<DB: Database> std::fmt::Debug for Held<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl<DB: Database> Held<DB> {
    /// A slot for a pool of `pool_size` (none kept when the pool is smaller
    /// than [`SMALLEST_POOL`]).
    pub fn new(pool_size: u32) -> Self {
        Held {
            kept: Mutex::new(None),
            enabled: pool_size >= SMALLEST_POOL,
        }
    }

    /// The kept connection if it was used within [`FRESH`], or one from
    /// `pool`.
    pub async fn take(&self, pool: &Pool<DB>) -> Result<PoolConnection<DB>> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner()).take();
        match kept {
            Some((conn, used)) if used.elapsed() < FRESH => return Ok(conn),
            // Back to the pool (which tests it) before another is taken.
            stale => drop(stale),
        }
        pool.acquire().await.op("acquiring a connection")
    }

    /// Keep `conn` for the next batch (or hand it back when one is kept).
    pub fn keep(&self, conn: PoolConnection<DB>) {
        if !self.enabled {
            return;
        }
        let spare = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace((conn, Instant::now()));
        // Handed back outside the lock.
        drop(spare);
    }
}
