//! Settlement-report reconciliation runs: one per imported report (known by
//! provider and SHA-256, so a second import of the same file changes
//! nothing), with its counts by outcome and every line that did not simply
//! match. Deciding each line is the engine's (`finality-engine`'s
//! `reconcile`); changes of status go through `apply`.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
use finality_core::{Scope, Status, Timestamp};
use std::collections::BTreeMap;

/// A recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconRun {
    pub id: i64,
    pub provider: String,
    pub file_name: String,
    pub sha256: String,
    pub started_at: Timestamp,
    /// `None` while running, or when the run died before the end.
    pub finished_at: Option<Timestamp>,
    pub lines: i64,
    /// Lines by outcome (`matched`, `applied`, `reversed`, …).
    pub counts: BTreeMap<String, i64>,
}

/// A line that did not simply match, and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconLine {
    /// The line's number in the file; `None` for a payment the report
    /// should have listed and did not (`missing_from_report`).
    pub line: Option<i64>,
    pub kind: String,
    pub provider_ref: Option<String>,
    pub amount: i64,
    pub currency: String,
    pub outcome: String,
    pub reason: String,
    pub payment_id: Option<String>,
}

/// What a report line is checked against: a payment found by the line's
/// reference, with the facts a line can contradict.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    pub id: String,
    pub provider_ref: Option<String>,
    pub merchant_ref: Option<String>,
    pub status: Status,
    pub amount: i64,
    pub currency: String,
    pub finalized_at: Option<Timestamp>,
}

/// What starting an import found.
#[derive(Debug, Clone, PartialEq)]
pub enum ReconStart {
    /// A new run (or an unfinished one, to be done again).
    Started(i64),
    /// This file was imported and finished before.
    AlreadyDone(ReconRun),
    /// Another import of it is running (alive since the cutoff).
    Busy(ReconRun),
}

/// A report file a provider announced (Adyen's `REPORT_AVAILABLE`), kept
/// from the verified webhook until it is downloaded and imported.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnouncedFile {
    pub provider: String,
    /// The account it was announced for (`None`: the provider's own):
    /// its lines are that account's, and its batch numbers count apart.
    pub account: Option<String>,
    /// The provider's name for the file (Adyen's `pspReference`:
    /// `settlement_detail_report_batch_12.csv`).
    pub name: String,
    /// Where the provider said to download it from.
    pub url: String,
    pub announced_at: Timestamp,
    /// Tries that failed so far.
    pub attempts: i64,
    /// When it is (next) due.
    pub next_at: Timestamp,
    /// `None` while still to be fetched; then `imported` or `refused`.
    pub outcome: Option<String>,
    /// What the last try said.
    pub detail: Option<String>,
    pub run_id: Option<i64>,
    pub done_at: Option<Timestamp>,
}

/// How a try at an announced file ended.
#[derive(Debug, Clone, PartialEq)]
pub enum FileTry {
    /// Done for good: `outcome` (`imported`, `refused`), its run if any.
    Done {
        outcome: String,
        detail: String,
        run_id: Option<i64>,
    },
    /// Failed; tried again at `retry_at`.
    Retry { detail: String, retry_at: Timestamp },
}

#[async_trait::async_trait]
pub trait Reconciliations: Send + Sync {
    /// Keep `scope`'s announcement of file `name` at `url`, due now;
    /// `false` when it was announced before (a redelivered webhook), which
    /// changes nothing. Two accounts' files of one name are two files.
    async fn file_announce(
        &self,
        scope: &Scope,
        name: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<bool>;
    /// `provider`'s announced files still to be fetched and due at `now`,
    /// oldest announcement first.
    async fn files_due(
        &self,
        provider: &str,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<AnnouncedFile>>;
    /// Record how a try at `scope`'s file `name` ended.
    async fn file_tried(
        &self,
        scope: &Scope,
        name: &str,
        how: &FileTry,
        now: Timestamp,
    ) -> Result<()>;
    /// `provider`'s announced files, newest announcement first (the
    /// console; the oldest pending one for the overdue gauge).
    async fn files_recent(&self, provider: &str, limit: u32) -> Result<Vec<AnnouncedFile>>;

    /// Start (or restart) the import of a report known by `key` (its
    /// SHA-256, and the period it is checked against). An unfinished run
    /// alive at or after `alive_since` is [`ReconStart::Busy`]; one silent
    /// since before died, and is done again.
    async fn recon_start(
        &self,
        provider: &str,
        file_name: &str,
        key: &str,
        now: Timestamp,
        alive_since: Timestamp,
    ) -> Result<ReconStart>;
    /// An import shows it is alive.
    async fn recon_alive(&self, run_id: i64, now: Timestamp) -> Result<()>;
    async fn recon_add_lines(&self, run_id: i64, lines: &[ReconLine]) -> Result<()>;
    async fn recon_finish(
        &self,
        run_id: i64,
        lines: i64,
        counts: &BTreeMap<String, i64>,
        now: Timestamp,
    ) -> Result<()>;
    /// The payments of `scope` whose provider reference or merchant
    /// reference is one of `refs`: one query for a page of report lines
    /// instead of two per line. Another account's payments with those
    /// references are not found.
    async fn recon_lookup(&self, scope: &Scope, refs: &[&str]) -> Result<Vec<Ledger>>;
    /// Note payments as listed in run `run_id`'s report (kept in the
    /// database, not in memory: a report of millions of lines).
    async fn recon_seen(&self, run_id: i64, payment_ids: &[&str]) -> Result<()>;
    /// A page (ids after `after`, in id order) of `scope`'s payments
    /// that became final as succeeded (and may since have been reversed)
    /// in `[from, until)` and that run `run_id`'s report did not list (nor
    /// an earlier report that made it final: its `finalized_at` is that
    /// import's time, not when the provider settled it).
    async fn recon_absent(
        &self,
        run_id: i64,
        scope: &Scope,
        period: (Timestamp, Timestamp),
        after: &str,
        limit: u32,
    ) -> Result<Vec<Ledger>>;
    /// Forget what run `run_id` noted as listed.
    async fn recon_forget_seen(&self, run_id: i64) -> Result<()>;
    /// Newest first.
    async fn recon_runs(&self, limit: u32) -> Result<Vec<ReconRun>>;
    async fn recon_run(&self, id: i64) -> Result<Option<ReconRun>>;
    async fn recon_lines(&self, run_id: i64, limit: u32) -> Result<Vec<ReconLine>>;
}
