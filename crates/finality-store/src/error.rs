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
