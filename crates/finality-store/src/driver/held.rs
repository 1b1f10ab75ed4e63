//! Connections the webhook inbox's group commit keeps between batches.
//!
//! sqlx tests a pooled connection with a round trip to the server when it
//! is taken (`test_before_acquire`) and again when it is handed back. At
//! thousands of batches a second those two round trips cost the server
//! about a tenth of its CPU per webhook, and PostgreSQL two wake-ups per
//! batch (measured: `docs/PERFORMANCE.md`, "Where a webhook's CPU goes").
//! A connection kept here is used again without either while it was last
//! used within [`FRESH`]; an older one goes back to the pool and a new one
//! is taken from it, tested by sqlx on the way out and in, so a connection
//! broken while idle (a restarted server) is found by that test, not by a
//! webhook. A batch that fails drops its connection back to the pool the
//! same way.
//!
//! Written here rather than with a crate: it is a slot of two on top of
//! sqlx's own pool, not a pool.

use crate::error::{DbContext, Result};
use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A kept connection last used longer ago than this goes back to the pool
/// (and is tested there) rather than being used again blind.
pub const FRESH: Duration = Duration::from_secs(1);

/// Pools smaller than this keep no connection: with a few connections,
/// one held idle by the inbox could make a request wait for the pool.
pub const SMALLEST_POOL: u32 = 8;

/// Up to `max` connections kept between uses.
pub struct Held<DB: Database> {
    kept: Mutex<Vec<(PoolConnection<DB>, Instant)>>,
    max: usize,
}

impl<DB: Database> std::fmt::Debug for Held<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("max", &self.max).finish()
    }
}

impl<DB: Database> Held<DB> {
    /// Keep up to `max` connections of a pool of `pool_size` (none when the
    /// pool is smaller than [`SMALLEST_POOL`]).
    pub fn new(max: usize, pool_size: u32) -> Self {
        Held {
            kept: Mutex::new(Vec::new()),
            max: if pool_size < SMALLEST_POOL { 0 } else { max },
        }
    }

    /// A kept connection used within [`FRESH`], or one from `pool`.
    pub async fn take(&self, pool: &Pool<DB>) -> Result<PoolConnection<DB>> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match kept {
            Some((conn, used)) if used.elapsed() < FRESH => Ok(conn),
            // Dropped: back to the pool, which tests it.
            _ => pool.acquire().await.op("acquiring a connection"),
        }
    }

    /// Keep `conn` for the next batch (or hand it back when enough are kept).
    pub fn keep(&self, conn: PoolConnection<DB>) {
        let spare = {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < self.max {
                kept.push((conn, Instant::now()));
                None
            } else {
                Some(conn)
            }
        };
        // Handed back outside the lock.
        drop(spare);
    }
}
