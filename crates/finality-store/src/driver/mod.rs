//! The driver: what the roles are written against, and the two backends
//! that provide it. It imports no role: the roles call down into it, never
//! the other way.
//!
//! A [`Backend`] gives a pool, a write transaction that holds the lock it
//! needs, its migrations and its wake-ups. Every role
//! ([`crate::PaymentStore`], [`crate::PollQueue`], …) is implemented once for
//! any `Backend`, in ordinary generic code over its connection ([`Conn`]).
//!
//! # Layout
//! - `stmt`: a statement as data ([`Stmt`]) and its binding.
//! - `conn`: [`Conn`] (runs a statement) and [`Fields`] (typed columns).
//! - `dialect`: the statements whose SQL differs per backend.
//! - `writer`: [`Writer`], where the backends truly differ in writing, and
//!   the columns it writes ([`Writes`]).
//! - `inbox_rows`: webhook rows in and the inbox processor's numbered write.
//! - `arrays`: PostgreSQL array statements whose positional parameters are
//!   built and bound from one list of named columns.
//! - `pg_arrays`: PostgreSQL's batch statements, written with `arrays`.
//! - `held`: connections the inbox's group commit keeps between batches.
//! - `row_writer`: the batch a row at a time (SQLite); `mysql_writer`: a
//!   statement per table and batch (MySQL).
//! - `postgres`, `sqlite`, `mysql`: the three backends; `mysql_sql`
//!   rewrites the roles' statements in MySQL's words, `mysql_row` reads
//!   its rows.

mod arrays;
mod conn;
mod dialect;
pub(crate) mod held;
mod inbox_rows;
pub(crate) mod mysql;
mod mysql_row;
mod mysql_sql;
mod mysql_writer;
mod pg_arrays;
pub(crate) mod postgres;
pub(crate) mod replica;
mod row_writer;
pub(crate) mod sqlite;
mod stmt;
mod writer;

pub(crate) use conn::{corrupt, impl_conn, parse, Conn, Fields};
pub(crate) use dialect::{placeholders, Dialect, NUMBER_OUTBOX};
pub(crate) use inbox_rows::{InboxRows, NumberedWrite};
pub(crate) use stmt::{bind, stmt, Arg, Stmt};
pub(crate) use writer::{Leased, Writer, Writes};

use crate::error::{DbContext, Result};
use crate::wakeups::Wakeups;

/// One database backend (SQLite, PostgreSQL or MySQL).
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    type Db: sqlx::Database<Connection = Self::Conn>;
    type Conn: Conn + InboxRows + sqlx::Connection<Database = Self::Db>;
    /// How many write transactions are worth running at once.
    const WRITERS: usize;

    fn pool(&self) -> &sqlx::Pool<Self::Db>;
    fn wakeups(&self) -> &Wakeups;
    /// A transaction holding whatever write lock the backend needs up front.
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Self::Db>>;
    async fn run_migrations(&self) -> Result<()>;
    /// Start forwarding other processes' wake-ups, once (no-op in-process).
    fn start_listener(&self);

    /// Connections the webhook inbox's group commit keeps between batches
    /// (none: each batch takes one from the pool).
    fn held(&self) -> Option<&held::Held<Self::Db>> {
        None
    }

    /// A connection for reads outside a transaction.
    async fn read(&self) -> Result<sqlx::pool::PoolConnection<Self::Db>> {
        self.pool().acquire().await.op("acquiring a connection")
    }

    /// A connection whose statements may run past the statement timeout
    /// (a whole-table step of the online partition conversion), closed
    /// when dropped rather than handed back.
    async fn unbounded(&self) -> Result<sqlx::pool::PoolConnection<Self::Db>> {
        self.read().await
    }
}
