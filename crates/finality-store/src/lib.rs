//! The store: the database is the source of truth for every payment, poll job,
//! transition and event.
//!
//! One [`Store`] trait, two adapters over sqlx: SQLite (the embedded default,
//! WAL) and PostgreSQL (several nodes). Both are generated from one body of
//! SQL and Rust ([`ops`]), so the dialect differences (row locks, the claim
//! statement, wake-ups) are the only code that differs, and the same
//! [`conformance`] suite holds both to the same contract.
//!
//! # Layout
//! - [`manual`]: settling a payment by hand (the API's and the CLI's one `resolve`).
//! - [`model`]: the values that cross the store boundary.
//! - `ops`: the shared implementation (register, apply, claim, complete…).
//! - [`postgres`], [`sqlite`]: the adapters, each with `register_in` for
//!   transactional enqueue inside the caller's own transaction.
//!
//! The conformance suite and per-test databases live in `finality-testkit`
//! (a dev-dependency), so no test code ships in this crate.
#![forbid(unsafe_code)]

mod error;
pub mod manual;
pub mod model;
#[macro_use]
mod ops;
mod pg_batch;
mod plan;
pub mod postgres;
pub mod sqlite;

pub use error::{Result, StoreError};
pub use model::*;

use async_trait::async_trait;
use finality_core::{Status, Timestamp};
use std::sync::Arc;
use tokio::sync::watch;

