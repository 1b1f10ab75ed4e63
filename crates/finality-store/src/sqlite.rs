//! The SQLite adapter: the embedded default, one file, WAL.
//!
//! SQLite has one writer at a time, so every write transaction starts with
//! `BEGIN IMMEDIATE`: it takes the write lock up front (waiting up to the busy
//! timeout) instead of failing when a read-then-write transaction tries to
//! upgrade. The claim is a single `UPDATE … RETURNING`, atomic on its own.

use crate::Wakeups;
pub use sqlx::sqlite::SqliteSynchronous;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Sqlite, SqlitePool, Transaction};
use std::str::FromStr;
use std::time::Duration;

/// The claim statement (public so its plan can be checked and documented).
pub const CLAIM: &str = "UPDATE poll_jobs SET due_at = next_poll_at, next_poll_at = $3, \
        locked_until = $3, locked_by = $4, lock_token = $5 \
    WHERE payment_id IN ( \
        SELECT payment_id FROM poll_jobs \
        WHERE next_poll_at IS NOT NULL AND next_poll_at <= $1 \
        ORDER BY next_poll_at LIMIT $2) \
    RETURNING payment_id, provider, provider_ref, merchant_ref, kind, registered_at, attempts, errors, due_at, lock_token";

const INBOX_CLAIM: &str = "UPDATE webhook_inbox SET next_attempt_at = $3, attempts = attempts + 1 \
    WHERE id IN (SELECT id FROM webhook_inbox \
        WHERE state IN ('received', 'failed') AND next_attempt_at <= $1 \
        ORDER BY next_attempt_at LIMIT $2) \
    RETURNING id, provider, event_id, provider_ref, merchant_ref, observed_status, provider_status, \
        occurred_at, received_at, state, reason, attempts";

/// A store in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    wake: Wakeups,
}

impl SqliteStore {
    /// Open (creating if missing) the database a `sqlite://PATH` URL names,
    /// with `synchronous=FULL`.
    pub async fn connect(url: &str, max_connections: u32) -> crate::Result<Self> {
        Self::connect_with_sync(url, max_connections, SqliteSynchronous::Full).await
    }

    /// As [`SqliteStore::connect`], choosing the sync mode. `Full` (the
    /// default) makes every commit survive power loss; `Normal` (WAL) survives
    /// a crash of the process but may lose the last commits on power loss,
    /// which is right only for throwaway data such as the demo's.
    pub async fn connect_with_sync(
        url: &str,
        max_connections: u32,
        sync: SqliteSynchronous,
    ) -> crate::Result<Self> {
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(|e| crate::StoreError::Url {
                url: url.to_string(),
                detail: e.to_string(),
            })?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(sync)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.clamp(1, 8))
            .connect_with(opts)
            .await
            .op("opening the SQLite database")?;
        Ok(Self::from_pool(pool))
    }

    /// Wrap an existing pool (an application embedding finality).
    pub fn from_pool(pool: SqlitePool) -> Self {
        SqliteStore {
            pool,
            wake: Wakeups::new(),
        }
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn run_migrations(&self) -> crate::Result<()> {
        sqlx::migrate!("migrations/sqlite").run(&self.pool).await?;
        Ok(())
    }

    async fn begin_write(&self) -> crate::Result<Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .op("starting a write transaction")
    }

    /// In-process only: registrations made through this store bump the
    /// signal directly, so there is nothing to listen to.
    fn start_listener(&self) {}
}

sql_store! {
    db = Sqlite,
    conn = sqlx::SqliteConnection,
    row = sqlx::sqlite::SqliteRow,
    store = SqliteStore,
    lock_payment = "SELECT status, kind FROM payments WHERE id = $1",
    lock_job = "SELECT attempts FROM poll_jobs WHERE payment_id = $1 AND lock_token = $2",
    claim = CLAIM,
    lock_inbox = "SELECT id FROM webhook_inbox WHERE id = $1 AND attempts = $2 \
        AND state IN ('received', 'failed')",
    inbox_claim = INBOX_CLAIM,
    lock_feed = "SELECT last_seq FROM feed_state WHERE id = 1",
    notify = None::<&str>,
    complete_batch = complete_each,
    writers = 1,
    lock_bucket = "SELECT tokens, updated_at FROM rate_buckets WHERE provider = $1",
}
