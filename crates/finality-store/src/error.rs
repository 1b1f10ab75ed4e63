use thiserror::Error;

/// Errors of the store. Database errors are passed through with the
/// operation that hit them, so a log line says what was being done.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("database error while {op}: {source}")]
    Db {
        op: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("corrupt row in {table}: {detail}")]
    Corrupt { table: &'static str, detail: String },
    #[error("invalid database url `{url}`: {detail}")]
    Url { url: String, detail: String },
}

impl StoreError {
    /// The database cannot be reached or cannot take writes right now
    /// (connection refused or lost, pool exhausted, server shutting down or
    /// starting, disk full, read-only file): the request may succeed later,
    /// and nothing of it was stored. Answered 503, so a provider retries.
    pub fn is_unavailable(&self) -> bool {
        let StoreError::Db { source, .. } = self else {
            return false;
        };
        match source {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::Tls(_) => true,
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                // PostgreSQL: class 08 (connection exception), 53 (insufficient
                // resources), 57P0x (admin shutdown, crash shutdown, cannot
                // connect now), 25006 (read-only transaction, e.g. a standby).
                code.starts_with("08")
                    || code.starts_with("53")
                    || code.starts_with("57P")
                    || code == "25006"
                    // SQLite: BUSY (5), LOCKED (6), READONLY (8), IOERR (10),
                    // FULL (13), CANTOPEN (14), with or without extended codes.
                    || matches!(
                        code.parse::<i64>().map(|c| c & 0xff),
                        Ok(5 | 6 | 8 | 10 | 13 | 14)
                    )
            }
            _ => false,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Attach the operation name to a sqlx error.
pub(crate) trait DbContext<T> {
    fn op(self, op: &'static str) -> Result<T>;
}

impl<T> DbContext<T> for std::result::Result<T, sqlx::Error> {
    fn op(self, op: &'static str) -> Result<T> {
        self.map_err(|source| StoreError::Db { op, source })
    }
}
