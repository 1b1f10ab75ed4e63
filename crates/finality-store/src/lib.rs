//! The store: the database is the source of truth for every payment, poll job,
//! transition and event.
//!
//! Nine roles, each a small trait: [`PaymentStore`] (registration and every
//! status change outside polls), [`PollQueue`] (leases and fenced
//! completions), [`WebhookInbox`], [`EventFeed`] (outbox, feed order,
//! destinations), [`RateBuckets`], [`Cursors`] (event-list catch-up), [`Review`] (the
//! review queue's reads and the audit trail of manual actions) , [`Sweep`] (the
//! reconciliation sweep's reads and repairs) and [`Reconciliations`]
//! (settlement reports imported and checked).
//! [`Store`] is all six plus
//! migrations and wake-ups; bring the roles into scope with
//! `use finality_store::prelude::*`.
//!
//! Two backends over sqlx: SQLite (the embedded default, WAL) and PostgreSQL
//! (several nodes). Each role is written once, generic over a backend's
//! connection ([`query`]'s `Conn`); the backends supply only what truly
//! differs (row locks, the claim statements, wake-ups, and how a batch of
//! writes is sent: arrays on PostgreSQL, rows on SQLite). Every status change
//! is built by one type, `transition::Writes`, and written by
//! `transition::write_changes` (the inbox processor sends the same
//! statement with its feed positions and its rows' outcomes added).
//!
//! # Layout
//! - `payments`, `poll_queue`, `inbox`, `feed`, `rate_buckets`, `cursors`, [`review`]: the roles.
//! - `transition`: the one writer of statuses, history, outbox and job changes.
//! - `plan`: what a poll's completion changes, decided in plain Rust.
//! - [`memory`]: [`memory::MemStore`], the same contract in process memory, for simulations.
//! - [`manual`]: settling a payment by hand (the API's and the CLI's one `resolve`).
//! - [`stats`]: per-provider statistics over a window.
//! - [`model`]: the values that cross the store boundary.
//! - `query`, `backend`: the driver interface (statements as data, `Conn`, `Backend`).
//! - [`postgres`] (with `pg_arrays`), [`sqlite`]: the backends, each with
//!   `register_in` for transactional enqueue inside the caller's own transaction.
//!
//! The conformance suite and per-test databases live in `finality-testkit`
//! (a dev-dependency), so no test code ships in this crate.
#![forbid(unsafe_code)]

mod backend;
mod cursors;
mod error;
mod feed;
mod feed_tail;
pub mod gauges;
mod inbox;
pub mod lifecycle;
pub mod manual;
pub mod memory;
pub mod model;
pub mod partitions;
mod payments;
mod pg_arrays;
mod plan;
mod poll_queue;
pub mod postgres;
mod query;
mod rate_buckets;
pub mod reconciliations;
pub mod review;
pub mod sqlite;
pub mod stats;
pub mod sweep;
mod transition;

pub use cursors::{CursorLease, Cursors};
pub use error::{Result, StoreError};
pub use feed::EventFeed;
pub use gauges::{ClusterGauges, Gauges};
pub use inbox::WebhookInbox;
pub use lifecycle::Lifecycle;
pub use model::*;
pub use partitions::Partitions;
pub use payments::PaymentStore;
pub use poll_queue::PollQueue;
pub use rate_buckets::RateBuckets;
pub use reconciliations::Reconciliations;
pub use review::Review;
pub use sweep::Sweep;

use async_trait::async_trait;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// The roles, to bring their methods into scope: `use finality_store::prelude::*`.
pub mod prelude {
    pub use crate::{
        Cursors, EventFeed, Lifecycle, Partitions, PaymentStore, PollQueue, RateBuckets,
        Reconciliations, Review, Store, Sweep, WebhookInbox,
    };
}

