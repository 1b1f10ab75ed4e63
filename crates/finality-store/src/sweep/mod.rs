//! What the reconciliation sweep reads and repairs: payments in pages by id
//! (with whether each has a poll job and the provider's last answer on
//! record), poll jobs added or dropped where a payment's status says they
//! should (not) exist, inbox rows that stopped being processed, and the
//! record of each sweep run. What counts as a finding is decided in plain
//! Rust by the sweeper (`finality-engine`); changes of status go through
//! the one `apply` path like every other.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
use finality_core::{Kind, Status, Timestamp};
use std::collections::BTreeMap;

/// One payment as the sweep sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    pub id: String,
    pub provider: String,
    pub kind: Kind,
    pub status: Status,
    pub created_at: Timestamp,
    /// It has a poll job (parked or not).
    pub has_job: bool,
    /// The outcome of its newest provider call (`succeeded`, `pending`,
    /// `error`, …), if any.
    pub last_outcome: Option<String>,
}

/// One run of the sweep, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRun {
    pub id: i64,
    pub holder: String,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    /// Payments read in this run.
    pub scanned: i64,
    /// Whether the run reached the last payment (a pass ended).
    pub pass_complete: bool,
    /// Findings by kind (`job_missing`, `job_of_final_payment`, …).
    pub findings: BTreeMap<String, i64>,
    /// Of those, how many were repaired.
    pub repaired: i64,
}

/// The sweep's reads and repairs.
#[async_trait::async_trait]
pub trait Sweep: Send + Sync {
    /// Up to `limit` payments with an id after `after`, in id order.
    async fn sweep_page(&self, after: &str, limit: u32) -> Result<Vec<SweepRow>>;
    /// Give an open payment without one a poll job due at `next_poll_at`
    /// (`None`: parked, for a payment in review). False when it is final
    /// or has a job by now.
    async fn sweep_add_job(&self, id: &str, next_poll_at: Option<Timestamp>) -> Result<bool>;
    /// Delete the poll job of a payment that is final. False when it is
    /// not final (any more) or has no job.
    async fn sweep_drop_job(&self, id: &str) -> Result<bool>;
    /// Inbox rows waiting to be processed (received or failed) that were
    /// due before `due_before`: the processor should have taken them long
    /// ago. Made due `now` again; how many.
    async fn sweep_kick_inbox(&self, due_before: Timestamp, now: Timestamp) -> Result<u64>;
    /// Orphaned inbox rows received in `[from, to)`.
    async fn sweep_count_orphans(&self, from: Timestamp, to: Timestamp) -> Result<i64>;
    async fn sweep_record(&self, run: &SweepRun) -> Result<()>;
    /// The newest `limit` runs, newest first.
    async fn sweep_runs(&self, limit: u32) -> Result<Vec<SweepRun>>;
}
