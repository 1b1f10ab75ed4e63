//! The store: the database is the source of truth for every payment, poll job,
//! transition and event.
//!
//! Thirteen roles, each a small trait: [`PaymentStore`] (registration and
//! every status change outside polls), [`PollQueue`] (leases and fenced
//! completions), [`WebhookInbox`], [`EventFeed`] (outbox, feed order,
//! destinations), [`RateBuckets`], [`Cursors`] (event-list catch-up), [`Accounts`] (a provider's
//! accounts added at run time),
//! [`Review`] (the review queue's reads and the audit trail of manual
//! actions), [`Sweep`] (the reconciliation sweep's reads and repairs),
//! [`Reconciliations`] (settlement reports imported and checked),
//! [`Gauges`], and retention's [`Lifecycle`] and [`Partitions`]. A
//! component takes the role it uses (with its wake-up: `PollQueue::subscribe`,
//! `WebhookInbox::subscribe_inbox`, `EventFeed::subscribe_feed`); [`Store`] is
//! all of them plus migrations, for where everything is wired. Bring the roles
//! into scope with `use finality_store::prelude::*`.
//!
//! Two backends over sqlx: SQLite (the embedded default, WAL) and PostgreSQL
//! (several nodes). Each role is written once, generic over the driver's
//! connection (`driver::Conn`); the backends supply only what truly differs
//! (row locks, the claim statements, wake-ups, and how a batch of writes is
//! sent: arrays on PostgreSQL, rows on SQLite). Every status change is
//! decided in plain Rust (`finality_core::decide`, a role's `decide` or
//! `plan`), built into one set of columns (`driver::Writes`) by
//! `transition`, and written by the backend's `Writer`.
//!
//! # Layout
//! - One folder per role: `payments/`, `poll_queue/` (with `plan`, what a
//!   poll's completion changes), `inbox/` (`decide`: what a webhook does;
//!   `write`: applying it in a transaction), `feed/`, [`review`], [`sweep`],
//!   [`reconciliations`], `rate_buckets/`, `cursors/`, `accounts/`, [`gauges`] and
//!   [`retention`] (`rows`, `delete`, `archive`, `partitions`, `convert`).
//!   Each holds its trait (`mod.rs`), its SQL (`sql.rs`, reads and writes
//!   only) and its in-memory implementation (`memory.rs`).
//! - `driver/`: below the roles and importing none of them: statements as
//!   data, the connection, the dialect, the writer, PostgreSQL's array
//!   statements (parameters named and bound from one list), and the two
//!   backends ([`postgres`], [`sqlite`], each with `register_in` for
//!   transactional enqueue inside the caller's own transaction).
//! - `transition`: the one builder of status, history, outbox and job changes.
//! - `wakeups`: the in-process signals and the feed's newest events.
//! - [`memory`]: [`memory::MemStore`] and its maps; each role's
//!   `memory.rs` implements that role on them, for simulations.
//! - [`manual`]: settling a payment by hand (the API's and the CLI's one `resolve`).
//! - [`stats`]: per-provider statistics over a window.
//! - [`model`]: the values that cross the store boundary.
//!
//! The conformance suite and per-test databases live in `finality-testkit`
//! (a dev-dependency), one module of cases per role, so no test code ships
//! in this crate.
#![forbid(unsafe_code)]

pub mod accounts;
mod amounts;
mod cursors;
mod driver;
mod error;
mod event_id;
mod feed;
pub mod flags;
pub mod gauges;
mod inbox;
pub mod manual;
pub mod memory;
pub mod model;
mod payments;
mod poll_queue;
mod rate_buckets;
pub mod reconciliations;
pub mod retention;
pub mod review;
pub mod stats;
pub mod sweep;
mod transition;
mod wakeups;

pub use accounts::{AccountPut, AccountRow, Accounts};
pub use cursors::{CursorLease, Cursors};
pub use error::{Result, StoreError};
pub use feed::{is_notice, EventFeed, NOTICE_TYPES};
pub use gauges::{ClusterGauges, Gauges};
pub use inbox::WebhookInbox;
pub use model::*;
pub use payments::PaymentStore;
pub use poll_queue::PollQueue;
pub use rate_buckets::RateBuckets;
pub use reconciliations::Reconciliations;
pub use retention::partitions::Partitions;
pub use retention::Lifecycle;
pub use review::Review;
pub use sweep::Sweep;
pub use wakeups::Wakeups;

use async_trait::async_trait;
use std::sync::Arc;

