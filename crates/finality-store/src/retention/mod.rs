//! Data lifecycle: the reads and deletes retention needs, on every backend.
//! What to keep and for how long is decided by the caller
//! (`finality_engine::lifecycle`), which writes each row to an archive file
//! before asking for it to be deleted here; this module only makes sure a
//! delete never takes a row that stopped qualifying in between (a payment
//! reopened, a webhook sent back to processing).
//!
//! Rows cross the boundary as JSON objects, column by column ([`TableSpec`]),
//! so the same archive file restores into either backend.

mod archive;
mod convert;
pub(crate) mod days;
mod delete;
pub mod partitions;
pub mod rows;
pub use rows::*;
mod memory;
mod sql;

use crate::error::Result;
use finality_core::Timestamp;
use serde_json::Value;

/// Retention's reads and deletes.
#[async_trait::async_trait]
pub trait Lifecycle: Send + Sync {
    /// Rows of `kind` qualifying for it with id above `after`, in id order,
    /// at most `limit` (their time is not filtered: the caller stops at the
    /// first row inside retention).
    async fn life_page(&self, kind: RowKind, after: i64, limit: u32) -> Result<Vec<LifeRow>>;

    /// Delete rows of `kind` among `rows` (id, and for webhooks the state
    /// as read) that still qualify, are older than `before` and, for
    /// webhook rows, are still in the state read (a row adopted and
    /// applied since is not the row in the file); how many went.
    /// (`WebhookBodies`: drop bodies and headers instead, at `now`, of rows
    /// not being processed.)
    async fn life_remove(
        &self,
        kind: RowKind,
        rows: &[(i64, Option<String>)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<u64>;

    /// Final payments archivable before `before`, by (finalized_at, id)
    /// after `after`, with their history, provider calls and audit rows.
    async fn archivable_payments(
        &self,
        before: Timestamp,
        after: Option<(i64, String)>,
        limit: u32,
    ) -> Result<Vec<PaymentBundle>>;

    /// Delete each payment (as read, with the archive file holding it)
    /// that is unchanged and still archivable, with its history, provider
    /// calls and audit rows, leaving a [`Tombstone`]; the ids deleted. A
    /// payment whose row or any of whose rows changed since the read (a
    /// reversal, a new audit row) stays: only what is in the file goes.
    async fn archive_payments(
        &self,
        payments: &[(&PaymentBundle, String)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<Vec<String>>;

    /// The tombstone of an archived payment.
    async fn archived_payment(&self, id: &str) -> Result<Option<Tombstone>>;

    /// The tombstone of the archived payment of `scope` a provider
    /// reference named.
    async fn archived_by_ref(
        &self,
        scope: &finality_core::Scope,
        provider_ref: &str,
    ) -> Result<Option<Tombstone>>;

    /// Insert archived rows back (rows already present are kept as they
    /// are); a payment restored loses its tombstone. How many were new.
    async fn restore_rows(&self, table: &TableSpec, rows: &[Value]) -> Result<u64>;

    /// Keep a restored `day` of `kind` from retention until `until`.
    async fn hold_day(&self, kind: &str, day: &str, until: Timestamp) -> Result<()>;

    /// The days of `kind` held at `now`.
    async fn held_days(&self, kind: &str, now: Timestamp) -> Result<Vec<String>>;

    /// Give freed space back to the file system where the backend keeps
    /// it (SQLite's incremental vacuum); PostgreSQL reuses it in place.
    async fn reclaim_space(&self) -> Result<()>;

    /// Where the scan of `kind` has reached (0: the start).
    async fn life_cursor(&self, kind: RowKind) -> Result<i64>;

    /// Move the scan of `kind` from `from` to `to`, unless it was moved
    /// meanwhile (a restore rewound it): whether it moved.
    async fn life_cursor_move(&self, kind: RowKind, from: i64, to: i64) -> Result<bool>;

    /// Move the scan of `kind` back to `to` if it is past it (rows under
    /// it were restored and need the scan again).
    async fn life_cursor_rewind(&self, kind: RowKind, to: i64) -> Result<()>;
}
