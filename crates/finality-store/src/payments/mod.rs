//! Payments: registration (with its first poll), every status change that
//! is not a poll's (`apply`: webhooks, the sweep, people), and reads.

pub(crate) mod by_ref;
pub(crate) mod decide;
mod memory;
pub(crate) mod sql;

use crate::error::Result;
use crate::model::*;
use finality_core::{Status, Timestamp};

/// Payments and their status changes outside polls.
#[async_trait::async_trait]
pub trait PaymentStore: Send + Sync {
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

    async fn get(&self, payment_id: &str) -> Result<Option<PaymentView>>;
    async fn list(&self, filter: &ListFilter) -> Result<Vec<Payment>>;
    async fn attempts(&self, payment_id: &str) -> Result<Vec<AttemptRecord>>;

    /// How many payments are in each status.
    async fn status_counts(&self) -> Result<Vec<(Status, i64)>>;

    /// The payment of `scope` that tracks a provider reference, or failing
    /// that has this merchant reference, if any. Only within the scope:
    /// another account's payment with the same reference is not found.
    async fn find_by_ref(
        &self,
        scope: &finality_core::Scope,
        provider_ref: &str,
    ) -> Result<Option<String>>;

    /// When `provider`'s newest payment was registered: how often its event
    /// list is worth reading falls with that age (a payment registered a
    /// minute ago may settle any second; one registered a day ago rarely).
    async fn newest_registration(&self, provider: &str) -> Result<Option<Timestamp>>;

    /// Every payment registered at or after `since`, with its provider calls
    /// (for [`crate::stats::compute`]).
    async fn stats_rows(&self, since: Timestamp) -> Result<Vec<crate::stats::StatsRow>>;

    /// Failed provider calls of the payments registered at or after
    /// `since`: `(provider, error class, count)`.
    async fn error_counts(&self, since: Timestamp) -> Result<Vec<crate::stats::ErrorCount>>;
}
