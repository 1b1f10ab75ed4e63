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
        let migrator = sqlx::migrate!("migrations/sqlite");
        renumber_old_history(&self.pool, &migrator).await?;
        migrator.run(&self.pool).await?;
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

/// SQLite's migrations were once numbered 1–6, without PostgreSQL's 0004
/// (an autovacuum setting SQLite has no use for); they now carry the same
/// numbers as PostgreSQL's, with a no-op 0004. A database migrated under the
/// old numbers is renumbered in place, in one transaction, before migrating:
/// its history rows move up by one from 4 and the no-op is recorded as run.
/// The migrations' contents (and so their checksums) are unchanged.
async fn renumber_old_history(
    pool: &SqlitePool,
    migrator: &sqlx::migrate::Migrator,
) -> crate::Result<()> {
    let has_history: Option<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_optional(pool)
    .await
    .op("looking for the migration history")?;
    if has_history.is_none() {
        return Ok(());
    }
    let fourth: Option<String> =
        sqlx::query_scalar("SELECT description FROM _sqlx_migrations WHERE version = 4")
            .fetch_optional(pool)
            .await
            .op("reading the migration history")?;
    if fourth.as_deref() != Some("poll job errors") {
        return Ok(()); // new numbering already, or not migrated that far
    }
    let Some(noop) = migrator.iter().find(|m| m.version == 4) else {
        return Ok(());
    };
    let mut tx = pool.begin().await.op("renumbering the migration history")?;
    for version in [6i64, 5, 4] {
        sqlx::query("UPDATE _sqlx_migrations SET version = $1 WHERE version = $2")
            .bind(version + 1)
            .bind(version)
            .execute(&mut *tx)
            .await
            .op("renumbering the migration history")?;
    }
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (4, $1, TRUE, $2, 0)",
    )
    .bind(noop.description.as_ref())
    .bind(noop.checksum.as_ref())
    .execute(&mut *tx)
    .await
    .op("renumbering the migration history")?;
    tx.commit().await.op("renumbering the migration history")?;
    tracing::info!("SQLite migration history renumbered to match PostgreSQL's");
    Ok(())
}
