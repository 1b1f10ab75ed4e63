//! The SQLite adapter: the embedded default, one file, WAL.
//!
//! SQLite has one writer at a time, so every write transaction starts with
//! `BEGIN IMMEDIATE`: it takes the write lock up front (waiting up to the busy
//! timeout) instead of failing when a read-then-write transaction tries to
//! upgrade. The claim is a single `UPDATE … RETURNING`, atomic on its own.

use crate::driver::{impl_conn, Dialect, Leased, Writer};
use crate::driver::{Backend, Writes};
use crate::error::{DbContext, Result};
use crate::model::NewAttempt;
use crate::wakeups::Wakeups;
pub use sqlx::sqlite::SqliteSynchronous;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow};
use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};
use std::str::FromStr;
use std::time::Duration;

/// The claim statement (public so its plan can be checked and documented).
pub const CLAIM: &str = "UPDATE poll_jobs SET due_at = next_poll_at, next_poll_at = $3, \
        locked_until = $3, locked_by = $4, lock_token = $5 \
    WHERE payment_id IN ( \
        SELECT payment_id FROM poll_jobs \
        WHERE next_poll_at IS NOT NULL AND next_poll_at <= $1 \
        ORDER BY next_poll_at LIMIT $2) \
    RETURNING payment_id, provider, provider_ref, merchant_ref, account, kind, registered_at, attempts, errors, due_at, resume_at, lock_token";

/// [`CLAIM`] within one lane (provider `$6`, account `$7`): fair claiming.
/// SQLite takes the lane index for these equalities (a row-value range it
/// would narrow by `provider` alone).
pub const CLAIM_LANE: &str = "UPDATE poll_jobs SET due_at = next_poll_at, next_poll_at = $3, \
        locked_until = $3, locked_by = $4, lock_token = $5 \
    WHERE payment_id IN ( \
        SELECT payment_id FROM poll_jobs \
        WHERE provider = $6 AND account = $7 AND next_poll_at IS NOT NULL AND next_poll_at <= $1 \
        ORDER BY provider, account, next_poll_at LIMIT $2) \
    RETURNING payment_id, provider, provider_ref, merchant_ref, account, kind, registered_at, attempts, errors, due_at, resume_at, lock_token";

const INBOX_CLAIM: &str = "UPDATE webhook_inbox SET next_attempt_at = $3, attempts = attempts + 1 \
    WHERE id IN (SELECT id FROM webhook_inbox \
        WHERE state IN ('received', 'failed') AND next_attempt_at <= $1 \
        ORDER BY next_attempt_at LIMIT $2) \
    RETURNING id, provider, account, event_id, provider_ref, merchant_ref, observed_status, provider_status, \
        occurred_at, received_at, state, reason, attempts, source, reported_amount, reported_currency, reported_pieces";

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
            // A new file returns pages retention freed to the file system
            // (`PRAGMA incremental_vacuum` after each run); an existing
            // file keeps its mode, reusing freed pages (docs/LIFECYCLE.md).
            .auto_vacuum(sqlx::sqlite::SqliteAutoVacuum::Incremental)
            .foreign_keys(true);
        let pool = pool_options(max_connections.clamp(1, 8))
            .connect_with(opts)
            .await
            .op("opening the SQLite database")?;
        Ok(Self::from_pool(pool))
    }

    /// Wrap an existing pool (an application embedding finality; build
    /// it from [`pool_options`], which replaces connections a failed commit
    /// left unusable).
    pub fn from_pool(pool: SqlitePool) -> Self {
        SqliteStore {
            pool,
            wake: Wakeups::new(),
        }
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// Pool options for a store's SQLite pool. When a COMMIT fails because
/// the disk is full, SQLite may roll the transaction back itself; sqlx
/// then still counts it open, its ROLLBACK fails, and that connection can
/// never begin another transaction. Such a connection is closed when it
/// is next taken from the pool, and a fresh one opened in its place.
pub fn pool_options(max_connections: u32) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(max_connections)
        .before_acquire(|conn, _| {
            Box::pin(async move {
                let usable = !sqlx::Connection::is_in_transaction(conn);
                if !usable {
                    tracing::warn!("closing a SQLite connection left inside a failed transaction");
                }
                Ok(usable)
            })
        })
}

/// The statements that differ from PostgreSQL's: no row locks (the write
/// transaction already holds the database), no NOTIFY.
static DIALECT: Dialect = Dialect {
    lock_payment: "SELECT status, kind FROM payments WHERE id = $1",
    lock_job: "SELECT attempts FROM poll_jobs WHERE payment_id = $1 AND lock_token = $2",
    claim: CLAIM,
    claim_lane: CLAIM_LANE,
    due_lanes: crate::poll_queue::lanes::DUE_LANES_SQLITE,
    lock_inbox: "SELECT id FROM webhook_inbox WHERE id = $1 AND attempts = $2 \
        AND state IN ('received', 'failed')",
    inbox_claim: INBOX_CLAIM,
    lock_feed: "SELECT last_seq FROM feed_state WHERE id = 1",
    lock_bucket: "SELECT tokens, updated_at FROM rate_buckets WHERE provider = $1",
    notify: None,
    skip_locked: "",
    row_lock: "",
    reclaim_space: Some("PRAGMA incremental_vacuum"),
    time_partitions: false,
    writable_cte: false,
    sequence_feed: None,
    number_outbox: super::NUMBER_OUTBOX,
};

#[async_trait::async_trait]
impl Backend for SqliteStore {
    type Db = Sqlite;
    type Conn = SqliteConnection;
    /// One writer: a second waits on the file lock, sleeping.
    const WRITERS: usize = 1;

    fn pool(&self) -> &sqlx::Pool<Sqlite> {
        &self.pool
    }
    fn wakeups(&self) -> &Wakeups {
        &self.wake
    }
    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .op("starting a write transaction")
    }
    async fn run_migrations(&self) -> Result<()> {
        let migrator = sqlx::migrate!("migrations/sqlite");
        renumber_old_history(&self.pool, &migrator).await?;
        migrator.run(&self.pool).await?;
        Ok(())
    }
    /// In-process only: registrations made through this store bump the
    /// signal directly, so there is nothing to listen to.
    fn start_listener(&self) {}
}

// SQLite runs in-process with one writer: a statement per row costs no
// round trip, so the batch columns are written one row at a time.
impl_conn! { conn = SqliteConnection, db = Sqlite, row = SqliteRow, dialect = &DIALECT }

impl super::InboxRows for SqliteConnection {}

#[async_trait::async_trait]
impl Writer for SqliteConnection {
    async fn insert_attempts(&mut self, attempts: &[&NewAttempt]) -> Result<()> {
        super::row_writer::insert_attempts(self, attempts).await
    }
    async fn lock_leases(&mut self, ids: &[&str]) -> Result<Vec<Leased>> {
        super::row_writer::lock_leases(self, ids).await
    }
    async fn write(&mut self, w: &Writes) -> Result<()> {
        super::row_writer::write(self, w).await
    }
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
