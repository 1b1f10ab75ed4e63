//! The driver interface every role is written against: a statement as data
//! ([`Stmt`]), a connection that runs it ([`Conn`]), a row that yields typed
//! columns ([`Fields`]), and the handful of statements whose SQL differs per
//! backend ([`Dialect`]).
//!
//! sqlx types every query by its database, so code generic over
//! `sqlx::Database` needs a wall of trait bounds repeated on every function
//! (Rust does not carry where-clauses along). Describing a statement as data
//! and binding it in one place per backend keeps the shared code ordinary:
//! each role is written once, generic over one bound (`C: Conn`), and the
//! type checker and the editor see all of it. No crate does this narrow job
//! (sqlx's own `Any` driver has no JSON or array types), hence these few
//! dozen lines.

use crate::error::Result;
use crate::model::NewAttempt;
use crate::transition::Writes;
use finality_core::{Kind, Status};
use serde_json::Value;

/// One bound value. Borrowed: binding never copies a string.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Int4(Option<i32>),
    Real(f64),
    Flag(bool),
    Json(&'a Value),
    Bytes(&'a [u8]),
}

/// A statement with its parameters (`$1`, `$2`, … in order) and what it is
/// for, which a database error will name.
#[derive(Debug, Clone)]
pub struct Stmt<'a> {
    pub sql: &'a str,
    pub args: Vec<Arg<'a>>,
    pub op: &'static str,
}

/// Start a statement; `op` says what it does ("writing a status").
pub fn stmt<'a>(sql: &'a str, op: &'static str) -> Stmt<'a> {
    Stmt {
        sql,
        args: Vec::new(),
        op,
    }
}

impl<'a> Stmt<'a> {
    pub fn text(mut self, v: &'a str) -> Self {
        self.args.push(Arg::Text(Some(v)));
        self
    }
    pub fn opt_text(mut self, v: Option<&'a str>) -> Self {
        self.args.push(Arg::Text(v));
        self
    }
    pub fn int(mut self, v: i64) -> Self {
        self.args.push(Arg::Int(Some(v)));
        self
    }
    pub fn opt_int(mut self, v: Option<i64>) -> Self {
        self.args.push(Arg::Int(v));
        self
    }
    pub fn int4(mut self, v: i32) -> Self {
        self.args.push(Arg::Int4(Some(v)));
        self
    }
    pub fn opt_int4(mut self, v: Option<i32>) -> Self {
        self.args.push(Arg::Int4(v));
        self
    }
    pub fn real(mut self, v: f64) -> Self {
        self.args.push(Arg::Real(v));
        self
    }
    pub fn flag(mut self, v: bool) -> Self {
        self.args.push(Arg::Flag(v));
        self
    }
    pub fn json(mut self, v: &'a Value) -> Self {
        self.args.push(Arg::Json(v));
        self
    }
    pub fn bytes(mut self, v: &'a [u8]) -> Self {
        self.args.push(Arg::Bytes(v));
        self
    }
}

/// Bind a statement's arguments to a sqlx query, for any backend that can
/// encode our seven argument types (both can).
pub fn bind<'q, DB>(s: &'q Stmt<'q>) -> sqlx::query::Query<'q, DB, DB::Arguments<'q>>
where
    DB: sqlx::Database,
    Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i32>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    f64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    sqlx::types::Json<&'q Value>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q [u8]: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let mut q = sqlx::query::<DB>(s.sql);
    for a in &s.args {
        q = match *a {
            Arg::Text(v) => q.bind(v),
            Arg::Int(v) => q.bind(v),
            Arg::Int4(v) => q.bind(v),
            Arg::Real(v) => q.bind(v),
            Arg::Flag(v) => q.bind(v),
            Arg::Json(v) => q.bind(sqlx::types::Json(v)),
            Arg::Bytes(v) => q.bind(v),
        };
    }
    q
}

