//! The one place the backends truly differ in writing, and the columns it
//! writes: [`Writes`] is built by `crate::transition` from decided changes
//! and sent by a [`Writer`] as arrays (PostgreSQL), row by row (SQLite) or
//! into maps (the in-memory store).

use crate::error::Result;
use crate::model::NewAttempt;
use finality_core::{Kind, Status};

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

/// The columns a set of changes writes, one vector per column, so a backend
/// can send each table's rows as arrays or one at a time.
#[derive(Debug, Default)]
pub struct Writes {
    pub pay_id: Vec<String>,
    pub pay_status: Vec<String>,
    pub pay_source: Vec<String>,
    pub pay_at: Vec<i64>,
    pub pay_fin: Vec<Option<i64>>,
    /// History and outbox rows (one per step, same order).
    pub step_id: Vec<String>,
    pub step_from: Vec<String>,
    pub step_to: Vec<String>,
    pub step_source: Vec<String>,
    pub step_event: Vec<Option<String>>,
    pub step_reason: Vec<Option<String>>,
    pub step_actor: Vec<Option<String>>,
    pub step_observed: Vec<i64>,
    pub step_at: Vec<i64>,
    pub out_event: Vec<String>,
    pub out_type: Vec<String>,
    /// Jobs of payments that became final.
    pub delete: Vec<String>,
    /// Jobs rescheduled (`park` false: the error is replaced) or parked
    /// (`next` none, `park` true: a reason replaces the last error, none
    /// keeps it); `inc` attempts are added, `einc` errors added or, with
    /// `reset`, set.
    pub job_id: Vec<String>,
    pub job_next: Vec<Option<i64>>,
    pub job_inc: Vec<i32>,
    pub job_err: Vec<Option<String>>,
    pub job_park: Vec<bool>,
    pub job_einc: Vec<i32>,
    pub job_reset: Vec<bool>,
}
