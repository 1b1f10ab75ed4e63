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
    /// A partition change that could not be made as things stand (it is
    /// tried again later; nothing was changed).
    #[error("cannot change the partitions of {table}: {detail}")]
    Schema { table: &'static str, detail: String },
    /// A statement whose parameters do not match its SQL (a bug, caught by
    /// the driver's tests before it ships).
    #[error("statement for {op} cannot be built: {detail}")]
    Statement { op: &'static str, detail: String },
    /// An operation the in-memory store (simulations only) does not keep:
    /// retention, archives. Refused, never answered with a made-up empty
    /// success.
    #[error("the in-memory store does not keep {what}: {op} refused")]
    NotKept {
        what: &'static str,
        op: &'static str,
    },
    #[error("invalid database url `{url}`: {detail}")]
    Url { url: String, detail: String },
}

impl StoreError {
    /// The database cannot be reached or cannot take writes right now
    /// (connection refused or lost, pool exhausted, server shutting down or
    /// starting, disk full, read-only file): the request may succeed later,
    /// and nothing of it was stored. Answered 503, so a provider retries.
    pub fn is_unavailable(&self) -> bool {
        self.unavailable_reason().is_some()
    }

    /// Why the database cannot take the request now, in a few words an
    /// operator can act on (the full error goes to the log), or `None` when
    /// it is not that kind of error.
    pub fn unavailable_reason(&self) -> Option<&'static str> {
        let StoreError::Db { source, .. } = self else {
            return None;
        };
        match source {
            sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed => {
                Some("unreachable")
            }
            sqlx::Error::PoolTimedOut => Some("no connection free in time"),
            sqlx::Error::PoolClosed => Some("shutting down"),
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                // PostgreSQL: class 08 (connection exception), 53 (insufficient
                // resources), 57P0x (admin shutdown, crash shutdown, cannot
                // connect now), 25006 (read-only transaction, e.g. a standby).
                if code.starts_with("08") {
                    return Some("unreachable");
                }
                if code == "53100" {
                    return Some("disk full");
                }
                if code.starts_with("53") {
                    return Some("out of resources");
                }
                if code.starts_with("57P") {
                    return Some("shutting down or starting");
                }
                if code == "25006" {
                    return Some("read-only");
                }
                // A deadlock or serialization failure (PostgreSQL 40001 and
                // 40P01, InnoDB's 1213): nothing was written; a retry runs.
                if code == "40001" || code == "40P01" {
                    return Some("conflict with another transaction");
                }
                // MySQL/MariaDB by error number: lock wait timeout (1205),
                // read-only server (1290, 1836), disk or table full (1021,
                // 1114), too many connections (1040).
                if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                    match my.number() {
                        1205 => return Some("busy"),
                        1290 | 1836 => return Some("read-only"),
                        1021 | 1114 => return Some("disk full"),
                        1040 => return Some("out of resources"),
                        _ => {}
                    }
                }
                // SQLite: BUSY (5), LOCKED (6), READONLY (8), IOERR (10),
                // FULL (13), CANTOPEN (14), with or without extended codes.
                match code.parse::<i64>().map(|c| c & 0xff) {
                    Ok(5 | 6) => Some("busy"),
                    Ok(8) => Some("read-only"),
                    Ok(10) => Some("I/O error"),
                    Ok(13) => Some("disk full"),
                    Ok(14) => Some("cannot open the file"),
                    _ => None,
                }
            }
            _ => None,
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