/// The statements whose SQL differs per backend: row locks (`FOR UPDATE`
/// on PostgreSQL; SQLite's single writer already holds the database), the
/// claim statements, and the wake-up.
#[derive(Debug)]
pub struct Dialect {
    pub lock_payment: &'static str,
    pub lock_job: &'static str,
    pub claim: &'static str,
    pub lock_inbox: &'static str,
    pub inbox_claim: &'static str,
    pub lock_feed: &'static str,
    pub lock_bucket: &'static str,
    /// Run after a registration or "poll now" inside the transaction, so
    /// other processes' engines wake at commit (PostgreSQL `NOTIFY`).
    pub notify: Option<&'static str>,
    /// The sequencer's whole round as one statement returning the rows it
    /// numbered (PostgreSQL's `finality_sequence_feed_rows`); without it
    /// the round is run statement by statement.
    pub sequence_feed: Option<&'static str>,
    /// Whether a statement can hold several writes as `WITH` parts
    /// (PostgreSQL; one round trip instead of several).
    pub writable_cte: bool,
    /// Run after retention deleted rows: gives freed pages back to the
    /// file system (SQLite's incremental vacuum); none on PostgreSQL.
    pub reclaim_space: Option<&'static str>,
    /// Whether `poll_attempts` and `delivery_attempts` are partitioned by
    /// day (PostgreSQL; see `partitions`).
    pub time_partitions: bool,
    /// Appended to a `SELECT` that must lock its rows (`FOR UPDATE`;
    /// nothing on SQLite, whose write transaction holds the database).
    pub row_lock: &'static str,
    /// Appended to a `SELECT` that takes rows no one else holds (`FOR
    /// UPDATE SKIP LOCKED`; nothing on SQLite).
    pub skip_locked: &'static str,
}

/// `$from, $from+1, …` for `n` values: an `IN (…)` list for the portable
/// statements that take a batch (PostgreSQL's own use arrays instead).
pub fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A payment and its poll job's lease, as locked for a completion.
#[derive(Debug, Clone)]
pub struct Leased {
    pub payment_id: String,
    pub status: Status,
    pub kind: Kind,
    pub lock_token: Option<i64>,
}

/// Where the backends truly differ in writing: PostgreSQL sends a whole
/// batch as arrays in a fixed handful of statements, SQLite (one in-process
/// writer) runs one short statement per row, and the in-memory store
/// changes its maps. Completions and the transition writer are written once
/// against this trait.
#[async_trait::async_trait]
pub trait Writer: Send {
    /// Record provider calls.
    async fn insert_attempts(&mut self, attempts: &[&NewAttempt]) -> Result<()>;
    /// Lock these payments and their poll jobs (in id order) and read their
    /// status and lease token; a payment without a job is left out.
    async fn lock_leases(&mut self, ids: &[&str]) -> Result<Vec<Leased>>;
    /// Write statuses, history, outbox and job changes (see
    /// `crate::transition`, the one writer that builds them).
    async fn write(&mut self, w: &Writes) -> Result<()>;
}

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

impl<R> Fields for R
where
    R: sqlx::Row,
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
        impl $crate::query::Conn for $conn {
            type Row = $row;
            const SQL: &'static $crate::query::Dialect = $dialect;

            async fn run(&mut self, s: $crate::query::Stmt<'_>) -> $crate::Result<u64> {
                use $crate::error::DbContext;
                let op = s.op;
                $crate::query::bind::<$db>(&s)
                    .execute(&mut *self)
                    .await
                    .map(|r| r.rows_affected())
                    .op(op)
            }
            async fn all(&mut self, s: $crate::query::Stmt<'_>) -> $crate::Result<Vec<$row>> {
                use $crate::error::DbContext;
                let op = s.op;
                $crate::query::bind::<$db>(&s)
                    .fetch_all(&mut *self)
                    .await
                    .op(op)
            }
            async fn opt(&mut self, s: $crate::query::Stmt<'_>) -> $crate::Result<Option<$row>> {
                use $crate::error::DbContext;
                let op = s.op;
                $crate::query::bind::<$db>(&s)
                    .fetch_optional(&mut *self)
                    .await
                    .op(op)
            }
        }
    };
}
pub(crate) use impl_conn;
