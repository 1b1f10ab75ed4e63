//! What a database backend provides to the roles: a pool, a write
//! transaction that holds the lock it needs, its migrations and its wake-ups.
//! Every role ([`crate::PaymentStore`], [`crate::PollQueue`], …) is
//! implemented once for any `Backend`, in ordinary generic code.

use crate::error::{DbContext, Result};
use crate::query::Conn;
use crate::Wakeups;

/// One database backend (SQLite or PostgreSQL).
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    type Db: sqlx::Database<Connection = Self::Conn>;
    type Conn: Conn + crate::inbox::InboxRows + sqlx::Connection<Database = Self::Db>;
    /// How many write transactions are worth running at once.
    const WRITERS: usize;

    fn pool(&self) -> &sqlx::Pool<Self::Db>;
    fn wakeups(&self) -> &Wakeups;
    /// A transaction holding whatever write lock the backend needs up front.
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Self::Db>>;
    async fn run_migrations(&self) -> Result<()>;
    /// Start forwarding other processes' wake-ups, once (no-op in-process).
    fn start_listener(&self);

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
