//! A connection of one backend as the roles see it: it runs a [`Stmt`]
//! and yields rows of typed, named columns ([`Fields`]); a value that does
//! not decode is a corrupt row, never a panic.

use super::{Dialect, Stmt, Writer};
use crate::error::Result;
use serde_json::Value;

/// A database connection (or open transaction) of one backend.
#[async_trait::async_trait]
pub trait Conn: Writer {
    type Row: Fields + Send;
    const SQL: &'static Dialect;

    /// Run a statement; rows affected.
    async fn run(&mut self, s: Stmt<'_>) -> Result<u64>;
    async fn all(&mut self, s: Stmt<'_>) -> Result<Vec<Self::Row>>;
    async fn opt(&mut self, s: Stmt<'_>) -> Result<Option<Self::Row>>;
}

/// Typed, named columns of a row; a value that does not decode is a
/// corrupt row in `table`, never a panic.
pub trait Fields {
    fn text(&self, col: &str, table: &'static str) -> Result<String>;
    fn opt_text(&self, col: &str, table: &'static str) -> Result<Option<String>>;
    fn int(&self, col: &str, table: &'static str) -> Result<i64>;
    fn opt_int(&self, col: &str, table: &'static str) -> Result<Option<i64>>;
    fn int4(&self, col: &str, table: &'static str) -> Result<i32>;
    fn opt_int4(&self, col: &str, table: &'static str) -> Result<Option<i32>>;
    fn real(&self, col: &str, table: &'static str) -> Result<f64>;
    fn json(&self, col: &str, table: &'static str) -> Result<Value>;
    fn bytes(&self, col: &str, table: &'static str) -> Result<Vec<u8>>;

    /// A column holding a name we parse (a status, a kind, a state).
    fn parsed<T: std::str::FromStr>(&self, col: &str, table: &'static str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        parse(&self.text(col, table)?, table)
    }
    fn opt_parsed<T: std::str::FromStr>(&self, col: &str, table: &'static str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        self.opt_text(col, table)?
            .map(|s| parse(&s, table))
            .transpose()
    }
    /// An account column: `''` (the provider's own, as stored) is `None`.
    fn account(&self, col: &str, table: &'static str) -> Result<Option<String>> {
        Ok(self.opt_text(col, table)?.filter(|a| !a.is_empty()))
    }
    /// A non-negative count stored as INTEGER.
    fn count(&self, col: &str, table: &'static str) -> Result<u32> {
        Ok(u32::try_from(self.int4(col, table)?).unwrap_or(0))
    }
}

pub fn parse<T: std::str::FromStr>(v: &str, table: &'static str) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    v.parse::<T>().map_err(|e| corrupt(table, e))
}

pub fn corrupt(table: &'static str, detail: impl ToString) -> crate::StoreError {
    crate::StoreError::Corrupt {
        table,
        detail: detail.to_string(),
    }
}

/// Rows whose columns sqlx decodes as declared (PostgreSQL's, SQLite's);
/// MySQL's rows have an impl of their own (`mysql_row`).
pub trait DeclaredRow {}
impl DeclaredRow for sqlx::postgres::PgRow {}
impl DeclaredRow for sqlx::sqlite::SqliteRow {}

impl<R> Fields for R
where
    R: sqlx::Row + DeclaredRow,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i32: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> f64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> sqlx::types::Json<Value>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn bytes(&self, col: &str, table: &'static str) -> Result<Vec<u8>> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn text(&self, col: &str, table: &'static str) -> Result<String> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn opt_text(&self, col: &str, table: &'static str) -> Result<Option<String>> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn int(&self, col: &str, table: &'static str) -> Result<i64> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn opt_int(&self, col: &str, table: &'static str) -> Result<Option<i64>> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn int4(&self, col: &str, table: &'static str) -> Result<i32> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn opt_int4(&self, col: &str, table: &'static str) -> Result<Option<i32>> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn real(&self, col: &str, table: &'static str) -> Result<f64> {
        self.try_get(col).map_err(|e| corrupt(table, e))
    }
    fn json(&self, col: &str, table: &'static str) -> Result<Value> {
        self.try_get::<sqlx::types::Json<Value>, _>(col)
            .map(|j| j.0)
            .map_err(|e| corrupt(table, e))
    }
}

/// `impl Conn` for a concrete sqlx connection type: run, fetch-all and
/// fetch-optional are the same three bodies for both backends. (A macro,
/// not generic code: the number of rows affected has no trait to reach it by.)
macro_rules! impl_conn {
    (conn = $conn:ty, db = $db:ty, row = $row:ty, dialect = $dialect:expr) => {
        #[async_trait::async_trait]
        impl $crate::driver::Conn for $conn {
            type Row = $row;
            const SQL: &'static $crate::driver::Dialect = $dialect;

            async fn run(&mut self, s: $crate::driver::Stmt<'_>) -> $crate::Result<u64> {
                use $crate::error::DbContext;
                let op = s.op;
                $crate::driver::bind::<$db>(&s)
                    .execute(&mut *self)
                    .await
                    .map(|r| r.rows_affected())
                    .op(op)
            }
            async fn all(&mut self, s: $crate::driver::Stmt<'_>) -> $crate::Result<Vec<$row>> {
                use $crate::error::DbContext;
                let op = s.op;
                $crate::driver::bind::<$db>(&s)
                    .fetch_all(&mut *self)
                    .await
                    .op(op)
            }
            async fn opt(&mut self, s: $crate::driver::Stmt<'_>) -> $crate::Result<Option<$row>> {
                use $crate::error::DbContext;
                let op = s.op;
                $crate::driver::bind::<$db>(&s)
                    .fetch_optional(&mut *self)
                    .await
                    .op(op)
            }
        }
    };
}
pub(crate) use impl_conn;