/// Everything the engine, server and CLI need from a database: the nine
/// roles, migrations and wake-ups.
#[async_trait]
pub trait Store:
    PaymentStore
    + PollQueue
    + WebhookInbox
    + EventFeed
    + RateBuckets
    + Cursors
    + Review
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

    /// A receiver that changes whenever new work may be due sooner than the
    /// engine thought (a registration, a "poll now"). Only a hint: a lost
    /// wake-up costs latency, never correctness.
    fn subscribe(&self) -> watch::Receiver<u64>;

    /// A receiver that changes whenever webhooks may be waiting to be
    /// applied: stored here, or a registration, "poll now" or another
    /// node's announcement (a registration may adopt orphans); not a
    /// status change. What the inbox processor waits on, so a status
    /// change it committed itself does not wake it again.
    fn subscribe_inbox(&self) -> watch::Receiver<u64>;

    /// A receiver that changes whenever the event feed grew (positions
    /// given, here or, on PostgreSQL, on another node): what pushers and
    /// long-polling feed readers wait on. A hint, like [`Store::subscribe`].
    fn subscribe_feed(&self) -> watch::Receiver<u64>;

    /// A receiver that changes whenever this process committed a status
    /// change: what the feed sequencer waits on (not on every webhook
    /// stored or payment registered).
    fn subscribe_transitions(&self) -> watch::Receiver<u64>;

    /// The highest feed position this process knows was given (by its own
    /// sequencer, or announced by another node's), if it knows: a reader
    /// whose cursor is there has nothing to read until the feed grows, so
    /// it waits without asking the database. `None`: ask.
    fn feed_head(&self) -> Option<i64> {
        None
    }

    /// How many write transactions are worth running at once. SQLite has
    /// one writer (a second waits on the file lock, sleeping), PostgreSQL
    /// commits concurrent transactions together.
    fn parallel_writers(&self) -> usize {
        1
    }
}

#[async_trait]
impl<B: backend::Backend> Store for B {
    async fn migrate(&self) -> Result<()> {
        self.run_migrations().await?;
        // A new database's daily tables are partitioned at once (they are
        // empty), with today's partition; the retention role keeps days
        // ahead and converts a populated table online.
        let now = finality_core::Clock::now(&finality_core::SystemClock);
        self.partitions_ahead(now, 1).await?;
        Ok(())
    }
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.start_listener();
        self.wakeups().subscribe()
    }
    fn subscribe_feed(&self) -> watch::Receiver<u64> {
        self.start_listener();
        self.wakeups().subscribe_feed()
    }
    fn subscribe_inbox(&self) -> watch::Receiver<u64> {
        self.start_listener();
        self.wakeups().subscribe_inbox()
    }
    fn subscribe_transitions(&self) -> watch::Receiver<u64> {
        self.wakeups().subscribe_transitions()
    }
    fn feed_head(&self) -> Option<i64> {
        self.wakeups().feed_head()
    }
    fn parallel_writers(&self) -> usize {
        B::WRITERS
    }
}

/// The wake-up signals shared by a store and the tasks that use it: work
/// (registrations, polls, status changes: the poll engine), the inbox
/// (webhooks stored, registrations: the inbox processor), transitions (to
/// sequence) and the feed (events with positions, for pushers and feed
/// readers), with the feed's head and newest events. Separate, so a burst
/// of webhooks does not wake every feed reader, nor an applied webhook the
/// processor that applied it.
#[derive(Debug, Clone)]
pub struct Wakeups {
    work: Arc<watch::Sender<u64>>,
    /// Webhooks to apply: [`Wakeups::bump`] and webhooks stored, not
    /// status changes.
    inbox: Arc<watch::Sender<u64>>,
    transitions: Arc<watch::Sender<u64>>,
    feed: Arc<watch::Sender<u64>>,
    /// See [`Store::feed_head`]; [`UNKNOWN_HEAD`] until a position is
    /// learned, and again whenever one may have been missed.
    feed_head: Arc<AtomicI64>,
    /// How many times the head was forgotten: a sequencer round that began
    /// before the last time does not make the head known again (another
    /// node's positions may have been missed meanwhile).
    feed_epoch: Arc<std::sync::atomic::AtomicU64>,
    /// The newest events this process numbered (its sequencer and its
    /// inbox processor).
    feed_tail: Arc<feed_tail::FeedTail>,
    /// This store handle's name in feed announcements, so its own are
    /// told from other nodes'.
    origin: Arc<str>,
    /// Webhooks stored by this process (raised with the `inbox` signal
    /// by [`Wakeups::bump_inbox`] only), and its value when the inbox
    /// processor last looked.
    inbox_stored: Arc<std::sync::atomic::AtomicU64>,
    inbox_seen: Arc<std::sync::atomic::AtomicU64>,
}

/// No feed position known: readers ask the database.
const UNKNOWN_HEAD: i64 = -1;