/// The PostgreSQL backend, for several nodes sharing the work.
pub mod postgres {
    pub use crate::driver::postgres::{
        PgStore, CLAIM, CLAIM_LANE, DEFAULT_STATEMENT_TIMEOUT, FEED_CHANNEL, WAKE_CHANNEL,
    };
    pub use crate::driver::replica::{parse_lsn, Replayed, ReplicaLink};
    pub use crate::payments::sql::register_in_pg as register_in;
    pub use crate::poll_queue::lanes::DUE_LANES;
}

/// The MySQL and MariaDB backend, for teams whose database that is.
pub mod mysql {
    pub use crate::driver::mysql::{
        pool_options, MySqlStore, CLAIM, CLAIM_LANE, FEED_LOOK, LOCK_WAIT,
    };
    pub use crate::payments::sql::register_in_mysql as register_in;
}

/// The SQLite backend: the embedded default, one file.
pub mod sqlite {
    pub use crate::driver::sqlite::{
        pool_options, SqliteStore, SqliteSynchronous, CLAIM, CLAIM_LANE,
    };
    pub use crate::payments::sql::register_in_sqlite as register_in;
    pub use crate::poll_queue::lanes::DUE_LANES_SQLITE as DUE_LANES;
}

/// The roles, to bring their methods into scope: `use finality_store::prelude::*`.
pub mod prelude {
    pub use crate::{
        Accounts, Cursors, EventFeed, Lifecycle, Partitions, PaymentStore, PollQueue, RateBuckets,
        Reconciliations, Review, Store, Sweep, WebhookInbox,
    };
}

/// Every role, migrations and how many writers are worth running at once:
/// for where everything is wired (the server, `Engine::new`, the lab). A
/// component takes the roles it uses instead.
#[async_trait]
pub trait Store:
    PaymentStore
    + PollQueue
    + WebhookInbox
    + EventFeed
    + RateBuckets
    + Cursors
    + Accounts
    + Review
    + flags::Flags
    + Sweep
    + Reconciliations
    + Gauges
    + Lifecycle
    + Partitions
    + Send
    + Sync
    + 'static
{
    /// Run the embedded migrations (idempotent).
    async fn migrate(&self) -> Result<()>;

    /// How many write transactions are worth running at once. SQLite has
    /// one writer (a second waits on the file lock, sleeping), PostgreSQL
    /// commits concurrent transactions together.
    fn parallel_writers(&self) -> usize {
        1
    }
}

#[async_trait]
impl<B: driver::Backend> Store for B {
    async fn migrate(&self) -> Result<()> {
        self.run_migrations().await?;
        // A new database's daily tables are partitioned at once (they are
        // empty), with today's partition; the retention role keeps days
        // ahead and converts a populated table online.
        let now = finality_core::Clock::now(&finality_core::SystemClock);
        self.partitions_ahead(now, 1).await?;
        Ok(())
    }
    fn parallel_writers(&self) -> usize {
        B::WRITERS
    }
}

/// Open the store a URL names: `sqlite://…` or `postgres://…`, and migrate it.
pub async fn open(url: &str, max_connections: u32) -> Result<Arc<dyn Store>> {
    open_with(
        url,
        max_connections,
        driver::postgres::DEFAULT_STATEMENT_TIMEOUT,
    )
    .await
}

/// [`open`] with PostgreSQL's statements bounded by `statement_timeout`
/// (zero: unbounded; SQLite has no such setting, its writes are bounded by
/// its busy timeout).
pub async fn open_with(
    url: &str,
    max_connections: u32,
    statement_timeout: std::time::Duration,
) -> Result<Arc<dyn Store>> {
    let store: Arc<dyn Store> = if url.starts_with("sqlite:") {
        Arc::new(driver::sqlite::SqliteStore::connect(url, max_connections).await?)
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Arc::new(
            driver::postgres::PgStore::connect_timed(url, max_connections, statement_timeout)
                .await?,
        )
    } else if url.starts_with("mysql:") || url.starts_with("mariadb:") {
        let url = url.replacen("mariadb:", "mysql:", 1);
        Arc::new(driver::mysql::MySqlStore::connect(&url, max_connections).await?)
    } else {
        // Only the scheme is echoed: the rest may hold a password.
        let scheme = url.split(':').next().unwrap_or_default();
        return Err(StoreError::Url {
            url: format!("{scheme}:…"),
            detail: "expected sqlite://PATH, postgres://… or mysql://…".into(),
        });
    };
    store.migrate().await?;
    Ok(store)
}