/// Everything the engine, server and CLI need from a database.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Run the embedded migrations (idempotent).
    async fn migrate(&self) -> Result<()>;

    /// Register a payment as `pending` with its first poll at `first_poll_at`.
    /// Idempotent on the id: see [`Registered`].
    async fn register(
        &self,
        p: &NewPayment,
        now: Timestamp,
        first_poll_at: Timestamp,
    ) -> Result<Registered>;

    /// The one path for every status change from a webhook, sweep or human:
    /// lock the payment, check the transition table, write status, history
    /// and outbox, and drop or park the poll job, in one transaction.
    async fn apply(&self, report: &Report, now: Timestamp) -> Result<ApplyOutcome>;

    /// Lease up to `limit` due jobs to one worker, in one short statement.
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>>;

    /// Finish a claimed poll, fenced by its lock token: record the attempt,
    /// apply what was observed, and reschedule, give up or drop the job.
    async fn complete(&self, c: &Completion) -> Result<CompleteOutcome>;

    /// Several completions in one transaction (one commit), in payment-id
    /// order so that concurrent batches lock rows in the same order. All or
    /// nothing: on an error none is written and the caller may retry them
    /// one by one.
    async fn complete_batch(&self, cs: &[Completion]) -> Result<Vec<CompleteOutcome>>;

    /// Make a payment's next poll due now (unparking a reviewed one).
    async fn poll_now(&self, payment_id: &str, now: Timestamp) -> Result<PollNow>;

    async fn get(&self, payment_id: &str) -> Result<Option<PaymentView>>;
    async fn list(&self, filter: &ListFilter) -> Result<Vec<Payment>>;
    async fn attempts(&self, payment_id: &str) -> Result<Vec<AttemptRecord>>;
    async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<OutboxEvent>>;

    /// The earliest `next_poll_at` of any unparked job (including leases,
    /// which fall due again when they expire); `None` when nothing is left.
    async fn next_due_at(&self) -> Result<Option<Timestamp>>;

    /// How many payments are in each status.
    async fn status_counts(&self) -> Result<Vec<(Status, i64)>>;

    /// Put verified webhook events into the inbox, each in one transaction
    /// with the others of its request; `true` for each event that was new,
    /// `false` for a duplicate (decided by the unique constraint).
    async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>>;

    /// Lease up to `limit` received or failed events due for processing.
    async fn inbox_claim(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<InboxEvent>>;

    /// Apply one claimed event through `apply` (source `webhook`) and record
    /// the result on the inbox row, in one transaction.
    async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome>;

    /// Record a processing failure; the event is retried at `retry_at`.
    async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()>;

    /// Send orphaned events whose payment now exists back to processing (a
    /// backstop for the hand-over done at registration).
    async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64>;

    /// Record the provider's id an adapter found for a payment registered
    /// by merchant reference alone, fenced by the poll's lock token, so
    /// later polls (and webhooks) use it.
    async fn record_provider_ref(
        &self,
        payment_id: &str,
        lock_token: i64,
        provider_ref: &str,
    ) -> Result<RefRecorded>;

    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>>;
    async fn inbox_next_due(&self) -> Result<Option<Timestamp>>;
    async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>>;

    /// The payment that tracks a provider reference, or failing that has
    /// this merchant reference, if any.
    async fn find_by_ref(&self, provider: &str, provider_ref: &str) -> Result<Option<String>>;

    /// Give feed positions to committed, unsequenced outbox rows (at most
    /// `limit`), in id order, one sequencer at a time. Returns how many.
    async fn sequence_feed(&self, limit: u32) -> Result<u64>;

    /// Events with a feed position above `cursor`, in feed order. Their
    /// `seq` is the feed position: the next cursor.
    async fn feed_after(&self, cursor: i64, limit: u32) -> Result<Vec<OutboxEvent>>;

    /// A destination's cursor and retry state (created at 0 if new).
    async fn destination(&self, name: &str) -> Result<DestinationState>;

    /// Move a destination's cursor from `from` to `to` (compare-and-set, so
    /// two pushers for one destination never both advance it); clears the
    /// retry state. Returns false if the cursor had moved.
    async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool>;

    /// Record that the head event failed: retry at `next_attempt_at`.
    async fn destination_failed(&self, st: &DestinationState) -> Result<()>;

    async fn record_delivery(&self, a: &DeliveryAttempt) -> Result<()>;
    async fn deliveries(&self, destination: &str, limit: u32) -> Result<Vec<DeliveryAttempt>>;

    /// Delete events at or below feed position `max_seq` that occurred
    /// before `before` (delivered everywhere and past retention).
    async fn prune_events(&self, max_seq: i64, before: Timestamp) -> Result<u64>;

    /// A receiver that changes whenever new work may be due sooner than the
    /// engine thought (a registration, a "poll now"). Only a hint: a lost
    /// wake-up costs latency, never correctness.
    fn subscribe(&self) -> watch::Receiver<u64>;

    /// Take up to `want` tokens from `provider`'s shared bucket, which
    /// refills at `bucket.per_second` and holds at most `bucket.burst`.
    /// Returns how many were granted and the tokens left (fractional), from
    /// which the caller knows when the next one accrues.
    async fn take_tokens(
        &self,
        provider: &str,
        bucket: Bucket,
        want: u32,
        now: Timestamp,
    ) -> Result<(u32, f64)>;

    /// How many write transactions are worth running at once. SQLite has
    /// one writer (a second waits on the file lock, sleeping), PostgreSQL
    /// commits concurrent transactions together.
    fn parallel_writers(&self) -> usize {
        1
    }
}

/// The wake-up signal shared by a store and the engines that use it.
#[derive(Debug, Clone)]
pub(crate) struct Wakeups(Arc<watch::Sender<u64>>);

impl Wakeups {
    pub(crate) fn new() -> Self {
        Wakeups(Arc::new(watch::channel(0).0))
    }
    pub(crate) fn bump(&self) {
        self.0.send_modify(|v| *v = v.wrapping_add(1));
    }
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
    pub(crate) fn downgrade(&self) -> std::sync::Weak<watch::Sender<u64>> {
        Arc::downgrade(&self.0)
    }
}

/// Open the store a URL names: `sqlite://…` or `postgres://…`, and migrate it.
pub async fn open(url: &str, max_connections: u32) -> Result<Arc<dyn Store>> {
    let store: Arc<dyn Store> = if url.starts_with("sqlite:") {
        Arc::new(sqlite::SqliteStore::connect(url, max_connections).await?)
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Arc::new(postgres::PgStore::connect(url, max_connections).await?)
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