impl Wakeups {
    pub(crate) fn new() -> Self {
        Wakeups {
            work: Arc::new(watch::channel(0).0),
            inbox: Arc::new(watch::channel(0).0),
            transitions: Arc::new(watch::channel(0).0),
            feed: Arc::new(watch::channel(0).0),
            feed_head: Arc::new(AtomicI64::new(UNKNOWN_HEAD)),
            feed_epoch: Arc::default(),
            feed_tail: Arc::default(),
            origin: uuid::Uuid::new_v4().simple().to_string().into(),
            inbox_stored: Arc::default(),
            inbox_seen: Arc::default(),
        }
    }
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }
    pub(crate) fn feed_tail(&self) -> &feed_tail::FeedTail {
        &self.feed_tail
    }
    /// The feed reached position `head` (given here, or announced by
    /// another node): wakes readers only if that is news, so a node's own
    /// announcement, heard back, costs nobody a read.
    pub fn feed_grew_to(&self, head: i64) {
        if self.feed_head.fetch_max(head, Ordering::AcqRel) < head {
            self.bump_feed();
        }
    }
    /// The feed may have grown by an unknown amount (an announcement
    /// without a position, or a lost connection): forget the head and
    /// wake every reader.
    pub fn feed_grew_unknown(&self) {
        self.feed_epoch.fetch_add(1, Ordering::AcqRel);
        self.feed_head.store(UNKNOWN_HEAD, Ordering::Release);
        self.bump_feed();
    }
    /// Taken before a sequencer round, for [`Wakeups::feed_grew_to_since`].
    pub(crate) fn feed_epoch(&self) -> u64 {
        self.feed_epoch.load(Ordering::Acquire)
    }
    /// This process's sequencer reached `head` in a round that began at
    /// `epoch`: as [`Wakeups::feed_grew_to`], unless the head was forgotten
    /// meanwhile (a lost `LISTEN` connection may have hidden another node's
    /// positions past `head`); then readers are woken and the head stays
    /// unknown, so they ask the database rather than wait at a stale head.
    pub(crate) fn feed_grew_to_since(&self, head: i64, epoch: u64) {
        if self.feed_epoch() == epoch {
            self.feed_grew_to(head);
            if self.feed_epoch() == epoch {
                return;
            }
            self.feed_head.store(UNKNOWN_HEAD, Ordering::Release);
        }
        self.bump_feed();
    }
    fn feed_head(&self) -> Option<i64> {
        let h = self.feed_head.load(Ordering::Acquire);
        (h != UNKNOWN_HEAD).then_some(h)
    }
    /// Something may be due sooner (a registration, a "poll now", another
    /// node's announcement): wakes the poll engine and the inbox processor.
    pub fn bump(&self) {
        self.work.send_modify(|v| *v = v.wrapping_add(1));
        self.inbox.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// Webhooks were stored: work for the inbox processor only.
    pub fn bump_inbox(&self) {
        self.inbox_stored.fetch_add(1, Ordering::AcqRel);
        self.inbox.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// A status change committed here: work for the sequencer, and a
    /// wake-up for the poll producer (a poll may have moved), not for the
    /// inbox processor.
    pub fn bump_transitions(&self) {
        self.work.send_modify(|v| *v = v.wrapping_add(1));
        self.transitions.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// A status change committed here with its feed positions already
    /// given (the inbox processor's transaction): a wake-up for the poll
    /// producer, none for the sequencer, which would find nothing.
    pub(crate) fn bump_work(&self) {
        self.work.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// Webhooks were stored by this process since the last call: then the
    /// inbox processor takes rows at once instead of first asking whether
    /// any are due. (Its other wake-ups, a registration or another node's
    /// announcement, mostly find nothing: for those the read comes first.)
    pub(crate) fn webhooks_stored_since_last_look(&self) -> bool {
        let now = self.inbox_stored.load(Ordering::Acquire);
        self.inbox_seen.swap(now, Ordering::AcqRel) != now
    }
    pub(crate) fn subscribe_inbox(&self) -> watch::Receiver<u64> {
        self.inbox.subscribe()
    }
    pub(crate) fn subscribe_transitions(&self) -> watch::Receiver<u64> {
        self.transitions.subscribe()
    }
    pub fn bump_feed(&self) {
        self.feed.send_modify(|v| *v = v.wrapping_add(1));
    }
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.work.subscribe()
    }
    pub(crate) fn subscribe_feed(&self) -> watch::Receiver<u64> {
        self.feed.subscribe()
    }
    /// A handle for a listener task that must end with the store.
    pub(crate) fn downgrade(&self) -> WeakWakeups {
        WeakWakeups {
            work: Arc::downgrade(&self.work),
            inbox: Arc::downgrade(&self.inbox),
            feed: Arc::downgrade(&self.feed),
            transitions: Arc::downgrade(&self.transitions),
            feed_head: Arc::downgrade(&self.feed_head),
            feed_epoch: Arc::downgrade(&self.feed_epoch),
            feed_tail: Arc::downgrade(&self.feed_tail),
            origin: self.origin.clone(),
            inbox_stored: Arc::downgrade(&self.inbox_stored),
            inbox_seen: Arc::downgrade(&self.inbox_seen),
        }
    }
}

/// [`Wakeups`] that do not keep the store alive.
pub(crate) struct WeakWakeups {
    work: std::sync::Weak<watch::Sender<u64>>,
    inbox: std::sync::Weak<watch::Sender<u64>>,
    transitions: std::sync::Weak<watch::Sender<u64>>,
    feed: std::sync::Weak<watch::Sender<u64>>,
    feed_head: std::sync::Weak<AtomicI64>,
    feed_epoch: std::sync::Weak<std::sync::atomic::AtomicU64>,
    feed_tail: std::sync::Weak<feed_tail::FeedTail>,
    origin: Arc<str>,
    inbox_stored: std::sync::Weak<std::sync::atomic::AtomicU64>,
    inbox_seen: std::sync::Weak<std::sync::atomic::AtomicU64>,
}

impl WeakWakeups {
    /// The wake-ups again, while the store lives.
    pub(crate) fn upgrade(&self) -> Option<Wakeups> {
        Some(Wakeups {
            work: self.work.upgrade()?,
            inbox: self.inbox.upgrade()?,
            transitions: self.transitions.upgrade()?,
            feed: self.feed.upgrade()?,
            feed_head: self.feed_head.upgrade()?,
            feed_epoch: self.feed_epoch.upgrade()?,
            feed_tail: self.feed_tail.upgrade()?,
            origin: self.origin.clone(),
            inbox_stored: self.inbox_stored.upgrade()?,
            inbox_seen: self.inbox_seen.upgrade()?,
        })
    }
}

/// Open the store a URL names: `sqlite://…` or `postgres://…`, and migrate it.
pub async fn open(url: &str, max_connections: u32) -> Result<Arc<dyn Store>> {
    open_with(url, max_connections, postgres::DEFAULT_STATEMENT_TIMEOUT).await
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
        Arc::new(sqlite::SqliteStore::connect(url, max_connections).await?)
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Arc::new(postgres::PgStore::connect_timed(url, max_connections, statement_timeout).await?)
    } else {
        // Only the scheme is echoed: the rest may hold a password.
        let scheme = url.split(':').next().unwrap_or_default();
        return Err(StoreError::Url {
            url: format!("{scheme}:…"),
            detail: "expected sqlite://PATH or postgres://…".into(),
        });
    };
    store.migrate().await?;
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::Wakeups;

    /// A sequencer round that began before the head was forgotten (a lost
    /// `LISTEN` connection) does not make a stale head known again.
    #[test]
    fn a_round_older_than_a_lost_connection_leaves_the_head_unknown() {
        let w = Wakeups::new();
        let mut feed = w.subscribe_feed();
        let epoch = w.feed_epoch();
        w.feed_grew_to_since(15, epoch);
        assert_eq!(w.feed_head(), Some(15));
        assert!(feed.has_changed().unwrap_or(false));
        feed.borrow_and_update();

        let epoch = w.feed_epoch();
        w.feed_grew_unknown();
        feed.borrow_and_update();
        w.feed_grew_to_since(20, epoch);
        assert_eq!(w.feed_head(), None, "readers ask the database");
        assert!(feed.has_changed().unwrap_or(false), "and are woken");

        let epoch = w.feed_epoch();
        w.feed_grew_to_since(21, epoch);
        assert_eq!(w.feed_head(), Some(21), "a round begun since counts");
    }
}
